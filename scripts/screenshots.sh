#!/usr/bin/env bash
# Make the screenshots of the README and docs (docs/img) from the lab demo's data: run the demo
# (`bin/lab demo -exit`) into a database of its own, then photograph its views in Chromium
# (internal/ui TestScreenshots), which also records the digest of the UI's sources they show in
# docs/img/screenshots.json — `make test` fails when a view changes and they were not made again.
#
#   scripts/screenshots.sh          # make screenshots; about 4 minutes once bin/lab is built
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
GO=${GO:-go}
admin=${SCHEDLENS_TEST_DATABASE_URL:-postgres://root@127.0.0.1:5432/test?sslmode=disable}
db=${SCREENSHOTS_DATABASE_URL:-postgres://root@127.0.0.1:5432/schedlens_screenshots?sslmode=disable}
say() { printf '[screenshots] %s\n' "$*"; }

GO=$GO scripts/build-lab.sh
name=$(sed -E 's#.*/([^/?]+)(\?.*)?$#\1#' <<<"$db")
say "a fresh database $name"
psql -q "$admin" -c "DROP DATABASE IF EXISTS \"$name\"" >/dev/null
mkdir -p build
log=build/screenshots-demo.log # kept: the README quotes the demo's output
say "running the lab demo (bin/lab demo -exit), output in $log"
if ! bin/lab demo -exit -database-url "$db" -http-addr 127.0.0.1:0 >"$log" 2>"$log.stderr"; then
	say "the demo failed:"
	tail -n 30 "$log" "$log.stderr"
	exit 1
fi
grep -E '^(schedlens:|experiment|workload:|what schedlens found)' "$log" || true
ns=$(sed -nE 's/^schedlens: collector watching namespace ([^ ,]+).*/\1/p' "$log" | head -n1)
[ -n "$ns" ] || { say "no namespace in the demo's output"; exit 1; }
prod=$(sed -nE 's/^workload: Deployment ([^/ ]+)\/.*/\1/p' "$log" | head -n1)
[ -n "$prod" ] || { say "no workload namespace in the demo's output"; exit 1; }
say "photographing namespace $ns and the workload of $prod"
SCHEDLENS_SCREENSHOTS_DATABASE_URL="$db" SCHEDLENS_SCREENSHOTS_NAMESPACE="$ns" SCHEDLENS_SCREENSHOTS_WORKLOAD_NAMESPACE="$prod" \
	$GO test -count=1 -run '^TestScreenshots$' -v ./internal/ui | grep -E '^(---|\s+screenshots_test|ok|FAIL)'
say "done: docs/img ($(ls docs/img | tr '\n' ' '))"
