package align

import (
	"maps"
	"math"
	"slices"

	"github.com/schedlens/schedlens/internal/events"
)

// Request latencies are kept per pod as a histogram with logarithmic buckets (the DDSketch
// mapping): bucket i holds latencies in (γ^(i-1), γ^i] ms. Histograms merge exactly — counts
// add — across events, pods and runs, and a quantile read from one is within
// LatencyRelativeError of the true value.
const (
	latencyGamma = 1.02
	// LatencyRelativeError bounds the relative error of a latency quantile: (γ−1)/(γ+1).
	LatencyRelativeError = (latencyGamma - 1) / (latencyGamma + 1)
	// minLatencyMS is the smallest latency told apart; anything at or below is bucket
	// minBucket.
	minLatencyMS = 0.001
)

// LatencyBucket is the histogram bucket of a latency in milliseconds.
func LatencyBucket(ms float64) int32 {
	if ms <= minLatencyMS {
		return int32(math.Ceil(math.Log(minLatencyMS) / math.Log(latencyGamma)))
	}
	return int32(math.Ceil(math.Log(ms) / math.Log(latencyGamma)))
}

// LatencyOf is the value a bucket stands for: the point whose relative distance to both ends
// is smallest.
func LatencyOf(bucket int32) float64 {
	return 2 * math.Pow(latencyGamma, float64(bucket)) / (latencyGamma + 1)
}

// LatencyQuantile reads quantile q (0..1) of a latency histogram; false when it is empty.
func LatencyQuantile(hist map[int32]int64, q float64) (float64, bool) {
	var n int64
	for _, c := range hist {
		n += c
	}
	if n == 0 {
		return 0, false
	}
	rank := q * float64(n-1)
	var seen int64
	buckets := slices.Sorted(maps.Keys(hist))
	for _, b := range buckets {
		seen += hist[b]
		if float64(seen) > rank {
			return LatencyOf(b), true
		}
	}
	return LatencyOf(buckets[len(buckets)-1]), true // not reached: seen ends at n > rank
}

// GPU utilisation is kept per pod as seconds spent at each whole percent (0..100), weighted by
// the scrape period, so the mean, a time-weighted p95 and the seconds under any idle threshold
// can all be read back, and merging adds seconds.

// IdleUtilThreshold is the default utilisation (percent) under which an allocated GPU counts
// as idle.
const IdleUtilThreshold = 5

// IdleThresholdOr is *t, or IdleUtilThreshold when t is nil (an option left unset: 0 is a
// threshold of its own, under which no GPU time counts as idle).
func IdleThresholdOr(t *float64) float64 {
	if t == nil {
		return IdleUtilThreshold
	}
	return *t
}

// GPUUtil reads a sample's utilisation in percent: DCGM_FI_DEV_GPU_UTIL, or on MIG instances
// (where dcgm-exporter has no GPU_UTIL) DCGM_FI_PROF_GR_ENGINE_ACTIVE × 100.
func GPUUtil(m map[string]float64) (float64, bool) {
	if u, ok := m["DCGM_FI_DEV_GPU_UTIL"]; ok {
		return u, true
	}
	if a, ok := m["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]; ok {
		return a * 100, true
	}
	return 0, false
}

func (f *Facts) addGPUSample(s *events.GPUSample) {
	u, ok := GPUUtil(s.Metrics)
	if !ok {
		return
	}
	period := s.PodSeconds()
	bucket := int32(math.Round(min(max(u, 0), 100)))
	f.GPUUtil = map[int32]float64{bucket: period}
	if fb, ok := s.Metrics["DCGM_FI_DEV_FB_USED"]; ok {
		f.GPUFBSeconds = fb * period
		f.GPUFBMax = fb
	}
}

// GPUSummary is what a pod's GPU samples say, over the time they cover.
type GPUSummary struct {
	Seconds          float64  `json:"seconds"` // GPU time sampled while allocated to the pod
	UtilMean         float64  `json:"util_mean"`
	UtilP95          float64  `json:"util_p95"`
	FBUsedMiBMean    *float64 `json:"fb_used_mib_mean"`
	FBUsedMiBMax     *float64 `json:"fb_used_mib_max"`
	IdleSeconds      float64  `json:"idle_seconds"` // allocated with utilisation under the threshold
	IdleThresholdPct float64  `json:"idle_threshold_pct"`
}

// SummarizeGPU derives the GPU summary from a pod's merged facts (nil without samples).
func SummarizeGPU(util map[int32]float64, fbSeconds, fbMax float64, idleThreshold float64) *GPUSummary {
	var total, weighted float64
	for u, s := range util {
		total += s
		weighted += float64(u) * s
	}
	if total == 0 {
		return nil
	}
	g := &GPUSummary{Seconds: total, UtilMean: weighted / total, IdleThresholdPct: idleThreshold}
	var acc float64
	for _, u := range slices.Sorted(maps.Keys(util)) {
		if float64(u) < idleThreshold {
			g.IdleSeconds += util[u]
		}
		acc += util[u]
		if acc >= 0.95*total && g.UtilP95 == 0 {
			g.UtilP95 = float64(u)
		}
	}
	if fbMax > 0 || fbSeconds > 0 {
		mean := fbSeconds / total
		g.FBUsedMiBMean, g.FBUsedMiBMax = &mean, &fbMax
	}
	return g
}

// RequestSummary is what the requests a pod served say.
type RequestSummary struct {
	Count  int `json:"count"`
	Errors int `json:"errors"`
	// PreReadyErrors are the failed requests sent before the pod was Ready; ErrorRate is the
	// served error rate: failed / all among the requests sent while it was Ready (nil when none
	// was).
	PreReadyErrors int      `json:"pre_ready_errors"`
	ErrorRate      *float64 `json:"error_rate"`
	// LatencyMS holds quantiles of successful requests, within RelativeError of the truth.
	LatencyMS     map[string]float64 `json:"latency_ms"`
	RelativeError float64            `json:"relative_error"`
}

// SummarizeRequests derives the request summary from a pod's counts and latency histogram
// (nil when the pod served none).
func SummarizeRequests(c Counts, hist map[int32]int64) *RequestSummary {
	if c.Requests == 0 {
		return nil
	}
	r := &RequestSummary{Count: c.Requests, Errors: c.RequestErrors, PreReadyErrors: c.PreReadyErrors, LatencyMS: map[string]float64{}, RelativeError: LatencyRelativeError}
	if served := c.Requests - c.PreReadyRequests; served > 0 {
		rate := float64(c.RequestErrors-c.PreReadyErrors) / float64(served)
		r.ErrorRate = &rate
	}
	for name, q := range map[string]float64{"p50": 0.5, "p95": 0.95, "p99": 0.99} {
		if v, ok := LatencyQuantile(hist, q); ok {
			r.LatencyMS[name] = v
		}
	}
	return r
}
