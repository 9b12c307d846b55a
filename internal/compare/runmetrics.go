package compare

import (
	"math"
	"slices"
	"time"

	"github.com/schedlens/schedlens/internal/align"
)

// PodData is what the comparison needs of one pod: its summary, the latency histogram of the
// requests it served successfully, and how many pods (of any arm) it preempted.
type PodData struct {
	Summary           align.Summary
	Latency           map[int32]int64
	PreemptionsCaused int
}

// RunData is what one run of one arm left: its pods and the seconds its service was
// interrupted (a property of the run as a whole, not of a pod).
type RunData struct {
	Pods          []PodData
	InterruptionS float64
}

// FirstCreated is the creation time of the run's first pod (zero when none says).
func (r RunData) FirstCreated() time.Time {
	var first time.Time
	for _, p := range r.Pods {
		if c := p.Summary.Milestones.Created; c != nil && (first.IsZero() || c.Before(first)) {
			first = *c
		}
	}
	return first
}

// podValues is a pod reduced to the numbers the metrics read (NaN where it has none).
type podValues struct {
	pending    float64 // created → scheduled, or → observed_until when never scheduled
	hasPending bool
	scheduled  bool // pending is an event time (false: censored, a lower bound)
	// gated: created → gate removed (0 for a pod never gated), or → observed_until while still
	// gated (ungated false: censored); wait: the scheduler's part of pending, gated (else
	// created) → scheduled, censored like pending; hasWait false while a gate still held it.
	gated, wait      float64
	ungated, hasWait bool
	start, load      float64
	ttfs             float64
	preempted        bool
	caused           int
	restarts         int
	// served requests and errors (sent while the pod was Ready), and errors before Ready
	served, servedErrors, preReadyErrors int
	gpuSeconds, gpuWeighted, gpuIdle     float64
	hasGPU                               bool
	latency                              []int64 // counts aligned to the run's buckets; nil without
}

// runFrame holds one run's pods in the form the repeated (bootstrap) computation needs: latency
// histograms aligned to the union of the run's buckets, so merging pods is adding vectors.
type runFrame struct {
	pods         []podValues
	buckets      []int32
	interruption float64
}

func newRunFrame(r RunData) *runFrame {
	f := &runFrame{interruption: r.InterruptionS, pods: make([]podValues, 0, len(r.Pods))}
	var u bucketIndex
	f.buckets, u = unionBuckets(r.Pods)
	for _, p := range r.Pods {
		f.pods = append(f.pods, podValuesOf(p, f.buckets, u))
	}
	return f
}

// bucketIndex gives a bucket's position among a run's buckets: pos[b-lo] when pos is set (a
// small range), else by binary search.
type bucketIndex struct {
	lo  int32
	pos []int32
}

func (u bucketIndex) of(buckets []int32, b int32) int {
	if u.pos != nil {
		return int(u.pos[b-u.lo])
	}
	i, _ := slices.BinarySearch(buckets, b)
	return i
}

// unionBuckets returns the buckets of the pods' latency histograms, sorted and distinct (nil
// for none), and their index: marked in an array over their range when it is small, as a
// run's usually is, else sorted.
func unionBuckets(pods []PodData) ([]int32, bucketIndex) {
	lo, hi, n := int32(math.MaxInt32), int32(math.MinInt32), 0
	for _, p := range pods {
		for b := range p.Latency {
			lo, hi, n = min(lo, b), max(hi, b), n+1
		}
	}
	if n == 0 {
		return nil, bucketIndex{}
	}
	if span := int64(hi) - int64(lo) + 1; span <= 4096 {
		pos := make([]int32, span) // 1 + position once marked
		distinct := 0
		for _, p := range pods {
			for b := range p.Latency {
				if pos[b-lo] == 0 {
					pos[b-lo] = 1
					distinct++
				}
			}
		}
		out := make([]int32, 0, distinct)
		for i, m := range pos {
			if m != 0 {
				pos[i] = int32(len(out))
				out = append(out, lo+int32(i))
			}
		}
		return out, bucketIndex{lo: lo, pos: pos}
	}
	out := make([]int32, 0, n)
	for _, p := range pods {
		for b := range p.Latency {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return slices.Clip(slices.Compact(out)), bucketIndex{}
}

// podValuesOf reduces a pod to its values; buckets are the run's, sorted and distinct.
func podValuesOf(p PodData, buckets []int32, u bucketIndex) podValues {
	s := p.Summary
	d := s.Durations
	v := podValues{start: nan, load: nan, ttfs: nan, caused: p.PreemptionsCaused, restarts: s.Counts.Restarts}
	switch {
	case d.Pending != nil:
		v.pending, v.hasPending, v.scheduled = *d.Pending, true, true
	case s.Milestones.Created != nil && s.ObservedUntil != nil:
		v.pending, v.hasPending = max(s.ObservedUntil.Sub(*s.Milestones.Created).Seconds(), 0), true
	}
	if d.Start != nil {
		v.start = *d.Start
	}
	if d.ModelLoad != nil {
		v.load = *d.ModelLoad
	}
	if d.Total != nil {
		v.ttfs = *d.Total
	}
	gateHeld := slices.Contains(s.Censored, "gated")
	switch {
	case d.Gated != nil:
		v.gated, v.ungated = *d.Gated, true
	case gateHeld && s.Milestones.Created != nil && s.ObservedUntil != nil:
		v.gated = max(s.ObservedUntil.Sub(*s.Milestones.Created).Seconds(), 0)
	default:
		v.ungated = true // never gated: no wait of that kind
	}
	switch {
	case gateHeld:
	case d.SchedulableWait != nil:
		v.wait, v.hasWait = *d.SchedulableWait, true
	case v.hasPending:
		v.wait, v.hasWait = max(v.pending-v.gated, 0), true // never scheduled: censored with pending
	}
	v.preempted = s.EndedReason != nil && *s.EndedReason == align.EndPreempted
	c := s.Counts
	v.served = c.Requests - c.PreReadyRequests
	v.servedErrors = c.RequestErrors - c.PreReadyErrors
	v.preReadyErrors = c.PreReadyErrors
	if g := s.GPU; g != nil && g.Seconds > 0 {
		v.hasGPU = true
		v.gpuSeconds, v.gpuWeighted, v.gpuIdle = g.Seconds, g.UtilMean*g.Seconds, g.IdleSeconds
	}
	if len(p.Latency) > 0 {
		v.latency = make([]int64, len(buckets))
		for b, n := range p.Latency {
			v.latency[u.of(buckets, b)] += n
		}
	}
	return v
}

var nan = math.NaN()

// runScratch is reused across the computations of one goroutine.
type runScratch struct {
	times     []censoredTime
	gates     []censoredTime
	waits     []censoredTime
	xs        []float64
	ys        []float64
	zs        []float64
	histogram []int64
}

// metrics computes every metric of the run over the pods idx (a bootstrap resample, or all of
// them): out[i] is Metrics[i]'s value, NaN when the run has no data for it; lower[i] says the
// value is a lower bound (pending with censored pods). It returns how many of the pods were
// censored for pending (never scheduled while observed).
func (f *runFrame) metrics(idx []int, s *runScratch, out []float64, lower []bool) (censored int) {
	for i := range out {
		out[i], lower[i] = nan, false
	}
	if len(idx) == 0 {
		return 0
	}
	s.times, s.gates, s.waits, s.xs, s.ys, s.zs = s.times[:0], s.gates[:0], s.waits[:0], s.xs[:0], s.ys[:0], s.zs[:0]
	if cap(s.histogram) < len(f.buckets) {
		s.histogram = make([]int64, len(f.buckets))
	}
	hist := s.histogram[:len(f.buckets)]
	clear(hist)
	var never, suffered, caused, restarts, served, servedErrs, preReady int
	var gpuS, gpuW, gpuIdle float64
	hasHist := false
	for _, i := range idx {
		p := &f.pods[i]
		if p.hasPending {
			s.times = append(s.times, censoredTime{t: p.pending, event: p.scheduled})
			if !p.scheduled {
				never++
			}
			s.gates = append(s.gates, censoredTime{t: p.gated, event: p.ungated})
		}
		if p.hasWait {
			s.waits = append(s.waits, censoredTime{t: p.wait, event: p.scheduled})
		}
		if !math.IsNaN(p.start) {
			s.xs = append(s.xs, p.start)
		}
		if !math.IsNaN(p.load) {
			s.ys = append(s.ys, p.load)
		}
		if !math.IsNaN(p.ttfs) {
			s.zs = append(s.zs, p.ttfs)
		}
		if p.preempted {
			suffered++
		}
		caused += p.caused
		restarts += p.restarts
		served += p.served
		servedErrs += p.servedErrors
		preReady += p.preReadyErrors
		if p.hasGPU {
			gpuS, gpuW, gpuIdle = gpuS+p.gpuSeconds, gpuW+p.gpuWeighted, gpuIdle+p.gpuIdle
		}
		if p.latency != nil {
			hasHist = true
			for j, n := range p.latency {
				hist[j] += n
			}
		}
	}
	if len(s.times) > 0 {
		km := kaplanMeier(s.times)
		out[iPendingP50], lower[iPendingP50] = km.quantile(0.5)
		out[iPendingP95], lower[iPendingP95] = km.quantile(0.95)
		out[iPendingMax], lower[iPendingMax] = km.max()
	}
	if len(s.gates) > 0 {
		out[iGated], lower[iGated] = kaplanMeier(s.gates).quantile(0.95)
	}
	if len(s.waits) > 0 {
		out[iSchedWait], lower[iSchedWait] = kaplanMeier(s.waits).quantile(0.95)
	}
	out[iNever] = float64(never)
	out[iSuffered] = float64(suffered)
	out[iCaused] = float64(caused)
	out[iStart] = empiricalQuantile(s.xs, 0.5)
	out[iLoad] = empiricalQuantile(s.ys, 0.5)
	out[iTTFSP50] = empiricalQuantile(s.zs, 0.5)
	out[iTTFSP95] = empiricalQuantile(s.zs, 0.95)
	if hasHist {
		out[iLatencyP50] = histQuantile(f.buckets, hist, 0.5)
		out[iLatencyP95] = histQuantile(f.buckets, hist, 0.95)
		out[iLatencyP99] = histQuantile(f.buckets, hist, 0.99)
	}
	if served > 0 {
		out[iErrorRate] = float64(servedErrs) / float64(served)
	}
	out[iPreReady] = float64(preReady) / float64(len(idx))
	out[iRestarts] = float64(restarts) / float64(len(idx))
	out[iInterrupted] = f.interruption
	if gpuS > 0 {
		out[iGPUUtil] = gpuW / gpuS
		out[iGPUIdle] = gpuIdle
	}
	return never
}

// empiricalQuantile is the smallest value whose empirical distribution reaches p (the inverse
// of the empirical CDF, gonum's stat.Empirical); NaN for no values. xs is sorted in place.
func empiricalQuantile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return nan
	}
	slices.Sort(xs)
	n := float64(len(xs))
	for i, x := range xs {
		if float64(i+1)/n >= p {
			return x
		}
	}
	return xs[len(xs)-1]
}

// histQuantile reads quantile q of a latency histogram (counts aligned to ascending buckets) by
// the rank rule of align.LatencyQuantile; NaN when it is empty.
func histQuantile(buckets []int32, counts []int64, q float64) float64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return nan
	}
	rank := q * float64(n-1)
	var seen int64
	for i, c := range counts {
		seen += c
		if float64(seen) > rank {
			return align.LatencyOf(buckets[i])
		}
	}
	return align.LatencyOf(buckets[len(buckets)-1])
}

// RunMetrics computes the metrics of one run of one arm, by metric name, leaving out those the
// run has no data for. Pending quantiles are Kaplan–Meier estimates over the run's pods (a pod
// never scheduled is censored at the time it was observed waiting); names in lowerBound are
// lower bounds because censored pods leave the quantile undetermined.
func RunMetrics(r RunData) (values map[string]float64, lowerBound map[string]bool) {
	f := newRunFrame(r)
	idx := make([]int, len(f.pods))
	for i := range idx {
		idx[i] = i
	}
	out := make([]float64, len(Metrics))
	lower := make([]bool, len(Metrics))
	f.metrics(idx, &runScratch{}, out, lower)
	values, lowerBound = map[string]float64{}, map[string]bool{}
	for i, m := range Metrics {
		if !math.IsNaN(out[i]) {
			values[m.Name] = out[i]
			if lower[i] {
				lowerBound[m.Name] = true
			}
		}
	}
	return values, lowerBound
}
