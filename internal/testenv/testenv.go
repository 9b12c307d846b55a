// Package testenv is the tests' environment: what a test cannot do without (a service, a
// browser, a Docker engine) and how its absence is reported, loopback addresses, the project's
// binaries built once, a log buffer two sides share, and the polling loop tests wait with.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Strict reports whether a test that cannot reach what it needs must fail rather than skip: in
// CI (CI=true) and under `make test STRICT=1` (SCHEDLENS_TEST_STRICT=1).
func Strict() bool {
	return os.Getenv("CI") == "true" || os.Getenv("SCHEDLENS_TEST_STRICT") == "1"
}

// SkipLogEnv names the file Unavailable appends each skip to, one line per test, so that `make
// test` can say at its end which tests did not run and why (scripts/skips.sh).
const SkipLogEnv = "SCHEDLENS_SKIP_LOG"

// Unavailable ends a test that cannot reach a service or tool it needs: a failure when Strict,
// otherwise a skip with the reason, also written to the skip log. It never lets the test pass
// silently.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if Strict() {
		t.Fatalf(format, args...)
	}
	reason := fmt.Sprintf(format, args...)
	if err := logSkip(t.Name(), reason); err != nil {
		t.Errorf("write the skip log: %v", err)
	}
	t.Skip(reason)
}

// logSkip appends "package test: reason" to the skip log, when there is one. One write per
// line with O_APPEND keeps the lines of parallel test processes whole.
func logSkip(test, reason string) error {
	path := os.Getenv(SkipLogEnv)
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	line := fmt.Sprintf("%s %s: %s\n", packageDir(), test, strings.Join(strings.Fields(reason), " "))
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// packageDir is the directory of the running test's package (go test runs a test binary in
// its package's directory) relative to the repository's root, the directory holding .git; the
// whole directory when there is none above it.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "?"
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			if rel, err := filepath.Rel(dir, wd); err == nil {
				return rel
			}
			return wd
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

// Until calls ok every interval until it returns true, and reports whether it did before d
// passed: false when d passed first. It calls ok at least once.
func Until(d, every time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every)
	}
	return true
}
