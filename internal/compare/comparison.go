package compare

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/events"
)

// Input is everything a comparison reads from the store about one experiment.
type Input struct {
	Experiment string
	Namespace  string
	// Definition is the latest definition received (nil without one) and DefinedAt when it
	// was received.
	Definition *events.Experiment
	DefinedAt  time.Time
	// Arms holds per arm and run what the run left.
	Arms map[string]map[string]RunData
	// Placement is, per arm, where its pods ran and why some waited.
	Placement map[string]*ArmPlacement
	// Nodes describes the nodes the pods ran on (latest snapshot of each).
	Nodes map[string]NodeInfo
	// NoMemo is Options.NoMemo.
	NoMemo bool `json:"-"`
}

// ArmPlacement is where an arm's pods ran and why some waited: pods by node, GPU model and GPU
// sharing mode (each pod counted once, from its latest snapshot that knew its GPU), and the
// FailedScheduling reasons, as node counts summed over the scheduler's notes.
type ArmPlacement struct {
	Nodes            map[string]int `json:"nodes"`
	GPUModels        map[string]int `json:"gpu_models"`
	Sharing          map[string]int `json:"sharing"`
	FailedScheduling map[string]int `json:"failed_scheduling_reasons"`
}

// NewArmPlacement returns an empty placement.
func NewArmPlacement() *ArmPlacement {
	return &ArmPlacement{Nodes: map[string]int{}, GPUModels: map[string]int{}, Sharing: map[string]int{}, FailedScheduling: map[string]int{}}
}

// NodeInfo is what a comparison needs of a node to say where a result holds.
type NodeInfo struct {
	Labels         map[string]string
	KubeletVersion string
}

// Conditions are what an arm was measured under, so that a result is not carried to nodes where
// it does not hold: the GPU models and sharing modes its pods got, the node pools and the
// kubelet (Kubernetes) versions of the nodes they ran on.
type Conditions struct {
	GPUModels       []string `json:"gpu_models"`
	Sharing         []string `json:"sharing"`
	NodePools       []string `json:"node_pools"`
	KubeletVersions []string `json:"kubelet_versions"`
}

// Comparison is the answer of /v1/experiments/{name}/comparison.
type Comparison struct {
	Experiment string `json:"experiment"`
	Namespace  string `json:"namespace,omitempty"`
	Baseline   string `json:"baseline"`
	Method     string `json:"method"`
	// Alpha is the family-wise error rate of the verdicts and 1 − the level of the intervals.
	Alpha float64 `json:"alpha"`
	// PrimaryMetrics are the metrics the definition's `metrics` named (or the default set);
	// UnknownMetricWords are the words of that list that name no metric.
	PrimaryMetrics     []string    `json:"primary_metrics"`
	UnknownMetricWords []string    `json:"unknown_metric_words"`
	Arms               []ArmResult `json:"arms"`
	// Placement is, per arm, where its pods ran and why some waited.
	Placement map[string]*ArmPlacement `json:"placement"`
	// UnknownThresholds are threshold keys of the definition that name no metric; BadMargins
	// the margins that could not be read.
	UnknownThresholds []string `json:"unknown_thresholds"`
	BadMargins        []string `json:"bad_margins"`
	// ThresholdsChangedAfterStart lists the runs whose first pod was created before the
	// definition in force was received: their rollback conditions were not fixed in advance.
	ThresholdsChangedAfterStart []string `json:"thresholds_changed_after_start"`
}

// Method describes the statistics, for the response and the terminal table.
const Method = "per-run values (a run's pods pooled; pending by Kaplan–Meier); across runs the mean; " +
	"arm − baseline paired by repeat when both ran the same repeats; 95% t intervals from the larger of the between-run " +
	"and the within-run (pod bootstrap) variance; primary metrics and guardrails called by Holm at family-wise alpha"

// BadBaselineError says the requested baseline arm has no pods.
type BadBaselineError struct {
	Experiment, Baseline string
	Arms                 []string
}

func (e *BadBaselineError) Error() string {
	return fmt.Sprintf("experiment %q has no pods in arm %q (arms: %v)", e.Experiment, e.Baseline, e.Arms)
}

// Build compares the arms of in with baseline (default: the definition's, else "control").
// It returns *BadBaselineError for a baseline without pods.
func Build(in Input, baseline string) (Comparison, error) {
	def := in.Definition
	if baseline == "" && def != nil {
		baseline = def.Baseline
	}
	if baseline == "" {
		baseline = "control"
	}
	armNames := slices.Sorted(maps.Keys(in.Arms))
	if !slices.Contains(armNames, baseline) {
		return Comparison{}, &BadBaselineError{Experiment: in.Experiment, Baseline: baseline, Arms: armNames}
	}
	c := Comparison{Experiment: in.Experiment, Namespace: in.Namespace, Baseline: baseline, Method: Method,
		UnknownThresholds: []string{}, UnknownMetricWords: []string{}, BadMargins: []string{}, ThresholdsChangedAfterStart: []string{},
		Placement: in.Placement}
	if c.Placement == nil {
		c.Placement = map[string]*ArmPlacement{}
	}
	o := Options{Seed: 20, NoMemo: in.NoMemo}
	var th []Threshold
	var metrics []string
	if def != nil {
		if def.Metrics != nil {
			metrics = def.Metrics.List
		}
		th, c.UnknownThresholds = Thresholds(def.Thresholds)
		o.Margins, c.BadMargins = Margins(def.Margins)
		if def.Alpha > 0 && def.Alpha < 1 {
			o.Alpha = def.Alpha
		}
	}
	o.Primary, c.UnknownMetricWords = PrimaryMetrics(metrics)
	c.PrimaryMetrics = o.Primary
	for _, s := range []*[]string{&c.UnknownThresholds, &c.UnknownMetricWords, &c.BadMargins} {
		if *s == nil {
			*s = []string{}
		}
	}
	var arms []ArmInput
	for _, name := range armNames {
		arms = append(arms, ArmInput{Name: name, Runs: in.Arms[name]})
	}
	c.Arms = Sorted(Compare(baseline, arms, th, o))
	c.Alpha = o.Alpha
	if c.Alpha == 0 {
		c.Alpha = 0.05
	}
	if def != nil && !in.DefinedAt.IsZero() {
		late := map[string]bool{}
		for _, byRun := range in.Arms {
			for run, rd := range byRun {
				if first := rd.FirstCreated(); !first.IsZero() && first.Before(in.DefinedAt) {
					late[run] = true
				}
			}
		}
		c.ThresholdsChangedAfterStart = slices.SortedFunc(maps.Keys(late), CompareRuns)
	}
	for i := range c.Arms {
		a := &c.Arms[i]
		a.Conditions = conditionsOf(in.Placement[a.Arm], in.Nodes)
	}
	return c, nil
}

func conditionsOf(p *ArmPlacement, nodes map[string]NodeInfo) Conditions {
	c := Conditions{GPUModels: []string{}, Sharing: []string{}, NodePools: []string{}, KubeletVersions: []string{}}
	if p == nil {
		return c
	}
	c.GPUModels = slices.Sorted(maps.Keys(p.GPUModels))
	c.Sharing = slices.Sorted(maps.Keys(p.Sharing))
	pools, versions := map[string]bool{}, map[string]bool{}
	for node := range p.Nodes {
		n, ok := nodes[node]
		if !ok {
			continue
		}
		if v := events.NodePool(n.Labels); v != "" {
			pools[v] = true
		}
		if n.KubeletVersion != "" {
			versions[n.KubeletVersion] = true
		}
	}
	c.NodePools = slices.Sorted(maps.Keys(pools))
	c.KubeletVersions = slices.Sorted(maps.Keys(versions))
	return c
}

// Thresholds reads an experiment definition's thresholds (e.g. p95_latency_ms: 800,
// error_rate: 0.01) as upper limits on metrics: a key naming a metric, or
// p<N>_latency_ms for latency_p<N>_ms, or <metric without _s>_ms for a metric in seconds.
// Keys that name no metric are returned apart.
func Thresholds(defs map[string]any) (out []Threshold, unknown []string) {
	for _, key := range slices.Sorted(maps.Keys(defs)) {
		v, ok := number(defs[key])
		if !ok {
			unknown = append(unknown, key)
			continue
		}
		metric := key
		if strings.HasSuffix(key, "_latency_ms") && strings.HasPrefix(key, "p") {
			metric = "latency_" + strings.TrimSuffix(key, "_latency_ms") + "_ms"
		}
		if _, known := metricIndex[metric]; !known && strings.HasSuffix(key, "_ms") {
			if _, ok := metricIndex[strings.TrimSuffix(key, "_ms")+"_s"]; ok {
				metric, v = strings.TrimSuffix(key, "_ms")+"_s", v/1000
			}
		}
		if _, known := metricIndex[metric]; !known {
			unknown = append(unknown, key)
			continue
		}
		limit := v
		out = append(out, Threshold{Name: key, Metric: metric, Max: &limit})
	}
	return out, unknown
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}
