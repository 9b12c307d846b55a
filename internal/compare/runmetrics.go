package compare

import (
	"maps"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/schedlens/schedlens/internal/align"
)

// RunData is what one run of one arm left: its pods, the latency histogram of its successful
// requests (merged exactly across its pods), the seconds its service was interrupted, and how
// many pods of other arms its pods preempted.
type RunData struct {
	Pods              []align.Summary
	Latency           map[int32]int64
	InterruptionS     float64
	PreemptionsCaused int
}

// RunMetrics computes the metrics of one run of one arm. A pod that never scheduled counts in
// the pending quantiles with the time it was observed waiting (a lower bound: censored, not
// dropped). Metrics a run has no data for are left out.
func RunMetrics(r RunData) map[string]float64 {
	out := map[string]float64{}
	var pending, start, load, ttfs []float64
	var never, preempted, restarts, requests, errors int
	var gpuSeconds, gpuWeighted, gpuIdle float64
	for _, p := range r.Pods {
		m := p.Milestones
		switch {
		case p.Durations.Pending != nil:
			pending = append(pending, *p.Durations.Pending)
		case m.Created != nil && p.ObservedUntil != nil:
			never++
			pending = append(pending, p.ObservedUntil.Sub(*m.Created).Seconds())
		}
		if p.Durations.Start != nil {
			start = append(start, *p.Durations.Start)
		}
		if p.Durations.ModelLoad != nil {
			load = append(load, *p.Durations.ModelLoad)
		}
		if p.Durations.Total != nil {
			ttfs = append(ttfs, *p.Durations.Total)
		}
		if p.EndedReason != nil && *p.EndedReason == align.EndPreempted {
			preempted++
		}
		restarts += p.Counts.Restarts
		requests += p.Counts.Requests
		errors += p.Counts.RequestErrors
		if g := p.GPU; g != nil {
			gpuSeconds += g.Seconds
			gpuWeighted += g.UtilMean * g.Seconds
			gpuIdle += g.IdleSeconds
		}
	}
	if len(r.Pods) == 0 {
		return out
	}
	q := func(name string, xs []float64, p float64) {
		if len(xs) > 0 {
			s := slices.Clone(xs)
			slices.Sort(s)
			out[name] = stat.Quantile(p, stat.Empirical, s, nil)
		}
	}
	q("pending_p50_s", pending, 0.5)
	q("pending_p95_s", pending, 0.95)
	if len(pending) > 0 {
		out["pending_max_s"] = slices.Max(pending)
	}
	out["never_scheduled"] = float64(never)
	out["preemptions_suffered"] = float64(preempted)
	out["preemptions_caused"] = float64(r.PreemptionsCaused)
	q("start_p50_s", start, 0.5)
	q("model_load_p50_s", load, 0.5)
	q("time_to_first_success_p50_s", ttfs, 0.5)
	q("time_to_first_success_p95_s", ttfs, 0.95)
	for name, p := range map[string]float64{"latency_p50_ms": 0.5, "latency_p95_ms": 0.95, "latency_p99_ms": 0.99} {
		if v, ok := align.LatencyQuantile(r.Latency, p); ok {
			out[name] = v
		}
	}
	if requests > 0 {
		out["error_rate"] = float64(errors) / float64(requests)
	}
	out["restarts_per_pod"] = float64(restarts) / float64(len(r.Pods))
	out["interruption_s"] = r.InterruptionS
	if gpuSeconds > 0 {
		out["gpu_util_mean_pct"] = gpuWeighted / gpuSeconds
		out["gpu_idle_s"] = gpuIdle
	}
	return out
}

// Thresholds reads an experiment definition's thresholds (e.g. p95_latency_ms: 800,
// error_rate: 0.01) as upper limits on metrics: a key naming a metric, or
// p<N>_latency_ms for latency_p<N>_ms, or <metric without _s>_ms for a metric in seconds.
// Keys that name no metric are returned apart.
func Thresholds(defs map[string]any) (out []Threshold, unknown []string) {
	names := map[string]bool{}
	for _, m := range Metrics {
		names[m.Name] = true
	}
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
		if !names[metric] && strings.HasSuffix(key, "_ms") && names[strings.TrimSuffix(key, "_ms")+"_s"] {
			metric, v = strings.TrimSuffix(key, "_ms")+"_s", v/1000
		}
		if !names[metric] {
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
