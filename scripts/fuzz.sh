#!/usr/bin/env bash
# Runs every native Go fuzz target of the main module (func FuzzX in a _test.go file), one after
# the other, each for FUZZTIME (default 30s). A crash fails the run: Go writes the input to
# <package>/testdata/fuzz/<FuzzX>/, where it stays as a regression test (plain `go test` runs
# it) once committed with the fix.
#
#   scripts/fuzz.sh                  # every target, FUZZTIME each, coverage-guided (make fuzz)
#   scripts/fuzz.sh FuzzDecode       # the targets named
#   FUZZ_QUICK=1 FUZZTIME=10s FUZZ_BUDGET=170 scripts/fuzz.sh   # CI (make fuzz-ci)
#
# Coverage-guided fuzzing (`go test -fuzz`) rebuilds every dependency with instrumentation: on
# a cold build cache that takes minutes per package. FUZZ_QUICK=1 instead runs the ordinary
# test binary (already built by `go test`) with -test.fuzz: the same mutator and the same
# corpus, without coverage guidance, at no build cost — what CI can afford on every run.
# FUZZ_BUDGET (seconds) stops starting targets once the run has taken that long.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline exceeded" when
# -fuzztime runs out while a worker is busy (golang/go#75804, fixed in Go 1.27): no input
# crashed and none is written. Such a run is reported as a warning, not a failure; a run that
# wrote a new input, or failed in any other way, fails.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
GO=${GO:-go}
fuzztime=${FUZZTIME:-30s}
minimize=${FUZZMINIMIZETIME:-5s}
budget=${FUZZ_BUDGET:-0} # seconds for the whole run; 0: no limit
quick=${FUZZ_QUICK:-0}
only=("$@")
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

# "dir name" for every fuzz target, in a stable order.
mapfile -t targets < <(grep -rEo --include='*_test.go' '^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\)' internal cmd 2>/dev/null |
  sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+).*#\1 \2#' | sort -u)
if [ "${#targets[@]}" -eq 0 ]; then
  echo "[fuzz] no fuzz targets found" >&2
  exit 1
fi

start=$SECONDS
failed=() flaked=() ran=0 skipped=0
for t in "${targets[@]}"; do
  dir=${t% *} name=${t#* }
  if [ "${#only[@]}" -gt 0 ] && [[ ! " ${only[*]} " == *" $name "* ]]; then
    continue
  fi
  if [ "$budget" -gt 0 ] && [ $((SECONDS - start)) -ge "$budget" ]; then
    echo "[fuzz] budget of ${budget}s spent: $name not run"
    skipped=$((skipped + 1))
    continue
  fi
  corpus="$dir/testdata/fuzz/$name"
  before=$(ls "$corpus" 2>/dev/null | sort || true)
  log=$(mktemp)
  t0=$SECONDS
  set +e
  if [ "$quick" = 1 ]; then
    test_bin="$bin/$(echo "$dir" | tr / _).test"
    [ -x "$test_bin" ] || $GO test -c -o "$test_bin" "./$dir" >"$log" 2>&1
    # Run in the package's directory: the corpus and new crashers live in its testdata.
    (cd "$dir" && "$test_bin" -test.run '^$' -test.fuzz "^${name}\$" -test.fuzztime "$fuzztime" \
      -test.fuzzminimizetime "$minimize" -test.fuzzcachedir "$bin/cache/$name") >>"$log" 2>&1
  else
    $GO test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "./$dir" >"$log" 2>&1
  fi
  status=$?
  set -e
  after=$(ls "$corpus" 2>/dev/null | sort || true)
  execs=$(grep -Eo 'execs: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  ran=$((ran + 1))
  if [ "$status" -eq 0 ]; then
    echo "[fuzz] ok    $name ($dir) ${execs:-0} execs in $((SECONDS - t0))s (build and corpus baseline included)"
  elif [ "$before" = "$after" ] && grep -q '^    context deadline exceeded$' "$log" && [ "$(grep -c -- '--- FAIL' "$log")" -eq 1 ]; then
    echo "[fuzz] warn  $name ($dir): Go's fuzz coordinator stopped with 'context deadline exceeded' and wrote no input (golang/go#75804)"
    flaked+=("$name")
  else
    echo "[fuzz] FAIL  $name ($dir):"
    sed 's/^/    /' "$log"
    failed+=("$name")
  fi
  rm -f "$log"
done

echo "[fuzz] ${ran} targets run, ${#failed[@]} failed, ${#flaked[@]} stopped by the coordinator race, ${skipped} skipped, $((SECONDS - start))s"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "[fuzz] failing: ${failed[*]} — the inputs are in <package>/testdata/fuzz/<target>/; fix, and commit them as regression tests" >&2
  exit 1
fi
