package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/testenv"
)

// noEnv is an empty environment: a run's flags are all the test gives it.
func noEnv(string) string { return "" }

// smoke runs the bench with args, -json and -log-level warn for at most timeout, failing the
// test if the run fails, and returns what it printed.
func smoke(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	args = append(append([]string{"schedlens-bench"}, args...), "-json", "-log-level", "warn")
	if err := run(ctx, args, noEnv, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	return stdout.String()
}

// adminURL is the Postgres server the bench makes its databases on; without one the test
// skips (fails in CI).
func adminURL(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := pgtest.AdminURL()
	if err := store.CheckServer(ctx, admin); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	return admin
}

// lastJSON decodes the -json report, the last line of out.
func lastJSON(t *testing.T, out string, v any) {
	t.Helper()
	last := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	if err := json.Unmarshal([]byte(last), v); err != nil {
		t.Fatalf("last line is not the -json report: %v\n%s", err, out)
	}
}
