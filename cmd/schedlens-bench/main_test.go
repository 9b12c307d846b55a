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
)

// TestRunSmoke runs the whole bench on a few rows against the real Postgres and checks that it
// prints the three figures and both ratios. It asserts no rate: figures are for people.
func TestRunSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := pgtest.AdminURL()
	if err := store.CheckServer(ctx, admin); err != nil {
		pgtest.Unavailable(t, "%v", err)
	}

	var stdout, stderr bytes.Buffer
	noEnv := func(string) string { return "" }
	args := []string{"schedlens-bench", "-n", "300", "-admin-database-url", admin, "-json", "-log-level", "warn"}
	if err := run(ctx, args, noEnv, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"end-to-end (NATS → correlator → Postgres + projections)",
		"raw CopyFrom into a bare table",
		"naive INSERT per event",
		"end-to-end / raw CopyFrom = ",
		"end-to-end / naive INSERT = ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	var r report
	last := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		t.Fatalf("last line is not the -json report: %v\n%s", err, out)
	}
	if r.EndToEnd.Count != 300 || r.CopyFrom.Count != 300 || r.Naive.Count != 300 {
		t.Errorf("counts = %d, %d, %d; want 300 each", r.EndToEnd.Count, r.CopyFrom.Count, r.Naive.Count)
	}
}
