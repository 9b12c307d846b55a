package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/schedlens/schedlens/internal/compare"
)

// Against is GET /v1/experiments/{a}/against/{b}: what differs between two experiments'
// conditions, whether the baseline arm itself moved from a to b, and, for the arms both ran,
// whether their verdicts held.
type Against struct {
	A Link `json:"a"`
	B Link `json:"b"`
	// Differences are the conditions that differ, in a fixed order (definition, settings,
	// cluster, then arm by arm).
	Differences []Difference `json:"differences"`
	// Baseline compares a's baseline arm with the arm of that name in b, metric by metric.
	Baseline BaselineShift `json:"baseline"`
	// Arms are the arms of both, but the baseline, with their verdicts.
	Arms []ArmHeld `json:"arms"`
}

// Difference is one condition that is not the same: where (a path such as
// "arms.affinity.labels.nvidia.com/gpu.product" or "cluster.pools"), and its value in each.
type Difference struct {
	Path string `json:"path"`
	A    any    `json:"a"`
	B    any    `json:"b"`
}

// BaselineShift is the baseline arm of a against the same arm in b.
type BaselineShift struct {
	Arm     string        `json:"arm"`
	Metrics []MetricShift `json:"metrics"`
}

// MetricShift is one metric of the baseline in both and their difference b − a, with a 95 %
// interval from the two across-run intervals (half-widths added in quadrature: the experiments
// are independent and each mean is read as normal, as the comparison's t intervals do). Moved:
// the interval excludes 0; steady: it lies within ±the metric's margin; unclear otherwise. No
// correction for the number of metrics: a hint of where to look, not a verdict.
type MetricShift struct {
	Metric     string            `json:"metric"`
	Unit       string            `json:"unit"`
	A          compare.Interval  `json:"a"`
	B          compare.Interval  `json:"b"`
	Difference *compare.Interval `json:"difference"`
	Margin     *float64          `json:"margin"`
	Shift      string            `json:"shift"` // moved, steady, unclear, or unknown (an interval missing)
}

// Shift words.
const (
	ShiftMoved   = "moved"
	ShiftSteady  = "steady"
	ShiftUnclear = "unclear"
	ShiftUnknown = "unknown"
)

// ArmHeld is an arm both experiments ran: its verdict in each, and whether it held.
type ArmHeld struct {
	Arm  string `json:"arm"`
	A    string `json:"a_verdict"`
	B    string `json:"b_verdict"`
	Held bool   `json:"held"`
}

// Compare holds record a against record b.
func Compare(a, b Record) Against {
	out := Against{A: Link{Experiment: a.Experiment, Digest: a.Digest}, B: Link{Experiment: b.Experiment, Digest: b.Digest},
		Differences: []Difference{}, Arms: []ArmHeld{}}
	d := &out.Differences
	// The definition: every key of either (name and previous name the experiments themselves).
	keys := map[string]bool{}
	for k := range a.Definition.Keys {
		keys[k] = true
	}
	for k := range b.Definition.Keys {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if k == "name" || k == PreviousKey {
			continue
		}
		va, vb := a.Definition.Keys[k].Value, b.Definition.Keys[k].Value
		if !bytes.Equal(orNull(va), orNull(vb)) {
			*d = append(*d, Difference{Path: "definition." + k, A: raw(va), B: raw(vb)})
		}
	}
	diff(d, "schedlens.version", a.Schedlens.Version, b.Schedlens.Version)
	// Margins and thresholds are the definition's, compared above.
	sa, sb := a.Schedlens.Settings, b.Schedlens.Settings
	diff(d, "settings.method", sa.Method, sb.Method)
	diff(d, "settings.alpha", sa.Alpha, sb.Alpha)
	diff(d, "settings.baseline", sa.Baseline, sb.Baseline)
	diff(d, "settings.gpu_idle_threshold", sa.GPUIdleThreshold, sb.GPUIdleThreshold)
	diff(d, "settings.interruption_min_gap_seconds", sa.MinGapSeconds, sb.MinGapSeconds)
	poolsOf := func(r Record) map[string]Pool {
		m := map[string]Pool{}
		for _, p := range r.Cluster.Pools {
			m[p.Name] = p
		}
		return m
	}
	pa, pb := poolsOf(a), poolsOf(b)
	diff(d, "cluster.pools", slices.Sorted(maps.Keys(pa)), slices.Sorted(maps.Keys(pb)))
	for _, name := range slices.Sorted(maps.Keys(pa)) {
		if q, ok := pb[name]; ok {
			diff(d, "cluster.pools."+name, pa[name], q)
		}
	}
	armsOf := func(r Record) map[string]Arm {
		m := map[string]Arm{}
		for _, x := range r.Arms {
			m[x.Name] = x
		}
		return m
	}
	aa, ab := armsOf(a), armsOf(b)
	diff(d, "arms", slices.Sorted(maps.Keys(aa)), slices.Sorted(maps.Keys(ab)))
	for _, name := range slices.Sorted(maps.Keys(aa)) {
		y, ok := ab[name]
		if !ok {
			continue
		}
		x := aa[name]
		diff(d, "arms."+name+".specs", specsOnly(x.Specs), specsOnly(y.Specs))
		ca, cb := armConditions(x), armConditions(y)
		for _, what := range []string{"node_pools", "gpu_models", "sharing", "kubelet_versions"} {
			diff(d, "arms."+name+"."+what, ca[what], cb[what])
		}
		la, lb := armLabels(x), armLabels(y)
		lkeys := map[string]bool{}
		for k := range la {
			lkeys[k] = true
		}
		for k := range lb {
			lkeys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(lkeys)) {
			diff(d, "arms."+name+".labels."+k, orEmpty(la[k]), orEmpty(lb[k]))
		}
	}
	out.Baseline = baselineShift(a.Comparison, b.Comparison)
	results := func(c compare.Comparison) map[string]compare.ArmResult {
		m := map[string]compare.ArmResult{}
		for _, r := range c.Arms {
			m[r.Arm] = r
		}
		return m
	}
	ra, rb := results(a.Comparison), results(b.Comparison)
	for _, name := range slices.Sorted(maps.Keys(ra)) {
		y, ok := rb[name]
		if !ok || name == a.Comparison.Baseline {
			continue
		}
		out.Arms = append(out.Arms, ArmHeld{Arm: name, A: ra[name].Verdict, B: y.Verdict, Held: ra[name].Verdict == y.Verdict})
	}
	return out
}

// diff adds a difference at path when a and b are not the same (as JSON).
func diff(d *[]Difference, path string, a, b any) {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		*d = append(*d, Difference{Path: path, A: a, B: b})
	}
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// raw is a definition value as it is written (nil for a missing key).
func raw(v json.RawMessage) any {
	if len(v) == 0 {
		return nil
	}
	return json.RawMessage(v)
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// specsOnly are an arm's specs without their pod counts (a run with one pod more is not another
// condition).
func specsOnly(ss []Spec) []Spec {
	out := make([]Spec, len(ss))
	for i, s := range ss {
		s.Pods = 0
		out[i] = s
	}
	slices.SortFunc(out, func(x, y Spec) int {
		jx, _ := json.Marshal(x)
		jy, _ := json.Marshal(y)
		return bytes.Compare(jx, jy)
	})
	return out
}

// armConditions are the pools, GPU models, sharing modes and kubelet versions of the nodes an
// arm's runs used.
func armConditions(a Arm) map[string][]string {
	sets := map[string]map[string]bool{"node_pools": {}, "gpu_models": {}, "sharing": {}, "kubelet_versions": {}}
	for _, r := range a.Runs {
		for _, n := range r.Nodes {
			add := func(k, v string) {
				if v != "" {
					sets[k][v] = true
				}
			}
			add("node_pools", n.Pool)
			add("gpu_models", n.GPUModel)
			add("kubelet_versions", n.KubeletVersion)
			for _, s := range n.Sharing {
				add("sharing", s)
			}
		}
	}
	out := map[string][]string{}
	for k, s := range sets {
		out[k] = slices.Sorted(maps.Keys(s))
	}
	return out
}

// armLabels are, per node label key, the values the nodes an arm's runs used carried
// (kubernetes.io/hostname left out: a node's name is not a condition).
func armLabels(a Arm) map[string][]string {
	sets := map[string]map[string]bool{}
	for _, r := range a.Runs {
		for _, n := range r.Nodes {
			for k, v := range n.Labels {
				if k == "kubernetes.io/hostname" {
					continue
				}
				if sets[k] == nil {
					sets[k] = map[string]bool{}
				}
				sets[k][v] = true
			}
		}
	}
	out := map[string][]string{}
	for k, s := range sets {
		out[k] = slices.Sorted(maps.Keys(s))
	}
	return out
}

// baselineShift compares a's baseline arm with the same arm in b, metric by metric.
func baselineShift(a, b compare.Comparison) BaselineShift {
	out := BaselineShift{Arm: a.Baseline, Metrics: []MetricShift{}}
	find := func(c compare.Comparison) *compare.ArmResult {
		for i := range c.Arms {
			if c.Arms[i].Arm == a.Baseline {
				return &c.Arms[i]
			}
		}
		return nil
	}
	xa, xb := find(a), find(b)
	if xa == nil || xb == nil {
		return out
	}
	mb := map[string]compare.MetricResult{}
	for _, m := range xb.Metrics {
		mb[m.Metric] = m
	}
	for _, m := range xa.Metrics {
		n, ok := mb[m.Metric]
		if !ok {
			continue
		}
		s := MetricShift{Metric: m.Metric, Unit: m.Unit, A: m.AcrossRun, B: n.AcrossRun, Shift: ShiftUnknown}
		if m.Margin != nil {
			v := m.Margin.Value
			s.Margin = &v
		}
		if ha, hb, ok := halfWidths(m.AcrossRun, n.AcrossRun); ok {
			h := math.Hypot(ha, hb)
			mean := n.AcrossRun.Mean - m.AcrossRun.Mean
			lo, hi := mean-h, mean+h
			s.Difference = &compare.Interval{Mean: mean, Low: &lo, High: &hi, N: min(m.AcrossRun.N, n.AcrossRun.N)}
			switch {
			case lo > 0 || hi < 0:
				s.Shift = ShiftMoved
			case s.Margin != nil && lo >= -*s.Margin && hi <= *s.Margin:
				s.Shift = ShiftSteady
			default:
				s.Shift = ShiftUnclear
			}
		}
		out.Metrics = append(out.Metrics, s)
	}
	return out
}

// halfWidths are the half-widths of two intervals, false when either is missing.
func halfWidths(a, b compare.Interval) (float64, float64, bool) {
	if a.Low == nil || a.High == nil || b.Low == nil || b.High == nil {
		return 0, 0, false
	}
	return (*a.High - *a.Low) / 2, (*b.High - *b.Low) / 2, true
}

// String is a one-line summary, for logs.
func (a Against) String() string {
	var paths []string
	for _, d := range a.Differences {
		paths = append(paths, d.Path)
	}
	return fmt.Sprintf("%s against %s: %d differences (%s)", a.A.Experiment, a.B.Experiment, len(a.Differences), strings.Join(paths, ", "))
}
