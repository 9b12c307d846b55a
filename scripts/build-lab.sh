#!/usr/bin/env bash
# Build bin/lab, saying what it builds while it does: the lab compiles k8s.io/kubernetes (etcd,
# kube-apiserver, kube-scheduler, kube-controller-manager), which takes minutes the first time
# on a small machine and seconds once the build cache holds it. `make lab` (and `make demo`).
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GO=${GO:-go}
cd "$repo_root/lab"
say() { printf '[lab build] %s\n' "$*"; }

start=$SECONDS
# A build that would compile nothing says so at once; otherwise warn that the first takes long.
stale=$($GO list -e -deps -f '{{if .Stale}}x{{end}}' ./cmd/lab 2>/dev/null | grep -c x || true)
if [ "$stale" -gt 50 ]; then
	say "compiling bin/lab: $stale packages to build, most of them k8s.io/kubernetes (the first build takes"
	say "5-15 minutes on 2 cores and about 3 GB of build cache; later builds take seconds)"
else
	say "building bin/lab ($stale packages changed)"
fi
# go build -v names each package as it is compiled: count them, and print a line every 15 s.
$GO build -v -o ../bin/ ./cmd/lab 2>&1 | awk -v total="$stale" -v start="$(date +%s)" '
	/^(#|go: |.*\.go:[0-9]+)/ { print; fflush(); next }
	{ n++; now = systime(); if (now - last >= 15) { printf "[lab build] %d of ~%d packages compiled (%ds)\n", n, total, now - start; fflush(); last = now } }
'
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
	say "failed after $((SECONDS - start)) s"
	exit "$status"
fi
say "bin/lab built in $((SECONDS - start)) s"
