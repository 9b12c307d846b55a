package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
)

// Each kind of disruption reads as what happened.
func TestDisruptionLabel(t *testing.T) {
	infer := report.Affected{Workload: events.WorkloadRef{Namespace: "prod", Kind: "Deployment", Name: "infer"}}
	two, three := 2, 3
	for _, tc := range []struct {
		d    report.Disruption
		want string
	}{
		{report.Disruption{Kind: report.DisruptionRollout, Revision: &report.Revision{Number: "2", Hash: "50b31a053c"}, From: &report.Revision{Number: "1", Hash: "cae7325924"},
			Workloads: []report.Affected{infer}}, "rollout to revision 2 (50b31a053c) from 1 (cae7325924) of prod/Deployment/infer"},
		{report.Disruption{Kind: report.DisruptionRollout, Revision: &report.Revision{Hash: "7d9f"}, Stalled: true, Workloads: []report.Affected{infer}},
			"rollout to revision 7d9f of prod/Deployment/infer; stalled (ProgressDeadlineExceeded)"},
		{report.Disruption{Kind: report.DisruptionDrain, Node: "gpu-node-2", Pods: []string{"a"}}, "drain of node gpu-node-2: 1 pod evicted"},
		{report.Disruption{Kind: report.DisruptionNodeFailure, Node: "gpu-node-3", Pods: []string{"a", "b"}}, "node gpu-node-3 NotReady: 2 pods on it"},
		{report.Disruption{Kind: report.DisruptionPreemption, Pods: []string{"a"}, Preemptor: &report.PodName{Namespace: "lab", Name: "prio-1", UID: "u"}},
			"preemption: 1 pod preempted for lab/prio-1"},
		{report.Disruption{Kind: report.DisruptionPreemption, Pods: []string{"a", "b"}, Preemptor: &report.PodName{UID: "0f3c"}}, "preemption: 2 pods preempted for 0f3c"},
		{report.Disruption{Kind: report.DisruptionScale, FromReplicas: &three, Replicas: &two, Workloads: []report.Affected{infer}}, "scale of prod/Deployment/infer from 3 to 2 replicas"},
	} {
		if diff := cmp.Diff(tc.want, disruptionLabel(tc.d)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.d.Kind, diff)
		}
	}
}

// Marks are numbered in the order they began; flags that would overlap on the axis are one
// flag, numbered first–last.
func TestMarkClusters(t *testing.T) {
	origin := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	c := &chart{from: origin, lo: 0, hi: 600} // 924 units for 10 minutes: 1.54 units a second
	var ds []report.Disruption
	for i, s := range []int{300, 0, 5, 12, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 40} { // newest first is not required
		ds = append(ds, report.Disruption{ID: fmt.Sprintf("d%02d", i), Kind: report.DisruptionPreemption, Start: origin.Add(time.Duration(s) * time.Second)})
	}
	ms, rows := marks(ds, nil, origin, origin.Add(10*time.Minute))
	var got []string
	for _, cl := range clusters(c, ms) {
		var ns []string
		for _, m := range cl {
			ns = append(ns, fmt.Sprint(m.N))
		}
		got = append(got, strings.Join(ns, ","))
	}
	// 0 s, 5 s and 12 s fit under one flag "1–3" (20 units wide); 20 s begins another, which
	// takes in 21–29 s ("4–13", 25 units) but not 40 s.
	want := []string{"1,2,3", "4,5,6,7,8,9,10,11,12,13", "14", "15"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
	if rows[0].ID != "d01" || rows[14].ID != "d00" || rows[14].N != 15 {
		t.Errorf("rows: first %s, last %s numbered %d; want d01 first and d00 last, 15", rows[0].ID, rows[14].ID, rows[14].N)
	}
}
