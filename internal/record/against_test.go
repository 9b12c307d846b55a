package record_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/record"
)

func interval(mean, half float64) compare.Interval {
	lo, hi := mean-half, mean+half
	return compare.Interval{Mean: mean, Low: &lo, High: &hi, N: 3}
}

// comparison has a baseline control and an arm affinity with verdict v; control's pending
// across runs is pending ± 0.1 (margin 0.5), its latency has no interval.
func comparison(pending float64, v string) compare.Comparison {
	return compare.Comparison{Baseline: "control", Alpha: 0.05, Arms: []compare.ArmResult{
		{Arm: "control", Baseline: true, Metrics: []compare.MetricResult{
			{Metric: "pending_p95_s", Unit: "s", AcrossRun: interval(pending, 0.1), Margin: &compare.MarginResult{Value: 0.5}},
			{Metric: "latency_p95_ms", Unit: "ms", AcrossRun: compare.Interval{Mean: 40, N: 1}},
		}},
		{Arm: "affinity", Verdict: v},
	}}
}

func build(t *testing.T, name, pool, product string, thresholds string, c compare.Comparison) record.Record {
	t.Helper()
	d := record.Data{Experiment: name,
		Definitions: []record.Definitioned{{At: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
			Data: json.RawMessage(fmt.Sprintf(`{"name":%q,"change":"affinity","thresholds":%s}`, name, thresholds))}},
		Pods: []record.Pod{
			{Arm: "control", Run: "1", Node: "n1", Status: events.PodStatus{NodeName: "n1", GPU: &events.GPU{Model: product, Sharing: "exclusive"}}},
			{Arm: "affinity", Run: "1", Node: "n1", Status: events.PodStatus{NodeName: "n1"}},
		},
		Nodes: map[string]events.NodeStatus{"n1": {KubeletVersion: "v1.37.2",
			Labels: map[string]string{"node-pool": pool, "nvidia.com/gpu.product": product, "kubernetes.io/hostname": "n1"}}},
	}
	r, err := record.Build(d, c, record.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Two experiments whose control arm ran on another node pool with another GPU, under another
// threshold: the differences name exactly those; the baseline's pending moved; the affinity
// arm's verdict did not hold. An experiment against itself differs in nothing and holds.
func TestCompare(t *testing.T) {
	a := build(t, "day20", "h100", "NVIDIA-H100-80GB-HBM3", `{"error_rate":0.01}`, comparison(1, "better"))
	b := build(t, "day21", "a100", "NVIDIA-A100-SXM4-80GB", `{"error_rate":0.02}`, comparison(2, "inconclusive"))
	got := record.Compare(a, b)
	var paths []string
	for _, d := range got.Differences {
		paths = append(paths, d.Path)
	}
	want := []string{"definition.thresholds", "cluster.pools", "arms.affinity.node_pools", "arms.affinity.gpu_models", "arms.affinity.labels.node-pool",
		"arms.affinity.labels.nvidia.com/gpu.product", "arms.control.node_pools", "arms.control.gpu_models",
		"arms.control.labels.node-pool", "arms.control.labels.nvidia.com/gpu.product"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("differences (-want +got):\n%s", diff)
	}
	if d := got.Differences[0]; !strings.Contains(fmt.Sprintf("%s", d.A), "0.01") || !strings.Contains(fmt.Sprintf("%s", d.B), "0.02") {
		t.Errorf("definition.thresholds: %v vs %v", d.A, d.B)
	}
	shift := got.Baseline
	if shift.Arm != "control" || len(shift.Metrics) != 2 || shift.Metrics[0].Shift != record.ShiftMoved || shift.Metrics[1].Shift != record.ShiftUnknown {
		t.Errorf("baseline shift %+v", shift)
	}
	if d := shift.Metrics[0].Difference; d == nil || d.Mean != 1 || *d.Low >= 1 || *d.High <= 1 {
		t.Errorf("pending difference %+v", d)
	}
	if diff := cmp.Diff([]record.ArmHeld{{Arm: "affinity", A: "better", B: "inconclusive", Held: false}}, got.Arms); diff != "" {
		t.Errorf("arms (-want +got):\n%s", diff)
	}

	self := record.Compare(a, a)
	if len(self.Differences) != 0 || self.Baseline.Metrics[0].Shift != record.ShiftSteady || !self.Arms[0].Held {
		t.Errorf("against itself: %+v", self)
	}
}
