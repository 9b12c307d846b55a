#!/usr/bin/env bash
# The whole test suite, as `make test` runs it: each make target given (check-tree, test-main,
# test-lab, test-fuzz) in turn, then — whether they passed or not — the tests that did not run
# because this machine lacks what they need (chromium, a Docker engine), by name, with the
# command that installs it.
#
#   scripts/test.sh make check-tree test-main      # what `make test` does with its TEST_STEPS
#
# STRICT=1 (CI=true implies it): such a test fails instead of skipping (testenv.Unavailable reads
# SCHEDLENS_TEST_STRICT). Skips are collected in build/test-skips.log (SCHEDLENS_SKIP_LOG; another
# file with TEST_SKIP_LOG).
set -uo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
make_cmd=$1
shift
strict=${STRICT:-}
if [ -z "$strict" ] && [ "${CI:-}" = true ]; then
	strict=1
fi
skip_log=${TEST_SKIP_LOG:-$repo_root/build/test-skips.log}
mkdir -p "$(dirname "$skip_log")"
rm -f "$skip_log"

status=0
SCHEDLENS_SKIP_LOG="$skip_log" SCHEDLENS_TEST_STRICT="$strict" "$make_cmd" --no-print-directory -C "$repo_root" "$@" || status=$?

if [ -s "$skip_log" ]; then
	n=$(sort -u "$skip_log" | wc -l)
	echo
	echo "make test: $n test(s) did NOT run — this machine lacks what they need:"
	sort -u "$skip_log" | sed 's/^/  /'
	echo "Install it with 'make deps' (chromium, a Docker engine with docker-compose and debootstrap, the"
	echo "stand-in Postgres/NATS images, and PostgreSQL/NATS started: the steps .ci/run takes), then run"
	echo "'make test' again. 'make test STRICT=1' (what CI runs, CI=true) fails instead of skipping."
elif [ "$strict" = 1 ]; then
	echo "make test: STRICT=1, so no test could skip for want of a service, a browser or Docker."
else
	echo "make test: every test ran (none skipped for want of a service, a browser or Docker)."
fi
exit "$status"
