package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

// Detection reads requests only around the disruptions it found first, each workload's
// overlapping surroundings merged into one read: the no-success seconds it gives are those of
// detection over every successful request of the window.
// A single replica leaves gaps; disruptions 2 minutes apart are read apart, 30 s apart their
// surroundings overlap and are merged.
func TestDisruptionsReadRequestsAroundThemOnly(t *testing.T) {
	for _, gap := range []time.Duration{2 * time.Minute, 30 * time.Second} {
		t.Run(gap.String(), func(t *testing.T) { testRequestsAround(t, gap) })
	}
}

func testRequestsAround(t *testing.T, gap time.Duration) {
	ctx := context.Background()
	db := pgtest.DB(t)
	cfg := eventgen.DefaultWorkload()
	cfg.Replicas, cfg.Nodes, cfg.Rollouts, cfg.Drains, cfg.NodeFailures = 1, 3, 2, 2, 2
	cfg.Gap = gap
	envs, did := eventgen.Workload(cfg)
	if _, err := db.Append(ctx, envs, nil); err != nil {
		t.Fatal(err)
	}
	from, to := cfg.Start.Add(-time.Minute), envs[len(envs)-1].OccurredAt.Add(time.Minute)
	got, err := db.Disruptions(ctx, store.WorkloadFilter{}, from, to)
	if err != nil {
		t.Fatal(err)
	}
	want, err := db.DisruptionsReadingAllRequests(ctx, store.WorkloadFilter{}, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(did) || len(want) != len(did) {
		t.Fatalf("%d disruptions detected (%d reading every request); the generator did %d", len(got), len(want), len(did))
	}
	gaps := 0
	for i := range want {
		for j, w := range want[i].Workloads {
			g := got[i].Workloads[j]
			if w.Interruption.NoSuccessSeconds == nil || g.Interruption.NoSuccessSeconds == nil {
				t.Errorf("%s at %s: no-success seconds %v, reading every request %v; want both read", want[i].Kind, want[i].Start, g.Interruption.NoSuccessSeconds, w.Interruption.NoSuccessSeconds)
				continue
			}
			if *g.Interruption.NoSuccessSeconds != *w.Interruption.NoSuccessSeconds {
				t.Errorf("%s at %s: no-success seconds %v, reading every request %v", want[i].Kind, want[i].Start, *g.Interruption.NoSuccessSeconds, *w.Interruption.NoSuccessSeconds)
			}
			if *w.Interruption.NoSuccessSeconds > 0 {
				gaps++
			}
		}
	}
	if gaps == 0 {
		t.Error("no disruption left a gap in successful requests: the comparison shows nothing")
	}
}
