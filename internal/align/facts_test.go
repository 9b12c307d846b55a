package align_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
)

func TestFactsOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		e      ev
		want   align.Facts
		wantOK bool
	}{
		{
			name: "not about a pod",
			e:    ev{"node/1", events.PodRef{}, "04:32:00", "gpu-node-1", &events.NodeStatus{Ready: true}},
		},
		{
			name: "FailedScheduling without event uid: series keyed by envelope id, count 0 is 1",
			e:    ev{"fs-a", podX, "04:32:01", "", failedScheduling("", 0)},
			want: align.Facts{
				UID: uidX, Namespace: "ai-lab", Name: "x", Cluster: "lab",
				FirstSeen: tm("04:32:01"), LastSeen: tm("04:32:01"), FirstUnschedulable: tm("04:32:01"),
				Series: map[align.SeriesKey]int{{Reason: events.ReasonFailedScheduling, Key: "fs-a"}: 1},
			},
			wantOK: true,
		},
		{
			name: "Preempted: end, rank and preemptor",
			e:    ev{"pre", podX, "04:32:10", "", preemptedEvent("Preempted by pod 6ee92199-b806-4aed-80ba-6687a24a01b2 on node gpu-node-3")},
			want: align.Facts{
				UID: uidX, Namespace: "ai-lab", Name: "x", Cluster: "lab",
				FirstSeen: tm("04:32:10"), LastSeen: tm("04:32:10"),
				EndedAt: tm("04:32:10"), EndRank: slices.Index(align.EndReasons, align.EndPreempted), PreemptedBy: uidPreemptor,
			},
			wantOK: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := align.FactsOf(envelope(t, tc.e), events.DefaultLabelKeys)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("facts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeGroupings(t *testing.T) {
	envs, uids := generated(t)
	byPod := map[string][]*events.Envelope{}
	for _, env := range envs {
		byPod[env.PodUID()] = append(byPod[env.PodUID()], env)
	}
	// merge folds facts into fresh Facts, so no grouping shares a Series map with another.
	merge := func(fs ...align.Facts) align.Facts {
		var out align.Facts
		for _, f := range fs {
			out.Merge(f)
		}
		return out
	}
	for _, uid := range uids {
		var facts []align.Facts
		for _, env := range byPod[uid] {
			f, ok := align.FactsOf(env, events.DefaultLabelKeys)
			if !ok {
				t.Fatalf("FactsOf(%s): not about a pod", env.ID)
			}
			facts = append(facts, f)
		}
		inOrder := merge(facts...)

		reversed := slices.Clone(facts)
		slices.Reverse(reversed)
		var evens, odds []align.Facts
		for i, f := range facts {
			if i%2 == 0 {
				evens = append(evens, f)
			} else {
				odds = append(odds, f)
			}
		}
		// Right fold: f0 + (f1 + (f2 + …)).
		rightFold := align.Facts{}
		for i := len(facts) - 1; i >= 0; i-- {
			rightFold = merge(facts[i], rightFold)
		}
		// Balanced tree of pairs.
		level := slices.Clone(facts)
		for len(level) > 1 {
			var next []align.Facts
			for i := 0; i < len(level); i += 2 {
				next = append(next, merge(level[i:min(i+2, len(level))]...))
			}
			level = next
		}
		for name, got := range map[string]align.Facts{
			"reversed":         merge(reversed...),
			"odds then evens":  merge(merge(odds...), merge(evens...)),
			"evens then odds":  merge(merge(evens...), merge(odds...)),
			"right fold":       rightFold,
			"tree of pairs":    level[0],
			"merged with self": merge(inOrder, inOrder),
		} {
			// Merging facts with themselves double-counts the summed request counts: that is why
			// Build and the store merge each distinct event once. Everything else is idempotent.
			if name == "merged with self" {
				got.Requests, got.RequestErrors = inOrder.Requests, inOrder.RequestErrors
				got.PreReadyRequests, got.PreReadyErrors = inOrder.PreReadyRequests, inOrder.PreReadyErrors
				got.Latency, got.GPUUtil, got.GPUFBSeconds = inOrder.Latency, inOrder.GPUUtil, inOrder.GPUFBSeconds
			}
			if diff := cmp.Diff(inOrder, got); diff != "" {
				t.Errorf("pod %s, %s: merged facts differ (-in order +%s):\n%s", uid, name, name, diff)
			}
		}
		tl, _ := align.Build(uid, envs, events.DefaultLabelKeys)
		inOrder.ApplyInventories(inventories(envs))
		inOrder.ApplyWatches(watches(envs))
		if diff := cmp.Diff(tl.Summary, align.Derive(inOrder)); diff != "" {
			t.Errorf("pod %s: Derive(merged facts) differs from Build (-build +derive):\n%s", uid, diff)
		}
	}
}
