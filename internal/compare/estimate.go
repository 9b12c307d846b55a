package compare

import (
	"hash/fnv"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Variance sources: where the uncertainty of an estimate was read from.
const (
	// FromRuns: the spread of the run values (between repeats) was the larger, so the interval
	// has the runs' few degrees of freedom.
	FromRuns = "runs"
	// FromPods: the pods and requests within the runs explain the spread between runs, so the
	// interval uses the within-run (pod bootstrap) variance and its degrees of freedom.
	FromPods = "pods"
	// Exact: no variation at all on either side.
	Exact = "exact"
)

// armSample is one arm's runs, ready for estimation: per run and metric the value on all pods,
// whether it is a lower bound, and the within-run variance of that value.
type armSample struct {
	name     string
	runs     []string
	pods     int
	point    [][]float64 // [run][metric]
	lower    [][]bool
	censored []int
	// wvar is the variance of each run value due to the pods (and requests) that happened to make
	// up the run: a bootstrap over the run's pods, scaled by P/(P−1) for the bootstrap's
	// shrinkage. wdf is P−1, the degrees of freedom it rests on.
	wvar [][]float64
	wdf  []int
}

// newArmSample computes the run values and their within-run bootstrap variances with
// replicates resamples of each run's pods; rng makes it reproducible.
func newArmSample(name string, runs []string, data []RunData, replicates int, src *rand.PCG, memo *memo) armSample {
	rng := rand.New(src)
	nm := len(Metrics)
	a := armSample{name: name, runs: runs}
	var scratch runScratch
	vals := make([][]float64, replicates)
	for b := range vals {
		vals[b] = make([]float64, nm)
	}
	lowerScratch := make([]bool, nm)
	for _, rd := range data {
		f := newRunFrame(rd)
		a.pods += len(f.pods)
		// A run already computed from the same pods and the same generator state gives the same
		// values and leaves the generator in the same state: take them from the memo.
		var key string
		if memo != nil {
			key = runKey(f, replicates, src)
		}
		if m, ok := memo.get(key); ok {
			a.censored, a.point, a.lower = append(a.censored, m.censored), append(a.point, m.point), append(a.lower, m.lower)
			a.wdf, a.wvar = append(a.wdf, m.wdf), append(a.wvar, m.wvar)
			if err := src.UnmarshalBinary(m.state); err != nil {
				panic(err) // a state MarshalBinary wrote always reads back
			}
			continue
		}
		a.runResult(f, replicates, rng, &scratch, vals, lowerScratch)
		if memo != nil {
			state, err := src.MarshalBinary()
			if err != nil {
				panic(err) // PCG's MarshalBinary cannot fail
			}
			last := len(a.point) - 1
			memo.put(key, runMemoEntry{point: a.point[last], lower: a.lower[last], censored: a.censored[last], wvar: a.wvar[last], wdf: a.wdf[last], state: state})
		}
	}
	return a
}

// runResult computes one run's values and within-run variances and appends them to a.
func (a *armSample) runResult(f *runFrame, replicates int, rng *rand.Rand, scratch *runScratch, vals [][]float64, lowerScratch []bool) {
	nm := len(Metrics)
	all := make([]int, len(f.pods))
	for i := range all {
		all[i] = i
	}
	point, lower := make([]float64, nm), make([]bool, nm)
	a.censored = append(a.censored, f.metrics(all, scratch, point, lower))
	a.point, a.lower = append(a.point, point), append(a.lower, lower)

	wvar := make([]float64, nm)
	p := len(f.pods)
	a.wdf = append(a.wdf, max(p-1, 0))
	if p < 2 || replicates < 2 {
		a.wvar = append(a.wvar, wvar) // no within-run variation can be estimated: 0
		return
	}
	idx := make([]int, p)
	for b := range replicates {
		for i := range idx {
			idx[i] = rng.IntN(p)
		}
		f.metrics(idx, scratch, vals[b], lowerScratch)
	}
	col := make([]float64, 0, replicates)
	for m := range nm {
		col = col[:0]
		for b := range replicates {
			if v := vals[b][m]; !math.IsNaN(v) {
				col = append(col, v)
			}
		}
		if len(col) >= 2 {
			wvar[m] = stat.Variance(col, nil) * float64(p) / float64(p-1)
		}
	}
	a.wvar = append(a.wvar, wvar)
}

// values returns the run values of metric m (runs without one left out) with their within-run
// variances and degrees of freedom, and whether any is a lower bound.
func (a armSample) values(m int) (runs []string, xs, wv []float64, wdf []int, lower bool) {
	for r := range a.point {
		if v := a.point[r][m]; !math.IsNaN(v) {
			runs, xs, wv, wdf = append(runs, a.runs[r]), append(xs, v), append(wv, a.wvar[r][m]), append(wdf, a.wdf[r])
			lower = lower || a.lower[r][m]
		}
	}
	return runs, xs, wv, wdf, lower
}

// estimate is a mean (or a difference of means) with its standard error and degrees of freedom.
type estimate struct {
	mean, se, df float64
	n            int
	source       string
}

// combine picks the larger of the between-run and the within-run variance of a mean of n run
// values: between-run variance vb with dfb degrees of freedom, within-run variance vw with dfw.
// The between-run variance is always a valid estimate but rests on n−1 degrees of freedom; when
// it is no larger than what the pods inside the runs explain, the runs add nothing beyond their
// pods and the within-run estimate (many more degrees of freedom) is used. Taking the larger never
// claims less uncertainty than either source shows.
func combine(mean float64, n int, vb, dfb, vw, dfw float64) estimate {
	e := estimate{mean: mean, n: n}
	switch {
	case vb <= 0 && vw <= 0:
		e.source = Exact
	case vb >= vw:
		e.se, e.df, e.source = math.Sqrt(vb), dfb, FromRuns
	default:
		e.se, e.df, e.source = math.Sqrt(vw), max(dfw, 1), FromPods
	}
	return e
}

// armEstimate is the mean of an arm's run values of metric m.
func armEstimate(a armSample, m int) (estimate, bool) {
	_, xs, wv, wdf, _ := a.values(m)
	if len(xs) == 0 {
		return estimate{}, false
	}
	mean := stat.Mean(xs, nil)
	if len(xs) < 2 {
		return estimate{mean: mean, n: len(xs)}, true
	}
	n := float64(len(xs))
	vb := stat.Variance(xs, nil) / n
	vw, dfw := 0.0, 0
	for i := range wv {
		vw += wv[i]
		dfw += wdf[i]
	}
	return combine(mean, len(xs), vb, n-1, vw/(n*n), float64(dfw)), true
}

// diffEstimate is arm − base for metric m: paired by run name when both arms ran the same
// repeats (the lab interleaves arms within a repeat, so repeat-wide conditions cancel), else
// the Welch difference of two independent means. false when either side has fewer than two
// run values.
func diffEstimate(a, base armSample, m int, paired bool) (estimate, bool) {
	ra, xa, wa, da, _ := a.values(m)
	rb, xb, wb, db, _ := base.values(m)
	if paired {
		byRun := map[string]int{}
		for i, r := range rb {
			byRun[r] = i
		}
		var d []float64
		var vw float64
		var dfw int
		for i, r := range ra {
			j, ok := byRun[r]
			if !ok {
				continue
			}
			d = append(d, xa[i]-xb[j])
			vw += wa[i] + wb[j]
			dfw += da[i] + db[j]
		}
		if len(d) < 2 {
			return estimate{}, false
		}
		n := float64(len(d))
		return combine(stat.Mean(d, nil), len(d), stat.Variance(d, nil)/n, n-1, vw/(n*n), float64(dfw)), true
	}
	if len(xa) < 2 || len(xb) < 2 {
		return estimate{}, false
	}
	na, nb := float64(len(xa)), float64(len(xb))
	ma, va := stat.MeanVariance(xa, nil)
	mb, vb := stat.MeanVariance(xb, nil)
	sa, sb := va/na, vb/nb
	dfb := na - 1
	if sa+sb > 0 {
		dfb = (sa + sb) * (sa + sb) / (sa*sa/(na-1) + sb*sb/(nb-1)) // Welch–Satterthwaite
	}
	var vw float64
	var dfw int
	for i := range wa {
		vw += wa[i] / (na * na)
		dfw += da[i]
	}
	for i := range wb {
		vw += wb[i] / (nb * nb)
		dfw += db[i]
	}
	return combine(ma-mb, min(len(xa), len(xb)), sa+sb, dfb, vw, float64(dfw)), true
}

// interval is the two-sided (1−alpha) interval of the estimate; nil ends when it has none.
func (e estimate) interval(alpha float64) (lo, hi *float64) {
	if e.source == "" {
		return nil, nil
	}
	half := 0.0
	if e.se > 0 {
		half = tQuantile(1-alpha/2, e.df) * e.se
	}
	l, h := e.mean-half, e.mean+half
	return &l, &h
}

// pValue is the two-sided p-value of "no difference".
func (e estimate) pValue() float64 {
	switch {
	case e.source == "":
		return math.NaN()
	case e.se == 0 && e.mean == 0:
		return 1
	case e.se == 0:
		return 0
	}
	t := math.Abs(e.mean) / e.se
	return 2 * (1 - distuv.StudentsT{Mu: 0, Sigma: 1, Nu: e.df}.CDF(t))
}

// pWorse is the one-sided p-value of "not worse": small when the difference is worse beyond
// chance (up is the direction that is worse).
func (e estimate) pWorse(up bool) float64 {
	d := e.mean
	if !up {
		d = -d
	}
	switch {
	case e.source == "":
		return math.NaN()
	case e.se == 0 && d > 0:
		return 0
	case e.se == 0:
		return 1
	}
	return 1 - distuv.StudentsT{Mu: 0, Sigma: 1, Nu: e.df}.CDF(d/e.se)
}

// repeatsFor estimates how many repeats would make a difference of target stand out of the
// interval at level alpha with 80 % probability, were the observed variance the truth: the
// smallest n' with (t(1−alpha/2, df') + z(0.8))·se·√(n/n') ≤ target, the standard error
// shrinking as 1/√repeats and the degrees of freedom growing with them. false beyond 1000.
func (e estimate) repeatsFor(target, alpha float64) (int, bool) {
	if target <= 0 || e.se == 0 || e.n == 0 {
		return 0, false
	}
	zPower := distuv.UnitNormal.Quantile(0.8)
	enough := func(n int) bool {
		scale := float64(n) / float64(e.n)
		df := e.df * scale
		if e.source == FromRuns {
			df = float64(n - 1)
		}
		return (tQuantile(1-alpha/2, df)+zPower)*e.se/math.Sqrt(scale) <= target
	}
	// enough is monotone in n: bisect.
	lo, hi := e.n, 1000
	if !enough(hi) {
		return 0, false
	}
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; enough(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

func tQuantile(p, df float64) float64 {
	if df <= 0 || math.IsInf(df, 1) || df > 1e6 {
		return distuv.UnitNormal.Quantile(p)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// seededRand returns a generator seeded from the strings, so the same experiment data gives the
// same intervals every time it is compared.
func seededRand(seed uint64, parts ...string) *rand.PCG {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return rand.NewPCG(seed, h.Sum64())
}
