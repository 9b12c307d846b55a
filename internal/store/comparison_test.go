package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/store"
)

// TestComparisonInputCachedEqualsDirect checks that the comparison read through the per-run
// slices (ComparisonInput) is exactly the one read from every pod, snapshot and request
// (ComparisonInputDirect) — the input and the comparison built from it, as JSON — on the
// eventgen experiment while it is stored: half of it in order, then the rest shuffled (late,
// out-of-order snapshots and requests of runs already read), checked after every batch, for all
// namespaces and for the experiment's; and each run's interruptions (RunInterruptions, kept by
// the same fingerprint) against computing them, run 6 not stored (ErrNotFound), and each arm's
// alone (ArmInterruptions, a pod timeline's, kept by its arm's pods); and Comparison
// (kept by everything it read) against building from the direct input, for two baselines.
func TestComparisonInputCachedEqualsDirect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t)
	cfg := eventgen.Default()
	cfg.Runs = 5
	envs := eventgen.Generate(cfg)
	half := len(envs) / 2
	ingestInBatches(t, db, envs[:half], 50)
	check := func(stage string) {
		t.Helper()
		for _, run := range []string{"1", "2", "3", "4", "5", "6"} {
			for _, gap := range []time.Duration{align.DefaultMinGap, 300 * time.Millisecond} {
				want, wantErr := db.RunInterruptionsDirect(ctx, cfg.Experiment, "", run, gap)
				for range 2 {
					got, err := db.RunInterruptions(ctx, cfg.Experiment, "", run, gap)
					if !errors.Is(err, wantErr) && (err == nil || wantErr == nil || err.Error() != wantErr.Error()) {
						t.Fatalf("%s: run %s interruptions: err = %v, want %v", stage, run, err, wantErr)
					}
					if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
						t.Fatalf("%s: run %s interruptions differ\ncached %s\ndirect %s", stage, run, g, w)
					}
					// One arm alone (a pod's timeline), kept by its own pods' fingerprint.
					for _, w := range append(want, report.ArmInterruptions{Arm: "no-such-arm"}) {
						got, err := db.ArmInterruptions(ctx, cfg.Experiment, run, w.Arm, gap)
						if w.Arm == "no-such-arm" || wantErr != nil {
							if !errors.Is(err, store.ErrNotFound) {
								t.Fatalf("%s: run %s arm %q interruptions: err = %v, want not found", stage, run, w.Arm, err)
							}
							continue
						}
						if err != nil {
							t.Fatalf("%s: run %s arm %s interruptions: %v", stage, run, w.Arm, err)
						}
						if g, w := jsonOf(t, got), jsonOf(t, w); g != w {
							t.Fatalf("%s: run %s arm interruptions differ\ncached %s\ndirect %s", stage, run, g, w)
						}
					}
				}
			}
		}
		for _, ns := range []string{"", cfg.Namespace} {
			want, err := db.ComparisonInputDirect(ctx, cfg.Experiment, ns)
			if err != nil {
				t.Fatalf("%s: direct: %v", stage, err)
			}
			for range 2 { // cold or stale, then warm
				got, err := db.ComparisonInput(ctx, cfg.Experiment, ns)
				if err != nil {
					t.Fatalf("%s: cached: %v", stage, err)
				}
				if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
					t.Fatalf("%s, namespace %q: input differs\ncached %s\ndirect %s", stage, ns, g, w)
				}
				gc, err := compare.Build(got, "")
				if err != nil {
					t.Fatal(err)
				}
				wc, err := compare.Build(want, "")
				if err != nil {
					t.Fatal(err)
				}
				if g, w := jsonOf(t, gc), jsonOf(t, wc); g != w {
					t.Fatalf("%s, namespace %q: comparison differs\ncached %s\ndirect %s", stage, ns, g, w)
				}
			}
			for _, baseline := range []string{"", "affinity"} {
				wc, err := compare.Build(want, baseline)
				if err != nil {
					t.Fatal(err)
				}
				for range 2 { // built, then kept
					gc, err := db.Comparison(ctx, cfg.Experiment, ns, baseline)
					if err != nil {
						t.Fatalf("%s: Comparison: %v", stage, err)
					}
					if g, w := jsonOf(t, gc), jsonOf(t, wc); g != w {
						t.Fatalf("%s, namespace %q, baseline %q: Comparison differs\nkept %s\nbuilt %s", stage, ns, baseline, g, w)
					}
				}
			}
		}
	}
	check("first half")
	rest := envs[half:]
	shuffle(rest, 3, 3)
	for i := 0; i < len(rest); i += 150 {
		ingestInBatches(t, db, rest[i:min(i+150, len(rest))], 150)
		check("after a shuffled batch")
	}
	for _, f := range []func(context.Context, string, string) (compare.Input, error){db.ComparisonInput, db.ComparisonInputDirect} {
		if _, err := f(ctx, cfg.Experiment, "elsewhere"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("namespace without pods: err = %v, want ErrNotFound", err)
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(canonicalJSON(b))
}

// TestArmInterruptionsKeptByTheirArm: a pod's timeline reads its arm's interruptions kept by
// the fingerprint of that arm's pods. A late snapshot of one control pod — not Ready just after
// it became Ready — must change what ArmInterruptions answers for control at once (a
// fingerprint that missed the arm's own pods would hand out the windows from before it).
func TestArmInterruptionsKeptByTheirArm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t)
	cfg := eventgen.Default()
	cfg.Runs = 1
	envs := eventgen.Generate(cfg)
	ingestInBatches(t, db, envs, 200)

	// The first Ready snapshot of a control pod of run 1, copied to just after it as not Ready.
	var ready *events.Envelope
	for _, e := range envs {
		ps, ok := e.Payload.(*events.PodStatus)
		if ok && e.ExperimentOf(events.DefaultLabelKeys).Arm == "control" && !ps.Deleted {
			if c := ps.Condition("Ready"); c != nil && c.Status == "True" {
				ready = e
				break
			}
		}
	}
	if ready == nil {
		t.Fatal("no Ready control pod in the generated run")
	}
	direct := func() string {
		t.Helper()
		arms, err := db.RunInterruptionsDirect(ctx, cfg.Experiment, "", "1", align.DefaultMinGap)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arms {
			if a.Arm == "control" {
				return jsonOf(t, a)
			}
		}
		t.Fatal("no control arm")
		return ""
	}
	cached := func() string {
		t.Helper()
		a, err := db.ArmInterruptions(ctx, cfg.Experiment, "1", "control", align.DefaultMinGap)
		if err != nil {
			t.Fatal(err)
		}
		return jsonOf(t, a)
	}
	before := cached()
	if before != direct() {
		t.Fatalf("before: cached %s, direct %s", before, direct())
	}

	late := *ready
	ps := *ready.Payload.(*events.PodStatus)
	ps.Conditions = []events.Condition{{Type: "Ready", Status: "False", Reason: "ContainersNotReady"}}
	late.ID, late.Payload, late.Raw = ready.ID+"/late", &ps, nil
	late.OccurredAt = ready.OccurredAt.Add(time.Millisecond)
	late.ObservedAt = late.OccurredAt
	b, err := events.Encode(&late)
	if err != nil {
		t.Fatal(err)
	}
	e, err := events.Decode(b, events.WithClock(func() time.Time { return late.ObservedAt }))
	if err != nil {
		t.Fatal(err)
	}
	ingestInBatches(t, db, []*events.Envelope{e}, 1)
	after, want := cached(), direct()
	if after != want {
		t.Fatalf("after one control pod changed: cached %s, direct %s", after, want)
	}
	if after == before {
		t.Fatalf("the late snapshot changed nothing in control's interruptions (%s): the test cannot tell a stale answer", after)
	}
}
