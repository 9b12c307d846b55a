package workload_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/workload"
)

// BelowDesired names the workloads short of Ready pods at the end of observation and since
// when, no earlier than asked; a shortfall that ended, or Ready spans that end with
// observation, are not one.
func TestBelowDesired(t *testing.T) {
	other := events.WorkloadRef{Namespace: "prod", Kind: "StatefulSet", Name: "cache"}
	for _, tc := range []struct {
		name  string
		pods  []pod
		since float64
		want  map[string]float64
	}{
		{name: "every pod Ready", pods: steady(), want: map[string]float64{}},
		{
			name: "one pod not Ready from 100 s",
			pods: []pod{
				{name: "a", node: "n1", rev: "h1", created: 1, ready: 10},
				{name: "b", node: "n2", rev: "h1", created: 1, ready: 10},
				{name: "c", node: "n3", rev: "h1", created: 1, ready: 10, notReady: 100},
				{name: "x", node: "n1", w: other, created: 1, ready: 10},
			},
			want: map[string]float64{"prod/Deployment/infer": 100},
		},
		{
			name: "short since before the time asked from",
			pods: []pod{
				{name: "a", node: "n1", rev: "h1", created: 1, ready: 10},
				{name: "b", node: "n2", rev: "h1", created: 1, ready: 10},
				{name: "c", node: "n3", rev: "h1", created: 1, ready: 10, ended: 100, reason: "evicted"},
			},
			since: 150,
			want:  map[string]float64{"prod/Deployment/infer": 150},
		},
		{
			name: "a shortfall that ended",
			pods: []pod{
				{name: "a", node: "n1", rev: "h1", created: 1, ready: 10},
				{name: "b", node: "n2", rev: "h1", created: 1, ready: 10},
				{name: "c", node: "n3", rev: "h1", created: 1, ready: 10, ended: 100, reason: "evicted"},
				{name: "d", node: "n3", rev: "h1", created: 101, ready: 130},
			},
			want: map[string]float64{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := workload.Input{States: observed(), From: at(0), To: at(200)}
			for _, p := range tc.pods {
				in.Pods = append(in.Pods, p.build())
			}
			got := map[string]float64{}
			for k, s := range workload.BelowDesired(in, at(tc.since)) {
				got[k.String()] = s.Sub(t0).Seconds()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("below desired (-want +got):\n%s", diff)
			}
		})
	}
}
