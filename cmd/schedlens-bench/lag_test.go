package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// TestLagSmoke runs -lag for two seconds at 200 events/s against the real Postgres, with the
// correlator in a child process (this test binary, see TestMain), and checks the figures are
// there and consistent, and that -cpu-profile wrote the correlator child's profile and this
// process's. It asserts no lag or rate: figures are for people.
func TestLagSmoke(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu")
	out := smoke(t, 3*time.Minute, "-lag", "-lag-rate", "200", "-lag-duration", "2s", "-concurrent-batches", "3",
		"-cpu-profile", prof, "-admin-database-url", adminURL(t))
	for _, want := range []string{
		"offered to the publisher", "acknowledged by JetStream", "visible in GET /v1/stats",
		"lag event → visible in the api: p50 ", "(target p99 < 1 s at 10000/s)", "method: ", "the poller's timeline reads: ",
		"consumer NumPending (each second", "correlator RSS (child process): now ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var r lagReport
	lastJSON(t, out, &r)
	if r.ConcurrentBatches != 3 || !strings.Contains(out, "3 concurrent batches") {
		t.Errorf("the report says %d concurrent batches; want the 3 of -concurrent-batches", r.ConcurrentBatches)
	}
	for _, suffix := range []string{"-lag-correlator.pprof", "-lag-bench.pprof"} {
		b, err := os.ReadFile(prof + suffix)
		if err != nil {
			t.Fatal(err)
		}
		// A profile of a few quiet seconds may hold no sample: its kind is what is checked.
		if p, err := profile.ParseData(b); err != nil || p.PeriodType == nil || p.PeriodType.Type != "cpu" {
			t.Errorf("%s: %v; want a CPU profile", suffix, err)
		}
	}
	if r.Offered <= 0 || r.Offered > 401 {
		t.Errorf("offered %d events; want some, at most 2 s × 200/s", r.Offered)
	}
	if r.Stored != int64(r.Offered) {
		t.Errorf("the api counts %d events, %d were offered", r.Stored, r.Offered)
	}
	if r.Acked > r.Offered {
		t.Errorf("%d acknowledged, more than the %d offered", r.Acked, r.Offered)
	}
	l := r.Lag
	if l.Samples == 0 || l.Invisible != 0 {
		t.Errorf("lag over %d samples, %d never visible; want some, all visible", l.Samples, l.Invisible)
	}
	if l.Polls < l.Samples || !(l.PollP50 > 0 && l.PollP50 <= l.PollP99 && l.PollP99 <= l.Max) {
		t.Errorf("%d timeline reads for %d samples, p50 %g s, p99 %g s: want one at least per sample, 0 < p50 ≤ p99 ≤ the largest lag (%g s)", l.Polls, l.Samples, l.PollP50, l.PollP99, l.Max)
	}
	if !(l.P50 > 0 && l.P50 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("lag p50 %g, p99 %g, max %g: want 0 < p50 ≤ p99 ≤ max", l.P50, l.P99, l.Max)
	}
	if r.Pending.Samples == 0 || r.Pending.Min > r.Pending.Max || r.Pending.Last > r.Pending.Max {
		t.Errorf("NumPending samples %+v: want some, min ≤ last ≤ max", r.Pending)
	}
	if m := r.Correlator; m.RSS <= 0 || m.Peak < m.RSS || m.Anon <= 0 || m.Anon > m.RSS {
		t.Errorf("correlator memory %+v: want 0 < anon ≤ RSS ≤ peak", m)
	}
}
