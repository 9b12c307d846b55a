package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/lab/cluster"
)

func nodeLabels(t *testing.T, name string) map[string]string {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Labels
}

// Pods with required node affinity accelerator=nvidia-gpu land only on nodes with that label
// (the T4 pool has none), and their timelines carry the placement rule, the GPU model and the
// sharing mode.
func TestRequiredAffinityLandsOnMatchingNodes(t *testing.T) {
	e := newEnv(t)
	var names []string
	for i := 1; i <= 6; i++ {
		name := fmt.Sprintf("affinity-%d", i)
		e.create(podSpec{name: name, arm: "affinity", requiredLabel: [2]string{"accelerator", "nvidia-gpu"}})
		names = append(names, name)
	}
	pods := e.waitReady(names...)
	e.settle()
	for _, name := range names {
		p := pods[name]
		if got := nodeLabels(t, p.Spec.NodeName)["accelerator"]; got != "nvidia-gpu" {
			t.Errorf("%s on %s (accelerator=%q): required affinity violated", name, p.Spec.NodeName, got)
		}
		tl := e.timeline(p.UID)
		if deref(tl.Pod.Node) != p.Spec.NodeName {
			t.Errorf("%s: timeline node %q, pod on %q", name, deref(tl.Pod.Node), p.Spec.NodeName)
		}
		if tl.Milestones.Scheduled == nil || tl.Milestones.Running == nil || tl.Milestones.Ready == nil {
			t.Errorf("%s: milestones %+v, want scheduled, running and ready", name, tl.Milestones)
		}
		if deref(tl.Experiment.Arm) != "affinity" {
			t.Errorf("%s: arm %q", name, deref(tl.Experiment.Arm))
		}
		snap := snapshotData(t, tl)
		if snap.Placement == nil || !slices.Equal(snap.Placement.Required, []string{"accelerator In (nvidia-gpu)"}) {
			t.Errorf("%s: placement %+v, want the required term", name, snap.Placement)
		}
		if snap.GPU == nil || snap.GPU.Sharing != events.SharingExclusive || snap.GPU.Model == "" {
			t.Errorf("%s: gpu %+v, want an exclusive GPU with its model", name, snap.GPU)
		}
	}
}

// A high-priority pod preempts a low-priority one on a full pool; the victim's timeline ends
// preempted with the preemptor linked, and the preemptor's shows its wait.
func TestPreemptionLinksVictimAndPreemptor(t *testing.T) {
	e := newEnv(t)
	h100 := map[string]string{cluster.LabelPool: "h100"}
	var low []string
	for i := 1; i <= 4; i++ { // the h100 pool has 2 nodes × 2 GPUs
		name := fmt.Sprintf("background-%d", i)
		e.create(podSpec{name: name, arm: "background", priorityClass: "lab-low", nodeSelector: h100})
		low = append(low, name)
	}
	before := e.waitReady(low...)
	preemptor := e.create(podSpec{name: "priority-1", arm: "priority", priorityClass: "lab-high", nodeSelector: h100})
	e.waitReady("priority-1")
	var victims []string
	for _, name := range low {
		if p, ok := e.pod(name); !ok || p.UID != before[name].UID {
			victims = append(victims, name)
		}
	}
	if len(victims) != 1 {
		t.Fatalf("victims %v, want exactly one background pod preempted", victims)
	}
	e.settle()
	v := e.timeline(before[victims[0]].UID)
	if deref(v.EndedReason) != "preempted" || deref(v.PreemptedBy) != string(preemptor.UID) {
		t.Errorf("victim %s: ended_reason %q preempted_by %q, want preempted by %s", victims[0], deref(v.EndedReason), deref(v.PreemptedBy), preemptor.UID)
	}
	p := e.timeline(preemptor.UID)
	if p.Milestones.FirstUnschedulable == nil || p.Counts.FailedScheduling < 1 || p.Milestones.Ready == nil {
		t.Errorf("preemptor: milestones %+v counts %+v, want a FailedScheduling wait, then Ready", p.Milestones, p.Counts)
	}
	if p.Milestones.Scheduled != nil && v.Milestones.Ended != nil && p.Milestones.Scheduled.Before(*v.Milestones.Ended) {
		t.Errorf("preemptor scheduled %v before the victim ended %v", p.Milestones.Scheduled, v.Milestones.Ended)
	}
}

// A pod asking for more GPUs than any node offers stays Pending: it is kept, censored, and its
// FailedScheduling events are counted with their reasons.
func TestOversizedPodStaysPendingCensored(t *testing.T) {
	e := newEnv(t)
	pod := e.create(podSpec{name: "oversized-1", arm: "oversized", gpus: 3})
	var tl struct {
		Counts struct {
			FailedScheduling int `json:"failed_scheduling"`
		} `json:"counts"`
		Censored []string `json:"censored"`
		Events   []struct {
			Kind events.Kind     `json:"kind"`
			Data json.RawMessage `json:"data"`
		} `json:"events"`
	}
	waitFor(t, 30*time.Second, "the FailedScheduling event in the timeline", func() bool {
		return e.get("/v1/pods/"+string(pod.UID)+"/timeline", &tl) == 200 && tl.Counts.FailedScheduling >= 1
	})
	if p, _ := e.pod("oversized-1"); p.Spec.NodeName != "" {
		t.Fatalf("bound to %s; no node has 3 free GPUs without a sharing taint", p.Spec.NodeName)
	}
	if !slices.Contains(tl.Censored, "scheduled") {
		t.Errorf("censored %v, want scheduled among them", tl.Censored)
	}
	var reasons []events.ReasonCount
	for _, ev := range tl.Events {
		var k events.K8sEvent
		if ev.Kind == events.KindK8sEvent && json.Unmarshal(ev.Data, &k) == nil && k.Reason == events.ReasonFailedScheduling && k.Scheduling != nil {
			reasons = k.Scheduling.Reasons
			if k.Scheduling.Total != len(spec.Nodes()) || k.Scheduling.Available != 0 {
				t.Errorf("scheduling %+v, want 0/%d nodes available", k.Scheduling, len(spec.Nodes()))
			}
		}
	}
	if !slices.ContainsFunc(reasons, func(r events.ReasonCount) bool { return r.Reason == "Insufficient nvidia.com/gpu" && r.Nodes > 0 }) {
		t.Errorf("FailedScheduling reasons %+v, want Insufficient nvidia.com/gpu counted", reasons)
	}
	var list struct {
		Pods []struct {
			Pod struct {
				UID string `json:"uid"`
			} `json:"pod"`
		} `json:"pods"`
	}
	if e.get("/v1/pods?experiment=day20&arm=oversized", &list) != 200 || len(list.Pods) != 1 || list.Pods[0].Pod.UID != string(pod.UID) {
		t.Errorf("/v1/pods?arm=oversized = %+v, want the pending pod listed", list)
	}
}

// Draining a node evicts its pods; their replacements are scheduled elsewhere, and the gap
// between the old pod's end and the new pod's Ready is on the timelines.
func TestDrainReschedulesWithVisibleGap(t *testing.T) {
	e := newEnv(t)
	a100 := map[string]string{cluster.LabelPool: "a100"}
	first := e.waitReady(func() []string {
		e.create(podSpec{name: "drain-1", arm: "control", nodeSelector: a100})
		e.create(podSpec{name: "drain-2", arm: "control", nodeSelector: a100})
		return []string{"drain-1", "drain-2"}
	}()...)
	node := first["drain-1"].Spec.NodeName
	ctx := context.Background()
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = true
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		n, _ := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		n.Spec.Unschedulable = false
		_, _ = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	}()
	var evicted []*corev1.Pod
	for _, p := range first {
		if p.Spec.NodeName != node {
			continue
		}
		if err := client.CoreV1().Pods(e.ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: e.ns}}); err != nil {
			t.Fatalf("evict %s: %v", p.Name, err)
		}
		evicted = append(evicted, p)
	}
	for _, p := range evicted {
		e.waitGone(p.Name)
		// The ReplicaSet's part: a replacement pod.
		e.create(podSpec{name: p.Name + "-r", arm: "control", nodeSelector: a100})
	}
	for _, p := range evicted {
		r := e.waitReady(p.Name + "-r")[p.Name+"-r"]
		if r.Spec.NodeName == node {
			t.Errorf("replacement %s scheduled on the cordoned node %s", r.Name, node)
		}
	}
	e.settle()
	for _, p := range evicted {
		old := e.timeline(p.UID)
		r, _ := e.pod(p.Name + "-r")
		repl := e.timeline(r.UID)
		if deref(old.EndedReason) != "evicted" || old.Milestones.Ended == nil {
			t.Errorf("%s: ended_reason %q at %v, want evicted", p.Name, deref(old.EndedReason), old.Milestones.Ended)
			continue
		}
		if repl.Milestones.Ready == nil {
			t.Errorf("replacement of %s never Ready on its timeline", p.Name)
			continue
		}
		if gap := repl.Milestones.Ready.Sub(*old.Milestones.Ended); gap <= 0 {
			t.Errorf("%s: replacement Ready %v not after the old pod ended %v", p.Name, repl.Milestones.Ready, old.Milestones.Ended)
		} else {
			t.Logf("%s: no Ready replica for %s (ended %s → replacement ready %s)", p.Name, gap, old.Milestones.Ended.Format(time.RFC3339Nano), repl.Milestones.Ready.Format(time.RFC3339Nano))
		}
	}
}
