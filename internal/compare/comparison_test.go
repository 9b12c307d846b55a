package compare_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
)

// Build reads the definition (primary metrics from its words, margins, alpha, thresholds) and
// reports where each arm was measured and which runs began before the definition arrived.
func TestBuildFromDefinition(t *testing.T) {
	arms := experiment(rand.New(rand.NewPCG(5, 5)), issueDesign, labWorkload, labNoise, noEffect)
	in := compare.Input{Experiment: "day20", Arms: map[string]map[string]compare.RunData{}}
	for _, a := range arms {
		in.Arms[a.Name] = a.Runs
	}
	// simArm's run r starts at 10:00 + r minutes; the definition arrived between runs 1 and 2.
	in.DefinedAt = time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC)
	in.Definition = &events.Experiment{Name: "day20", Baseline: "control", Alpha: 0.1,
		Metrics:    &events.Words{List: []string{"placement", "Pending", "cost"}},
		Margins:    map[string]any{"pending": "50%", "bogus": 1.0},
		Thresholds: map[string]any{"error_rate": 0.01, "nonsense": 2.0}}
	in.Placement = map[string]*compare.ArmPlacement{"treatment": {
		Nodes: map[string]int{"gpu-h100-1": 6, "gpu-a100-2": 3}, GPUModels: map[string]int{"NVIDIA-H100-80GB-HBM3": 6, "NVIDIA-A100-SXM4-80GB": 3},
		Sharing: map[string]int{"exclusive": 9}, FailedScheduling: map[string]int{},
	}}
	in.Nodes = map[string]compare.NodeInfo{
		"gpu-h100-1": {Labels: map[string]string{"lab.schedlens.io/pool": "h100", "cloud.google.com/gke-nodepool": "gpu-pool-a"}, KubeletVersion: "v1.37.2"},
		"gpu-a100-2": {Labels: map[string]string{"lab.schedlens.io/pool": "a100"}, KubeletVersion: "v1.36.4"},
	}
	c, err := compare.Build(in, "")
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Baseline                           string
		Alpha                              float64
		Primary, Unknown, BadMargins, Late []string
		UnknownThresholds                  []string
		Conditions                         compare.Conditions
		PendingMarginSpec, PendingRole     string
	}
	tr := result(t, c.Arms, "treatment")
	p50 := metric(t, tr, "pending_p50_s")
	g := got{Baseline: c.Baseline, Alpha: c.Alpha, Primary: c.PrimaryMetrics, Unknown: c.UnknownMetricWords, BadMargins: c.BadMargins,
		Late: c.ThresholdsChangedAfterStart, UnknownThresholds: c.UnknownThresholds, Conditions: tr.Conditions,
		PendingMarginSpec: p50.Margin.Spec, PendingRole: p50.Role}
	want := got{
		Baseline: "control", Alpha: 0.1,
		Primary:           []string{"pending_p50_s", "pending_p95_s", "never_scheduled"},
		Unknown:           []string{"cost"},
		BadMargins:        []string{"margins.bogus: names no metric"},
		Late:              []string{"1"},
		UnknownThresholds: []string{"nonsense"},
		Conditions: compare.Conditions{GPUModels: []string{"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"}, Sharing: []string{"exclusive"},
			NodePools: []string{"a100", "gpu-pool-a"}, KubeletVersions: []string{"v1.36.4", "v1.37.2"}},
		PendingMarginSpec: "50%", PendingRole: compare.RolePrimary,
	}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("comparison (-want +got):\n%s", diff)
	}
	if !tr.Paired {
		t.Error("arms of the same repeats: paired false")
	}
	var bad *compare.BadBaselineError
	if _, err := compare.Build(in, "nobody"); !errors.As(err, &bad) {
		t.Errorf("unknown baseline: %v; want *BadBaselineError", err)
	}
}
