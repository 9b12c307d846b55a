package compare

import (
	"fmt"
	"slices"
	"strings"
)

// metricWords maps the words people write in an experiment's `metrics` list to the metrics they
// mean. Words are matched after lower-casing and turning spaces and hyphens into underscores, with
// a trailing "s" dropped when only the singular is listed; any metric name also stands for itself.
// The table is documented in docs/comparison.md.
var metricWords = map[string][]string{
	"placement":             {"never_scheduled", "pending_p95_s"},
	"scheduling":            {"never_scheduled", "pending_p95_s"},
	"pending":               {"pending_p50_s", "pending_p95_s"},
	"pending_time":          {"pending_p50_s", "pending_p95_s"},
	"never_scheduled":       {"never_scheduled"},
	"unschedulable":         {"never_scheduled"},
	"gate":                  {"gated_p95_s"},
	"gated":                 {"gated_p95_s"},
	"admission":             {"gated_p95_s"},
	"queueing":              {"gated_p95_s"},
	"schedulable_wait":      {"schedulable_wait_p95_s"},
	"scheduler_wait":        {"schedulable_wait_p95_s"},
	"preemption":            {"preemptions_suffered", "preemptions_caused"},
	"start":                 {"start_p50_s"},
	"startup":               {"start_p50_s"},
	"container_start":       {"start_p50_s"},
	"model_load":            {"model_load_p50_s"},
	"load":                  {"model_load_p50_s"},
	"model_loading":         {"model_load_p50_s"},
	"readiness":             {"model_load_p50_s"},
	"cold_start":            {"time_to_first_success_p50_s", "time_to_first_success_p95_s"},
	"time_to_first_success": {"time_to_first_success_p50_s", "time_to_first_success_p95_s"},
	"first_success":         {"time_to_first_success_p50_s", "time_to_first_success_p95_s"},
	"ttfs":                  {"time_to_first_success_p50_s", "time_to_first_success_p95_s"},
	"latency":               {"latency_p50_ms", "latency_p95_ms"},
	"tail_latency":          {"latency_p95_ms", "latency_p99_ms"},
	"error":                 {"error_rate"},
	"error_rate":            {"error_rate"},
	"slo":                   {"latency_p95_ms", "error_rate"},
	"restart":               {"restarts_per_pod"},
	"crash":                 {"restarts_per_pod"},
	"gpu":                   {"gpu_util_mean_pct", "gpu_idle_s"},
	"gpu_utilisation":       {"gpu_util_mean_pct", "gpu_idle_s"},
	"gpu_utilization":       {"gpu_util_mean_pct", "gpu_idle_s"},
	"utilisation":           {"gpu_util_mean_pct", "gpu_idle_s"},
	"utilization":           {"gpu_util_mean_pct", "gpu_idle_s"},
	"idle_gpu":              {"gpu_idle_s"},
	"interruption":          {"interruption_s"},
	"disruption":            {"interruption_s"},
	"availability":          {"interruption_s"},
}

// DefaultPrimary are the primary metrics of a definition that names none: whether pods got a
// place and how long they waited, how long until they served, and what the users felt.
var DefaultPrimary = []string{"pending_p95_s", "never_scheduled", "time_to_first_success_p50_s", "latency_p95_ms", "error_rate"}

// PrimaryMetrics maps an experiment definition's `metrics` words to metric names, in the order
// of Metrics. Words that name no metric are returned apart. A definition that names no metric
// gets DefaultPrimary.
func PrimaryMetrics(list []string) (names []string, unknown []string) {
	set := map[string]bool{}
	for _, w := range list {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		ms, ok := wordMetrics(w)
		if !ok {
			unknown = append(unknown, w)
			continue
		}
		for _, m := range ms {
			set[m] = true
		}
	}
	if len(set) == 0 {
		for _, m := range DefaultPrimary {
			set[m] = true
		}
	}
	for _, m := range Metrics {
		if set[m.Name] {
			names = append(names, m.Name)
		}
	}
	return names, unknown
}

// wordMetrics resolves one word of a `metrics` list or `margins` key.
func wordMetrics(word string) ([]string, bool) {
	w := normalWord(word)
	if _, ok := metricIndex[w]; ok {
		return []string{w}, true
	}
	if ms, ok := metricWords[w]; ok {
		return ms, true
	}
	if s, ok := strings.CutSuffix(w, "s"); ok {
		if ms, ok := metricWords[s]; ok {
			return ms, true
		}
	}
	return nil, false
}

func normalWord(w string) string {
	w = strings.ToLower(strings.TrimSpace(w))
	w = strings.NewReplacer(" ", "_", "-", "_").Replace(w)
	for strings.Contains(w, "__") {
		w = strings.ReplaceAll(w, "__", "_")
	}
	return w
}

// Margins reads a definition's `margins` (metric name or word → number or "10%"); entries that
// cannot be read are returned as errors, naming the key.
func Margins(defs map[string]any) (map[string]Margin, []string) {
	out := map[string]Margin{}
	var bad []string
	keys := make([]string, 0, len(defs))
	for k := range defs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ms, ok := wordMetrics(k)
		if !ok {
			bad = append(bad, fmt.Sprintf("margins.%s: names no metric", k))
			continue
		}
		m, err := ParseMargin(defs[k])
		if err != nil {
			bad = append(bad, fmt.Sprintf("margins.%s: %v", k, err))
			continue
		}
		for _, name := range ms {
			out[name] = m
		}
	}
	return out, bad
}
