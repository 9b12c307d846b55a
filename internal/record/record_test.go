package record_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/record"
)

// A key's history across definitions: first set, changed (an equal value written differently
// is no change), removed (null); runs in numeric order; a record whose content was changed
// after it was built fails Verify.
func TestBuild(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	d := record.Data{Experiment: "day21",
		Definitions: []record.Definitioned{
			{At: t0, Data: json.RawMessage(`{"name":"day21","change":"affinity","thresholds":{"error_rate":0.01,"p95_latency_ms":800},"owner":"a"}`)},
			{At: t0.Add(time.Hour), Data: json.RawMessage(`{"name":"day21","change":"affinity and priority","thresholds":{"p95_latency_ms":800, "error_rate":0.01},"previous":"day20"}`)},
		},
		Pods: []record.Pod{
			{Arm: "control", Run: "10", Node: "n1", Status: events.PodStatus{NodeName: "n1"}},
			{Arm: "control", Run: "2", Node: "n2", Status: events.PodStatus{NodeName: "n2"}},
			{Arm: "control", Run: "2", Node: "n2", Status: events.PodStatus{NodeName: "n2", Placement: &events.Placement{NodeSelector: map[string]string{"gpu-model": "H100"}}}},
		},
		Nodes: map[string]events.NodeStatus{
			"n1": {Labels: map[string]string{"node-pool": "a", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, Allocatable: map[string]string{"nvidia.com/gpu": "8", "cpu": "64"}},
			"n2": {Labels: map[string]string{"node-pool": "a"}, Allocatable: map[string]string{"nvidia.com/gpu": "8"}, Taints: []events.Taint{{Key: "k", Value: "v", Effect: "NoSchedule"}}},
		},
	}
	r, err := record.Build(d, compare.Comparison{Baseline: "control", Alpha: 0.05}, record.Options{MinGap: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	keys := r.Definition.Keys
	if k := keys["change"]; string(k.Value) != `"affinity and priority"` || !k.FirstSetAt.Equal(t0) || !k.ChangedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("change: %+v", k)
	}
	if k := keys["thresholds"]; !k.ChangedAt.Equal(t0) {
		t.Errorf("thresholds rewritten in another order count as a change: %+v", k)
	}
	if k := keys["owner"]; string(k.Value) != "null" || !k.ChangedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("owner removed: %+v", k)
	}
	if k := keys["previous"]; string(k.Value) != `"day20"` || record.PreviousOf(d.Definitions[1].Data) != "day20" {
		t.Errorf("previous: %+v", k)
	}
	a := r.Arms[0]
	if len(a.Runs) != 2 || a.Runs[0].Run != "2" || a.Runs[1].Run != "10" || len(a.Specs) != 2 || a.Specs[0].Pods != 2 {
		t.Errorf("arm %+v", a)
	}
	if n := a.Runs[0].Nodes[0]; n.Name != "n2" || n.Pods != 2 || n.Pool != "a" || strings.Join(n.Taints, ",") != "k=v:NoSchedule" {
		t.Errorf("node %+v", n)
	}
	if p := r.Cluster.Pools; len(p) != 1 || p[0].Nodes != 2 || p[0].GPUs["nvidia.com/gpu"] != 16 || p[0].GPUs["cpu"] != 0 {
		t.Errorf("pools %+v", p)
	}
	if err := record.Verify(r); err != nil {
		t.Fatal(err)
	}
	r.Arms[0].Runs[0].Nodes[0].Labels["node-pool"] = "b"
	if err := record.Verify(r); err == nil {
		t.Error("a changed record verified")
	}
}
