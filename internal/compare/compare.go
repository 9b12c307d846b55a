package compare

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Per-metric verdicts (outcomes) against the baseline.
const (
	Better       = "better"
	Worse        = "worse"
	Equivalent   = "equivalent"   // the whole 95 % interval of the difference lies within ±margin
	Inconclusive = "inconclusive" // the data cannot decide yet
	Insufficient = "insufficient_data"
)

// Arm verdicts.
const (
	Improvement      = "improvement"
	Regression       = "regression"
	TradeOff         = "trade_off"
	NoEffect         = "no_effect"
	InconclusiveArm  = "inconclusive"
	InsufficientData = "insufficient_data"
)

// Interval is a mean with its 95 % interval.
type Interval struct {
	Mean float64  `json:"mean"`
	Low  *float64 `json:"ci95_low"`
	High *float64 `json:"ci95_high"`
	N    int      `json:"runs"`
}

// MarginResult is the equivalence margin a metric was judged with: ±Value in the metric's unit,
// from Spec (a definition's value, or the default).
type MarginResult struct {
	Value float64 `json:"value"`
	Spec  string  `json:"spec"`
}

// MetricResult is one metric of one arm.
type MetricResult struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Better string `json:"better_when"` // "lower" or "higher"
	Role   string `json:"role"`        // primary, guardrail or secondary
	// Runs holds one value per run, in run order (runs without a value left out).
	Runs      []float64 `json:"runs"`
	AcrossRun Interval  `json:"across_runs"`
	// LowerBound says some run value is only a lower bound (pods still Pending when observation
	// ended leave a quantile undetermined); CensoredPods counts those pods over the runs.
	LowerBound   bool `json:"lower_bound,omitempty"`
	CensoredPods int  `json:"censored_pods,omitempty"`
	// Difference is arm − baseline with its 95 % interval; nil for the baseline itself.
	Difference *Interval     `json:"difference,omitempty"`
	Margin     *MarginResult `json:"margin,omitempty"`
	Verdict    string        `json:"verdict,omitempty"`
	// PValue is the two-sided p-value of "no difference" (before the Holm adjustment primary
	// metrics get); VarianceFrom says whether runs or pods set the interval's width.
	PValue        *float64 `json:"p_value,omitempty"`
	VarianceFrom  string   `json:"variance_from,omitempty"`
	RepeatsNeeded *int     `json:"repeats_needed,omitempty"`
}

// ArmInput is one arm's runs by run name.
type ArmInput struct {
	Name string
	Runs map[string]RunData
}

// Rollback says whether an arm breached a rollback condition (a threshold fixed before the run).
type Rollback struct {
	Required bool     `json:"required"`
	Reasons  []string `json:"reasons"`
}

// ArmResult is one arm's comparison.
type ArmResult struct {
	Arm      string `json:"arm"`
	Baseline bool   `json:"baseline"`
	Runs     int    `json:"runs"`
	Pods     int    `json:"pods"`
	// Paired says the differences were taken run by run (both arms ran the same repeats).
	Paired        bool           `json:"paired"`
	Metrics       []MetricResult `json:"metrics"`
	Verdict       string         `json:"verdict,omitempty"`
	Explanation   string         `json:"explanation,omitempty"`
	RepeatsNeeded *int           `json:"repeats_needed"`
	Breaches      []string       `json:"threshold_breaches"`
	Rollback      Rollback       `json:"rollback"`
	Conditions    Conditions     `json:"conditions"`
}

// Threshold is a limit set before the run: the arm breaches it when its across-run mean of
// Metric is above Max (or below Min).
type Threshold struct {
	Name   string
	Metric string
	Max    *float64
	Min    *float64
}

// Options tune the comparison.
type Options struct {
	MinRuns int // fewer runs than this on either side is insufficient_data (default 2)
	MinPods int // fewer pods than this on either side is insufficient_data (default 3)
	// Alpha is the family-wise error rate of the primary metrics (Holm), of the guardrails
	// (Holm), and 1 − the level of every reported interval (default 0.05).
	Alpha float64
	// Primary names the primary metrics (default DefaultPrimary).
	Primary []string
	// Margins overrides the default equivalence margin of metrics.
	Margins map[string]Margin
	// Replicates is the number of within-run bootstrap resamples of the pods (default 400).
	Replicates int
	// Seed makes the resampling reproducible (mixed with the arm's name).
	Seed uint64
	// NoMemo computes every run's bootstrap afresh instead of taking unchanged runs from the
	// memo (memo.go); the results are the same. The read bench's baseline.
	NoMemo bool
}

func (o *Options) defaults() {
	if o.MinRuns == 0 {
		o.MinRuns = 2
	}
	if o.MinPods == 0 {
		o.MinPods = 3
	}
	if o.Alpha == 0 {
		o.Alpha = 0.05
	}
	if o.Primary == nil {
		o.Primary = DefaultPrimary
	}
	if o.Replicates == 0 {
		o.Replicates = 400
	}
}

// Compare compares every arm with the baseline over Metrics.
func Compare(baseline string, arms []ArmInput, thresholds []Threshold, o Options) []ArmResult {
	o.defaults()
	primary := map[string]bool{}
	for _, p := range o.Primary {
		primary[p] = true
	}
	samples := make([]armSample, len(arms))
	for i, a := range arms {
		runs := slices.SortedFunc(maps.Keys(a.Runs), CompareRuns)
		data := make([]RunData, len(runs))
		for j, r := range runs {
			data[j] = a.Runs[r]
		}
		memo := runMemo
		if o.NoMemo {
			memo = nil
		}
		samples[i] = newArmSample(a.Name, runs, data, o.Replicates, seededRand(o.Seed, a.Name), memo)
	}
	var base *armSample
	for i := range samples {
		if samples[i].name == baseline {
			base = &samples[i]
		}
	}
	var out []ArmResult
	for _, a := range samples {
		r := ArmResult{Arm: a.name, Baseline: a.name == baseline, Runs: len(a.runs), Pods: a.pods, Breaches: []string{}, Rollback: Rollback{Reasons: []string{}}}
		if base != nil && !r.Baseline {
			r.Paired = len(a.runs) >= 2 && slices.Equal(a.runs, base.runs)
		}
		var ests []*estimate
		for m, metric := range Metrics {
			_, xs, _, _, lower := a.values(m)
			mr := MetricResult{Metric: metric.Name, Unit: metric.Unit, Better: metric.Direction.String(), Role: roleOf(metric, primary), Runs: xs, LowerBound: lower}
			if mr.Runs == nil {
				mr.Runs = []float64{}
			}
			if m <= iPendingMax {
				for _, c := range a.censored {
					mr.CensoredPods += c
				}
			}
			mr.AcrossRun = Interval{N: len(xs)}
			if e, ok := armEstimate(a, m); ok {
				mr.AcrossRun.Mean = e.mean
				mr.AcrossRun.Low, mr.AcrossRun.High = e.interval(o.Alpha)
			}
			var est *estimate
			if !r.Baseline && base != nil {
				if e, ok := diffEstimate(a, *base, m, r.Paired); ok {
					est = &e
					lo, hi := e.interval(o.Alpha)
					mr.Difference = &Interval{Mean: e.mean, Low: lo, High: hi, N: e.n}
					p := e.pValue()
					mr.PValue, mr.VarianceFrom = &p, e.source
					bmean, _ := armEstimate(*base, m)
					mg := metric.Margin
					if x, ok := o.Margins[metric.Name]; ok {
						mg = x
					}
					mr.Margin = &MarginResult{Value: mg.Abs(bmean.mean), Spec: mg.String()}
				} else {
					mr.Verdict = Insufficient
				}
			}
			ests = append(ests, est)
			r.Metrics = append(r.Metrics, mr)
		}
		if !r.Baseline && base != nil {
			judge(r.Metrics, ests, *base, o)
		}
		r.Breaches = breaches(r.Metrics, thresholds)
		r.Rollback = Rollback{Required: len(r.Breaches) > 0, Reasons: slices.Clone(r.Breaches)}
		if !r.Baseline {
			r.Verdict, r.Explanation, r.RepeatsNeeded = overall(r, base, o)
		}
		out = append(out, r)
	}
	return out
}

func roleOf(m Metric, primary map[string]bool) string {
	switch {
	case primary[m.Name]:
		return RolePrimary
	case m.Guardrail:
		return RoleGuardrail
	}
	return RoleSecondary
}

// judge gives every metric with a difference its verdict. Primary metrics are called better or
// worse by Holm's step-down procedure at family-wise Alpha over the primary metrics (two-sided).
// Guardrails only veto, so they are tested for harm: worse by Holm at family-wise Alpha over
// one-sided p-values (better, for information, two-sided like the primaries). Secondary metrics
// are each called at Alpha. A metric not called is equivalent when its 95 % interval lies within
// ±margin, else inconclusive.
func judge(ms []MetricResult, ests []*estimate, base armSample, o Options) {
	significant := map[int]bool{}
	// A metric equal on both sides with no variation at all (no pod of either arm was
	// preempted, say) can never be called, so it does not enlarge a family (Tarone, 1990).
	var primary, guardrail []int
	for i := range ms {
		switch {
		case ests[i] == nil || ests[i].source == Exact && ests[i].mean == 0:
		case ms[i].Role == RolePrimary:
			primary = append(primary, i)
		case ms[i].Role == RoleGuardrail:
			guardrail = append(guardrail, i)
		}
	}
	for _, i := range holm(primary, func(i int) float64 { return *ms[i].PValue }, o.Alpha) {
		significant[i] = true
	}
	worseUp := func(i int) bool { return Metrics[i].Direction == LowerIsBetter }
	harmful := map[int]bool{}
	for _, i := range holm(guardrail, func(i int) float64 { return ests[i].pWorse(worseUp(i)) }, o.Alpha) {
		harmful[i] = true
	}
	for _, i := range holm(guardrail, func(i int) float64 { return *ms[i].PValue }, o.Alpha) {
		if !harmful[i] && (ests[i].mean > 0) != worseUp(i) {
			significant[i] = true // better, beyond chance
		}
	}
	for i := range harmful {
		significant[i] = true
	}
	for i := range ms {
		mr, e := &ms[i], ests[i]
		if e == nil {
			continue
		}
		if mr.Role == RoleSecondary && *mr.PValue <= o.Alpha {
			significant[i] = true
		}
		metric := Metrics[i]
		worse := (e.mean > 0) == (metric.Direction == LowerIsBetter)
		lo, hi := *mr.Difference.Low, *mr.Difference.High
		switch {
		case significant[i] && worse:
			mr.Verdict = Worse
		case significant[i]:
			mr.Verdict = Better
		case -mr.Margin.Value <= lo && hi <= mr.Margin.Value:
			mr.Verdict = Equivalent
		default:
			mr.Verdict = Inconclusive
		}
		// A lower bound on one side limits what can be said: an arm whose value is only a lower
		// bound can still be shown worse (lower is better), never better or equivalent.
		_, _, _, _, baseLower := base.values(i)
		armLower := mr.LowerBound
		if armLower || baseLower {
			canWorse := armLower && !baseLower && metric.Direction == LowerIsBetter && mr.Verdict == Worse
			canBetter := baseLower && !armLower && metric.Direction == LowerIsBetter && mr.Verdict == Better
			if !canWorse && !canBetter {
				mr.Verdict = Inconclusive
			}
		}
		if mr.Verdict == Inconclusive {
			level := o.Alpha
			if mr.Role == RolePrimary {
				level = o.Alpha / float64(max(len(o.Primary), 1))
			}
			if n, ok := repeatsToDecide(*e, mr.Margin.Value, level); ok {
				mr.RepeatsNeeded = &n
			}
		}
	}
}

// holm returns the members of family whose p-values Holm's step-down procedure rejects at
// family-wise level alpha (Holm, 1979): sorted by p, the k-th smallest is rejected while
// p ≤ alpha/(m−k+1).
func holm(family []int, p func(int) float64, alpha float64) []int {
	sorted := slices.Clone(family)
	slices.SortStableFunc(sorted, func(a, b int) int { return cmp.Compare(p(a), p(b)) })
	var out []int
	for k, i := range sorted {
		if p(i) > alpha/float64(len(sorted)-k) {
			break
		}
		out = append(out, i)
	}
	return out
}

// repeatsToDecide is how many repeats would let the interval either exclude zero or fit within
// the margin, whichever comes first, at the variance observed.
func repeatsToDecide(e estimate, margin, alpha float64) (int, bool) {
	best, found := 0, false
	if n, ok := e.repeatsFor(math.Abs(e.mean), alpha); ok {
		best, found = n, true
	}
	if math.Abs(e.mean) < margin {
		if n, ok := e.repeatsFor(margin-math.Abs(e.mean), alpha); ok && (!found || n < best) {
			best, found = n, true
		}
	}
	return best, found
}

func breaches(ms []MetricResult, thresholds []Threshold) []string {
	out := []string{}
	for _, th := range thresholds {
		for _, mr := range ms {
			if mr.Metric != th.Metric || mr.AcrossRun.N == 0 {
				continue
			}
			v := mr.AcrossRun.Mean
			if th.Max != nil && v > *th.Max {
				out = append(out, fmt.Sprintf("%s: %s %.4g > %.4g", th.Name, th.Metric, v, *th.Max))
			}
			if th.Min != nil && v < *th.Min {
				out = append(out, fmt.Sprintf("%s: %s %.4g < %.4g", th.Name, th.Metric, v, *th.Min))
			}
		}
	}
	return out
}

// overall turns per-metric verdicts into the arm's verdict, a one-line explanation and, for an
// inconclusive arm, the repeats that would decide its primary metrics.
func overall(r ArmResult, base *armSample, o Options) (string, string, *int) {
	switch {
	case base == nil:
		return InsufficientData, "no baseline arm to compare with", nil
	case r.Runs < o.MinRuns || len(base.runs) < o.MinRuns:
		return InsufficientData, fmt.Sprintf("%d runs of this arm and %d of the baseline; at least %d each are needed", r.Runs, len(base.runs), o.MinRuns), nil
	case r.Pods < o.MinPods || base.pods < o.MinPods:
		return InsufficientData, fmt.Sprintf("%d pods in this arm and %d in the baseline; at least %d each are needed", r.Pods, base.pods, o.MinPods), nil
	}
	var better, worse, betterPlacement, worseExecution, notEquivalent, primaries []string
	need, needKnown := 0, true
	for i, mr := range r.Metrics {
		switch mr.Role {
		case RolePrimary:
			primaries = append(primaries, mr.Metric)
			switch mr.Verdict {
			case Better:
				better = append(better, mr.Metric)
				if Metrics[i].Group == Placement {
					betterPlacement = append(betterPlacement, mr.Metric)
				}
			case Worse:
				worse = append(worse, mr.Metric)
			case Inconclusive, Insufficient:
				notEquivalent = append(notEquivalent, mr.Metric)
				if mr.RepeatsNeeded != nil {
					need = max(need, *mr.RepeatsNeeded)
				} else {
					needKnown = false
				}
			}
		case RoleGuardrail:
			if mr.Verdict == Worse {
				worse = append(worse, mr.Metric)
			}
		}
		if mr.Verdict == Worse && Metrics[i].Group == Execution {
			if mr.Role != RoleSecondary {
				worseExecution = append(worseExecution, mr.Metric)
			}
		}
	}
	list := func(xs []string) string { return strings.Join(xs, ", ") }
	switch {
	case len(betterPlacement) > 0 && len(worseExecution) > 0:
		return TradeOff, fmt.Sprintf("placement improved (%s) but execution got worse (%s): the problem moved from scheduling to execution", list(betterPlacement), list(worseExecution)), nil
	case len(better) > 0 && len(worse) > 0:
		return TradeOff, fmt.Sprintf("better on %s, worse on %s", list(better), list(worse)), nil
	case len(better) > 0:
		return Improvement, fmt.Sprintf("better on %s, worse on no primary metric or guardrail", list(better)), nil
	case len(worse) > 0:
		return Regression, fmt.Sprintf("worse on %s, better on no primary metric", list(worse)), nil
	case len(notEquivalent) == 0:
		return NoEffect, fmt.Sprintf("every primary metric (%s) is equivalent to the baseline within its margin, and no guardrail is worse", list(primaries)), nil
	}
	expl := fmt.Sprintf("not yet decided: %s neither differ from the baseline beyond chance nor lie within their margins", list(notEquivalent))
	if !needKnown {
		return InconclusiveArm, expl + "; at the variance observed, more than 1000 repeats (or more data per run) would be needed", nil
	}
	return InconclusiveArm, fmt.Sprintf("%s; at the variance observed, about %d repeats would decide them", expl, need), &need
}

// Sorted returns results with the baseline first, then arms by name.
func Sorted(rs []ArmResult) []ArmResult {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b ArmResult) int {
		if a.Baseline != b.Baseline {
			if a.Baseline {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Arm, b.Arm)
	})
	return out
}

// CompareRuns orders run names: shorter names first, then lexically — numeric order for run
// numbers without leading zeros ("2" before "10"), a stable order for any other names.
func CompareRuns(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}
