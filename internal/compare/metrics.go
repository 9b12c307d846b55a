package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Direction says which way a metric improves.
type Direction int

// Directions.
const (
	LowerIsBetter Direction = iota
	HigherIsBetter
)

func (d Direction) String() string {
	if d == HigherIsBetter {
		return "higher"
	}
	return "lower"
}

// Group classifies metrics for the trade-off rule.
type Group string

// Groups: where the pod goes and how long it waits, versus what the service then feels.
const (
	Placement Group = "placement"
	Execution Group = "execution"
	Resource  Group = "resource"
)

// Roles of a metric in an arm's verdict.
const (
	// RolePrimary metrics are named by the definition's `metrics`; family-wise error control
	// (Holm) runs over them, and only they can make an arm an improvement.
	RolePrimary = "primary"
	// RoleGuardrail metrics are execution metrics that are not primary: significantly worse, they
	// keep an arm from being an improvement.
	RoleGuardrail = "guardrail"
	// RoleSecondary metrics are reported with intervals and do not decide a verdict.
	RoleSecondary = "secondary"
)

// Metric describes one compared quantity.
type Metric struct {
	Name      string
	Unit      string
	Direction Direction
	Group     Group
	// Guardrail marks the execution metrics that guard an improvement when they are not primary.
	Guardrail bool
	// Margin is the default equivalence margin.
	Margin Margin
}

// Margin is how far a difference may go, either way, and still count as equivalent: an
// absolute value in the metric's unit, or a fraction of the baseline's mean (never less than
// Floor, so that a tiny baseline does not make every difference count).
type Margin struct {
	Value    float64 // absolute, or the fraction when Relative
	Relative bool
	Floor    float64 // smallest absolute margin of a relative one
}

// Abs is the margin in the metric's unit for a baseline mean.
func (m Margin) Abs(baseline float64) float64 {
	if !m.Relative {
		return m.Value
	}
	return max(m.Value*math.Abs(baseline), m.Floor)
}

// String renders the margin as a definition writes it: "10%" or "0.5" (with the floor of a
// default relative margin: "10% (≥ 0.1)").
func (m Margin) String() string {
	if !m.Relative {
		return strconv.FormatFloat(m.Value, 'g', -1, 64)
	}
	s := strconv.FormatFloat(100*m.Value, 'g', -1, 64) + "%"
	if m.Floor > 0 {
		s += " (≥ " + strconv.FormatFloat(m.Floor, 'g', -1, 64) + ")"
	}
	return s
}

// ParseMargin reads a margin as a definition gives it: a number (absolute, in the metric's
// unit) or a percentage of the baseline ("10%").
func ParseMargin(v any) (Margin, error) {
	switch x := v.(type) {
	case float64:
		if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			return Margin{}, fmt.Errorf("margin %v: want a non-negative number", x)
		}
		return Margin{Value: x}, nil
	case int:
		return ParseMargin(float64(x))
	case string:
		s := strings.TrimSpace(x)
		if p, ok := strings.CutSuffix(s, "%"); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || f < 0 || math.IsInf(f, 0) {
				return Margin{}, fmt.Errorf("margin %q: want a non-negative percentage such as \"10%%\"", x)
			}
			return Margin{Value: f / 100, Relative: true}, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Margin{}, fmt.Errorf("margin %q: want a number or a percentage such as \"10%%\"", x)
		}
		return ParseMargin(f)
	}
	return Margin{}, fmt.Errorf("margin %v: want a number or a percentage such as \"10%%\"", v)
}

// Default margins: durations and latencies within 10 % of the baseline (but at least 0.1 s,
// 1 ms, 0.5 s of interruption), counts of pods per run within half a pod, the served error rate
// within half a percentage point, restarts within 0.1 per pod, GPU utilisation within 5 points.
var (
	relSeconds  = Margin{Value: 0.10, Relative: true, Floor: 0.1}
	relMillis   = Margin{Value: 0.10, Relative: true, Floor: 1}
	halfPod     = Margin{Value: 0.5}
	errorPoints = Margin{Value: 0.005}
)

// Metrics are what a comparison reports for every arm, in order.
var Metrics = []Metric{
	{Name: "pending_p50_s", Unit: "s", Group: Placement, Margin: relSeconds},
	{Name: "pending_p95_s", Unit: "s", Group: Placement, Margin: relSeconds},
	{Name: "pending_max_s", Unit: "s", Group: Placement, Margin: relSeconds},
	{Name: "never_scheduled", Unit: "pods", Group: Placement, Margin: halfPod},
	{Name: "gated_p95_s", Unit: "s", Group: Placement, Margin: relSeconds},
	{Name: "schedulable_wait_p95_s", Unit: "s", Group: Placement, Margin: relSeconds},
	{Name: "preemptions_suffered", Unit: "pods", Group: Placement, Margin: halfPod},
	{Name: "preemptions_caused", Unit: "pods", Group: Resource, Margin: halfPod},
	{Name: "start_p50_s", Unit: "s", Group: Execution, Margin: relSeconds},
	{Name: "model_load_p50_s", Unit: "s", Group: Execution, Guardrail: true, Margin: relSeconds},
	{Name: "time_to_first_success_p50_s", Unit: "s", Group: Execution, Guardrail: true, Margin: relSeconds},
	{Name: "time_to_first_success_p95_s", Unit: "s", Group: Execution, Guardrail: true, Margin: relSeconds},
	{Name: "latency_p50_ms", Unit: "ms", Group: Execution, Margin: relMillis},
	{Name: "latency_p95_ms", Unit: "ms", Group: Execution, Guardrail: true, Margin: relMillis},
	{Name: "latency_p99_ms", Unit: "ms", Group: Execution, Guardrail: true, Margin: relMillis},
	{Name: "error_rate", Unit: "ratio", Group: Execution, Guardrail: true, Margin: errorPoints},
	{Name: "pre_ready_errors", Unit: "errors/pod", Group: Execution, Margin: Margin{Value: 0.10, Relative: true, Floor: 1}},
	{Name: "restarts_per_pod", Unit: "restarts", Group: Execution, Guardrail: true, Margin: Margin{Value: 0.1}},
	{Name: "interruption_s", Unit: "s", Group: Execution, Guardrail: true, Margin: Margin{Value: 0.10, Relative: true, Floor: 0.5}},
	{Name: "gpu_util_mean_pct", Unit: "%", Direction: HigherIsBetter, Group: Resource, Margin: Margin{Value: 5}},
	{Name: "gpu_idle_s", Unit: "s", Group: Resource, Margin: Margin{Value: 0.10, Relative: true, Floor: 1}},
}

// metricIndex maps a metric name to its position in Metrics.
var metricIndex = func() map[string]int {
	m := make(map[string]int, len(Metrics))
	for i, x := range Metrics {
		m[x.Name] = i
	}
	return m
}()

// Metric indexes used by the per-run computation.
var (
	iPendingP50  = metricIndex["pending_p50_s"]
	iPendingP95  = metricIndex["pending_p95_s"]
	iPendingMax  = metricIndex["pending_max_s"]
	iNever       = metricIndex["never_scheduled"]
	iGated       = metricIndex["gated_p95_s"]
	iSchedWait   = metricIndex["schedulable_wait_p95_s"]
	iSuffered    = metricIndex["preemptions_suffered"]
	iCaused      = metricIndex["preemptions_caused"]
	iStart       = metricIndex["start_p50_s"]
	iLoad        = metricIndex["model_load_p50_s"]
	iTTFSP50     = metricIndex["time_to_first_success_p50_s"]
	iTTFSP95     = metricIndex["time_to_first_success_p95_s"]
	iLatencyP50  = metricIndex["latency_p50_ms"]
	iLatencyP95  = metricIndex["latency_p95_ms"]
	iLatencyP99  = metricIndex["latency_p99_ms"]
	iErrorRate   = metricIndex["error_rate"]
	iPreReady    = metricIndex["pre_ready_errors"]
	iRestarts    = metricIndex["restarts_per_pod"]
	iInterrupted = metricIndex["interruption_s"]
	iGPUUtil     = metricIndex["gpu_util_mean_pct"]
	iGPUIdle     = metricIndex["gpu_idle_s"]
)

// MetricNamed returns the metric of that name.
func MetricNamed(name string) (Metric, bool) {
	i, ok := metricIndex[name]
	if !ok {
		return Metric{}, false
	}
	return Metrics[i], true
}
