package store_test

import (
	"slices"
	"testing"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
)

// Where the wait was, in the store as in align: gated pods, DRA claims allocated at
// scheduling, KAI-Scheduler's events and the kubelet's prepare failures, stored in order and
// shuffled.
func TestGatesAndClaimsAgreeWithAlign(t *testing.T) {
	t.Parallel()
	cfg := eventgen.Default()
	cfg.DRA = true
	envs := eventgen.Generate(cfg)
	inOrder := pgtest.DB(t)
	ingestInBatches(t, inOrder, envs, 41)
	checkAgainstAlign(t, "in order", inOrder, envs, podUIDs(envs))
	shuffled := pgtest.DB(t)
	mixed := slices.Clone(envs)
	shuffle(mixed, 25, 1)
	ingestInBatches(t, shuffled, mixed, 17)
	checkAgainstAlign(t, "shuffled", shuffled, envs, podUIDs(envs))

	// The generator's arms show what each new fact is for.
	byArm := map[string][]align.Timeline{}
	for _, tl := range timelines(t, inOrder, podUIDs(envs)) {
		if tl.Experiment.Arm != nil {
			byArm[*tl.Experiment.Arm] = append(byArm[*tl.Experiment.Arm], tl)
		}
	}
	for arm, tls := range byArm {
		for _, tl := range tls {
			m, d := tl.Milestones, tl.Durations
			gated := arm == "affinity"
			if (m.Gated != nil) != gated {
				t.Errorf("%s: gated %v, want a gated milestone only in the affinity arm", tl.Pod.Name, m.Gated)
			}
			if gated && (d.Gated == nil || *d.Gated < 0.8 || d.SchedulableWait == nil || *d.Pending-*d.Gated-*d.SchedulableWait > 1e-9) {
				t.Errorf("%s: gated %v + schedulable %v, pending %v: the split must add up, with the gate's wait ≥ 0.8 s", tl.Pod.Name, d.Gated, d.SchedulableWait, d.Pending)
			}
			if g := tl.Gates; gated && (len(g) != 1 || g[0].Name != "kueue.x-k8s.io/admission" || g[0].Removed == nil || !g[0].Removed.Equal(*m.Gated)) {
				t.Errorf("%s: gates %+v; want the admission gate, removed at the gated milestone %v", tl.Pod.Name, g, m.Gated)
			} else if !gated && len(g) != 0 {
				t.Errorf("%s: gates %+v, want none", tl.Pod.Name, g)
			}
			if gated && m.FirstUnschedulable != nil && m.FirstUnschedulable.Before(*m.Gated) {
				t.Errorf("%s: unschedulable at %v, before its gate went at %v", tl.Pod.Name, m.FirstUnschedulable, m.Gated)
			}
			if !gated && d.SchedulableWait != nil && *d.SchedulableWait != *d.Pending {
				t.Errorf("%s: never gated, yet schedulable wait %v ≠ pending %v", tl.Pod.Name, *d.SchedulableWait, *d.Pending)
			}
			if claims := arm == "sharing"; (m.ClaimAllocated != nil) != claims {
				t.Errorf("%s: claim allocated %v, want one only in the sharing arm", tl.Pod.Name, m.ClaimAllocated)
			} else if claims && (m.Scheduled == nil || m.ClaimAllocated.After(*m.Scheduled)) {
				t.Errorf("%s: claim allocated %v after the pod was scheduled %v", tl.Pod.Name, m.ClaimAllocated, m.Scheduled)
			}
			if arm == "priority" && tl.Counts.FailedScheduling == 0 {
				t.Errorf("%s: KAI-Scheduler's Unschedulable events not counted as failed scheduling", tl.Pod.Name)
			}
			if arm == "priority" && (tl.Pod.Node == nil || *tl.Pod.Node == "") {
				t.Errorf("%s: no node from KAI-Scheduler's Scheduled note", tl.Pod.Name)
			}
		}
	}
	prepared := 0
	for _, tl := range byArm["sharing"] {
		prepared += tl.Counts.FailedPrepare
	}
	if prepared != cfg.Runs {
		t.Errorf("%d FailedPrepareDynamicResources counted, want one per run (%d)", prepared, cfg.Runs)
	}
}
