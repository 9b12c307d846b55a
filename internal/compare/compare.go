// Package compare compares the arms of an experiment with its baseline across repeats. It is
// pure: per-run metric values in, intervals and verdicts out.
//
// Method. Each metric is measured once per run (repeat) of each arm (a run's pods pooled: a p95
// is the p95 of that run's pods). Across runs an arm's value is the mean of its run values with
// a 95 % Student-t interval (n−1 degrees of freedom). Against the baseline the difference of the
// means has a 95 % Welch–Satterthwaite t interval. A metric's verdict (better, worse or
// no_difference, aware of its direction) uses the same kind of interval at a family-wise level
// of 1 % over all the metrics compared (Bonferroni: each at 1 %/m), so that an arm identical to
// the baseline is called no_effect in about 99 % of experiments however many metrics are
// compared. Runs are the unit: pods of one run share a cluster state, so they are not
// independent observations; the price is power — with 2–3 repeats only large effects get a
// verdict, which the intervals make visible.
package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Direction says which way a metric improves.
type Direction int

// Directions.
const (
	LowerIsBetter Direction = iota
	HigherIsBetter
)

// Group classifies metrics for the trade-off rule.
type Group string

// Groups: where the pod goes and how long it waits, versus what the service then feels.
const (
	Placement Group = "placement"
	Execution Group = "execution"
	Resource  Group = "resource"
)

// Metric describes one compared quantity.
type Metric struct {
	Name      string
	Unit      string
	Direction Direction
	Group     Group
}

// Verdicts per metric.
const (
	Better       = "better"
	Worse        = "worse"
	NoDifference = "no_difference"
	Insufficient = "insufficient_data"
)

// Overall verdicts.
const (
	Improvement      = "improvement"
	Regression       = "regression"
	TradeOff         = "trade_off"
	NoEffect         = "no_effect"
	InsufficientData = "insufficient_data"
)

// Interval is a mean with its 95 % interval.
type Interval struct {
	Mean float64  `json:"mean"`
	Low  *float64 `json:"ci95_low"`
	High *float64 `json:"ci95_high"`
	N    int      `json:"runs"`
}

// MetricResult is one metric of one arm.
type MetricResult struct {
	Metric    string    `json:"metric"`
	Unit      string    `json:"unit"`
	Better    string    `json:"better_when"` // "lower" or "higher"
	Runs      []float64 `json:"runs"`        // one value per run, in run order (NaN-free)
	AcrossRun Interval  `json:"across_runs"`
	// Difference is arm − baseline with its 95 % interval; nil for the baseline itself.
	Difference *Interval `json:"difference,omitempty"`
	Verdict    string    `json:"verdict,omitempty"`
}

// ArmInput is one arm's per-run metric values: metric name → values, one per run (a run that
// has no value for a metric simply leaves it out).
type ArmInput struct {
	Name    string
	Pods    int // scheduled or not, over all runs
	Metrics map[string][]float64
}

// ArmResult is one arm's comparison.
type ArmResult struct {
	Arm         string         `json:"arm"`
	Baseline    bool           `json:"baseline"`
	Runs        int            `json:"runs"`
	Pods        int            `json:"pods"`
	Metrics     []MetricResult `json:"metrics"`
	Verdict     string         `json:"verdict,omitempty"`
	Explanation string         `json:"explanation,omitempty"`
	Breaches    []string       `json:"threshold_breaches"`
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
	MinRuns int     // fewer runs than this on either side is insufficient_data (default 2)
	MinPods int     // fewer pods than this on either side is insufficient_data (default 3)
	Alpha   float64 // of the reported intervals (default 0.05: 95 %)
	// FamilyAlpha bounds the chance that any metric of an arm gets a verdict other than
	// no_difference when the arm equals the baseline (default 0.01).
	FamilyAlpha float64
}

// Compare compares every arm with the baseline over the given metrics.
func Compare(metrics []Metric, baseline string, arms []ArmInput, thresholds []Threshold, o Options) []ArmResult {
	if o.MinRuns == 0 {
		o.MinRuns = 2
	}
	if o.MinPods == 0 {
		o.MinPods = 3
	}
	if o.Alpha == 0 {
		o.Alpha = 0.05
	}
	if o.FamilyAlpha == 0 {
		o.FamilyAlpha = 0.01
	}
	var base *ArmInput
	for i := range arms {
		if arms[i].Name == baseline {
			base = &arms[i]
		}
	}
	// Bonferroni over the metrics both sides measured.
	adjusted := o.FamilyAlpha / float64(max(len(metrics), 1))
	var out []ArmResult
	for _, a := range arms {
		r := ArmResult{Arm: a.Name, Baseline: a.Name == baseline, Pods: a.Pods, Breaches: []string{}}
		for _, m := range metrics {
			vals := a.Metrics[m.Name]
			r.Runs = max(r.Runs, len(vals))
			mr := MetricResult{Metric: m.Name, Unit: m.Unit, Better: m.Direction.String(), Runs: vals, AcrossRun: meanInterval(vals, o.Alpha)}
			if !r.Baseline && base != nil {
				bvals := base.Metrics[m.Name]
				if d, ok := welch(vals, bvals, o.Alpha); ok {
					mr.Difference = &d
					mr.Verdict = NoDifference
					if dd, _ := welch(vals, bvals, adjusted); dd.Low != nil && (*dd.Low > 0 || *dd.High < 0) {
						up := *dd.Low > 0
						if up == (m.Direction == HigherIsBetter) {
							mr.Verdict = Better
						} else {
							mr.Verdict = Worse
						}
					}
				} else {
					mr.Verdict = Insufficient
				}
			}
			r.Metrics = append(r.Metrics, mr)
		}
		for _, th := range thresholds {
			for _, mr := range r.Metrics {
				if mr.Metric != th.Metric || mr.AcrossRun.N == 0 {
					continue
				}
				v := mr.AcrossRun.Mean
				if th.Max != nil && v > *th.Max {
					r.Breaches = append(r.Breaches, fmt.Sprintf("%s: %s %.4g > %.4g", th.Name, th.Metric, v, *th.Max))
				}
				if th.Min != nil && v < *th.Min {
					r.Breaches = append(r.Breaches, fmt.Sprintf("%s: %s %.4g < %.4g", th.Name, th.Metric, v, *th.Min))
				}
			}
		}
		if !r.Baseline {
			r.Verdict, r.Explanation = overall(metrics, r, base, o)
		}
		out = append(out, r)
	}
	return out
}

// overall turns per-metric verdicts into the arm's verdict and a one-line explanation.
func overall(metrics []Metric, r ArmResult, base *ArmInput, o Options) (string, string) {
	switch {
	case base == nil:
		return InsufficientData, "no baseline arm to compare with"
	case r.Runs < o.MinRuns || runsOf(*base) < o.MinRuns:
		return InsufficientData, fmt.Sprintf("%d runs of this arm and %d of the baseline; at least %d each are needed", r.Runs, runsOf(*base), o.MinRuns)
	case r.Pods < o.MinPods || base.Pods < o.MinPods:
		return InsufficientData, fmt.Sprintf("%d pods in this arm and %d in the baseline; at least %d each are needed", r.Pods, base.Pods, o.MinPods)
	}
	group := map[string]Group{}
	for _, m := range metrics {
		group[m.Name] = m.Group
	}
	var better, worse, betterPlacement, worseExecution []string
	for _, mr := range r.Metrics {
		switch mr.Verdict {
		case Better:
			better = append(better, mr.Metric)
			if group[mr.Metric] == Placement {
				betterPlacement = append(betterPlacement, mr.Metric)
			}
		case Worse:
			worse = append(worse, mr.Metric)
			if group[mr.Metric] == Execution {
				worseExecution = append(worseExecution, mr.Metric)
			}
		}
	}
	list := func(xs []string) string { return strings.Join(xs, ", ") }
	switch {
	case len(betterPlacement) > 0 && len(worseExecution) > 0:
		return TradeOff, fmt.Sprintf("placement improved (%s) but execution got worse (%s): the problem moved from scheduling to execution", list(betterPlacement), list(worseExecution))
	case len(better) > 0 && len(worse) > 0:
		return TradeOff, fmt.Sprintf("better on %s, worse on %s", list(better), list(worse))
	case len(better) > 0:
		return Improvement, fmt.Sprintf("better on %s, worse on nothing", list(better))
	case len(worse) > 0:
		return Regression, fmt.Sprintf("worse on %s, better on nothing", list(worse))
	}
	return NoEffect, "no metric differs from the baseline beyond chance (family-wise 1 %, Bonferroni over the metrics)"
}

func runsOf(a ArmInput) int {
	n := 0
	for _, v := range a.Metrics {
		n = max(n, len(v))
	}
	return n
}

func (d Direction) String() string {
	if d == HigherIsBetter {
		return "higher"
	}
	return "lower"
}

// meanInterval is the mean of xs with its (1−alpha) Student-t interval (no interval for fewer
// than two values).
func meanInterval(xs []float64, alpha float64) Interval {
	iv := Interval{N: len(xs)}
	if len(xs) == 0 {
		return iv
	}
	mean, sd := stat.MeanStdDev(xs, nil)
	iv.Mean = mean
	if len(xs) < 2 {
		return iv
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(xs) - 1)}.Quantile(1 - alpha/2)
	half := t * sd / math.Sqrt(float64(len(xs)))
	lo, hi := mean-half, mean+half
	iv.Low, iv.High = &lo, &hi
	return iv
}

// welch is the mean difference a − b with its (1−alpha) Welch–Satterthwaite interval; false
// when either side has fewer than two values.
func welch(a, b []float64, alpha float64) (Interval, bool) {
	if len(a) < 2 || len(b) < 2 {
		return Interval{}, false
	}
	ma, va := stat.MeanVariance(a, nil)
	mb, vb := stat.MeanVariance(b, nil)
	sa, sb := va/float64(len(a)), vb/float64(len(b))
	diff := ma - mb
	iv := Interval{Mean: diff, N: min(len(a), len(b))}
	se := math.Sqrt(sa + sb)
	if se == 0 {
		// Both sides constant: the difference is exact.
		iv.Low, iv.High = &diff, &diff
		return iv, true
	}
	df := (sa + sb) * (sa + sb) / (sa*sa/float64(len(a)-1) + sb*sb/float64(len(b)-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - alpha/2)
	lo, hi := diff-t*se, diff+t*se
	iv.Low, iv.High = &lo, &hi
	return iv, true
}

// Sorted returns results with the baseline first, then arms by name.
func Sorted(rs []ArmResult) []ArmResult {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b ArmResult) int {
		switch {
		case a.Baseline != b.Baseline:
			if a.Baseline {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Arm, b.Arm)
	})
	return out
}
