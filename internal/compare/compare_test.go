package compare_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/compare"
)

// day20Primary are the primary metrics of the lab's day20 experiment (lab/experiment/day20.yaml:
// metrics [pending, start, model_load, time_to_first_success, preemptions, restarts]).
var day20Primary, _ = compare.PrimaryMetrics([]string{"pending", "start", "model_load", "time_to_first_success", "preemptions", "restarts"})

func callsAnything(v string) bool {
	return v == compare.Improvement || v == compare.Regression || v == compare.TradeOff
}

func result(t *testing.T, rs []compare.ArmResult, name string) compare.ArmResult {
	t.Helper()
	for _, r := range rs {
		if r.Arm == name {
			return r
		}
	}
	t.Fatalf("no arm %s", name)
	return compare.ArmResult{}
}

func metric(t *testing.T, r compare.ArmResult, name string) compare.MetricResult {
	t.Helper()
	for _, m := range r.Metrics {
		if m.Metric == name {
			return m
		}
	}
	t.Fatalf("arm %s has no metric %s", r.Arm, name)
	return compare.MetricResult{}
}

// Identical arms with the lab's noise, 3 repeats × 3 pods × 100 requests: improvement,
// regression or trade_off in at most 5 % of 200 experiments.
func TestAAFalseCallRate(t *testing.T) {
	rs := simulate(200, 10, issueDesign, labWorkload, labNoise, noEffect, day20Primary)
	calls := 0
	for _, r := range rs {
		if callsAnything(r.Verdict) {
			calls++
		}
		for _, m := range r.Metrics {
			if m.Role != compare.RoleSecondary && m.VarianceFrom == "" && m.Difference != nil {
				t.Errorf("%s: difference without a variance source", m.Metric)
			}
		}
	}
	t.Logf("A/A, lab noise, 3×3×100: false calls in %d of 200 (%.1f%%); verdicts %v", calls, 100*float64(calls)/200, verdictCounts(rs))
	if calls > 10 {
		t.Errorf("identical arms: improvement/regression/trade_off in %d of 200 experiments; want at most 10 (5%%)", calls)
	}
}

// A planted 20 % latency increase with the lab's noise (3 repeats × 3 pods × 100 requests) is
// called — regression or trade_off naming latency — in at least 80 % of 200 experiments, latency
// being a guardrail of day20 (not primary).
func TestDetectsLatencyIncrease(t *testing.T) {
	slower := noEffect
	slower.latency = 1.2
	rs := simulate(200, 11, issueDesign, labWorkload, labNoise, slower, day20Primary)
	detected := 0
	for _, r := range rs {
		if (r.Verdict == compare.Regression || r.Verdict == compare.TradeOff) && strings.Contains(r.Explanation, "latency_p") {
			detected++
		}
	}
	t.Logf("latency +20%%, lab noise, 3×3×100: detected in %d of 200 (%.1f%%); verdicts %v", detected, 100*float64(detected)/200, verdictCounts(rs))
	if detected < 160 {
		t.Errorf("latency +20%%: detected in %d of 200 experiments; want at least 160 (80%%)", detected)
	}
}

// Pending better (a busy cluster's 2 s wait cut by 70 %) and model load twice as long (a
// shared GPU), with only pending primary: the guardrail keeps the arm from being an improvement —
// a trade_off that says the problem moved from scheduling to execution. With the lab's noise it
// takes 5 repeats to see the doubled model load every time; 3 repeats see it in about three in
// four experiments (logged; docs/comparison.md).
func TestPlantedTradeOffStaysTradeOff(t *testing.T) {
	moved := noEffect
	moved.pending, moved.load = 0.3, 2
	primary, _ := compare.PrimaryMetrics([]string{"pending"})
	t.Logf("planted trade-off, 3 repeats: %v", verdictCounts(simulate(100, 12, issueDesign, busyWorkload, labNoise, moved, primary)))
	rs := simulate(100, 12, design{repeats: 5, pods: 3, requests: 100}, busyWorkload, labNoise, moved, primary)
	tradeOffs := 0
	for _, r := range rs {
		if r.Verdict == compare.TradeOff && strings.Contains(r.Explanation, "model_load_p50_s") && strings.Contains(r.Explanation, "moved from scheduling to execution") {
			tradeOffs++
		}
	}
	t.Logf("planted trade-off, 5 repeats: trade_off in %d of 100; verdicts %v", tradeOffs, verdictCounts(rs))
	if tradeOffs < 95 {
		t.Errorf("planted trade-off, 5 repeats: trade_off in %d of 100; want at least 95", tradeOffs)
	}
	if got := metric(t, rs[0], "model_load_p50_s").Role; got != compare.RoleGuardrail {
		t.Errorf("model_load_p50_s role %q; want guardrail when not primary", got)
	}
}

// With well-controlled repeats and enough of them, identical arms are shown equivalent: no_effect.
func TestNoEffectNeedsEquivalence(t *testing.T) {
	rs := simulate(50, 13, design{repeats: 10, pods: 5, requests: 300}, labWorkload, quietNoise, noEffect, day20Primary)
	counts := verdictCounts(rs)
	t.Logf("quiet A/A, 10×5×300: %v", counts)
	if counts[compare.NoEffect] < 20 {
		t.Errorf("quiet identical arms, 10 repeats: no_effect in %d of 50; want at least 20", counts[compare.NoEffect])
	}
	if n := counts[compare.Improvement] + counts[compare.Regression] + counts[compare.TradeOff]; n > 3 {
		t.Errorf("quiet identical arms: %d false calls in 50", n)
	}
	// Few repeats cannot show equivalence: inconclusive, saying how many repeats would decide.
	few := simulate(20, 14, issueDesign, labWorkload, labNoise, noEffect, day20Primary)
	for _, r := range few {
		if r.Verdict == compare.NoEffect {
			t.Errorf("3 noisy repeats: no_effect (%s); equivalence within 10%% cannot be shown from them", r.Explanation)
		}
		if r.Verdict == compare.InconclusiveArm && r.RepeatsNeeded != nil && *r.RepeatsNeeded <= r.Runs {
			t.Errorf("inconclusive with %d runs, yet repeats_needed %d", r.Runs, *r.RepeatsNeeded)
		}
	}
}

// The repeats an inconclusive arm asks for are about what it takes: run again with that many,
// the metric it names is decided in most experiments.
func TestRepeatsNeededDecides(t *testing.T) {
	slower := noEffect
	slower.load = 1.25
	primary := []string{"model_load_p50_s"}
	var needs []int
	for _, r := range simulate(40, 15, issueDesign, labWorkload, labNoise, slower, primary) {
		if m := metric(t, r, "model_load_p50_s"); m.Verdict == compare.Inconclusive && m.RepeatsNeeded != nil {
			needs = append(needs, *m.RepeatsNeeded)
		}
	}
	if len(needs) < 10 {
		t.Fatalf("model load +25%%, 3 repeats: only %d of 40 inconclusive with an estimate; the test needs more", len(needs))
	}
	slices.Sort(needs)
	n := needs[len(needs)/2]
	decided := 0
	rs := simulate(40, 16, design{repeats: n, pods: issueDesign.pods, requests: issueDesign.requests}, labWorkload, labNoise, slower, primary)
	for _, r := range rs {
		if v := metric(t, r, "model_load_p50_s").Verdict; v == compare.Worse || v == compare.Equivalent {
			decided++
		}
	}
	t.Logf("model load +25%%: median repeats_needed %d (of %v); with %d repeats decided in %d of 40", n, needs, n, decided)
	if decided < 20 {
		t.Errorf("with the %d repeats asked for, the metric was decided in %d of 40; want at least half", n, decided)
	}
}

// When repeats differ much more than their pods (a cluster state that hits arms differently),
// 3 repeats can understate the run-to-run spread by chance and the false-call rate rises above
// its design bound; with enough repeats the bound holds again: alpha for the primary metrics
// (half of it false improvements) plus alpha for the guardrails. The 3-repeat figure is the
// method's documented cost (docs/comparison.md).
func TestRunDominatedNoise(t *testing.T) {
	rate := func(repeats int) (calls, improvements float64) {
		rs := simulate(200, 17, design{repeats: repeats, pods: 3, requests: 100}, labWorkload, runDominated, noEffect, day20Primary)
		for _, r := range rs {
			if callsAnything(r.Verdict) {
				calls++
			}
			if r.Verdict == compare.Improvement {
				improvements++
			}
		}
		return calls / float64(len(rs)), improvements / float64(len(rs))
	}
	c3, i3 := rate(3)
	c8, i8 := rate(8)
	t.Logf("run-dominated A/A: false calls %.1f%% (improvements %.1f%%) with 3 repeats, %.1f%% (%.1f%%) with 8", 100*c3, 100*i3, 100*c8, 100*i8)
	if c8 > 0.10 || i8 > 0.025 {
		t.Errorf("run-dominated A/A with 8 repeats: false calls %.1f%%, improvements %.1f%%; want at most 10%% and 2.5%%", 100*c8, 100*i8)
	}
}

func TestHolmStepDown(t *testing.T) {
	// Holm is exercised through Compare: three primary metrics of which one differs hugely and
	// the others not at all stay apart (the huge one is called, the equal ones are equivalent).
	rng := rand.New(rand.NewPCG(3, 3))
	slower := noEffect
	slower.latency = 3
	arms := experiment(rng, design{repeats: 5, pods: 5, requests: 300}, labWorkload, quietNoise, slower)
	rs := compare.Compare("control", arms, nil, compare.Options{Primary: []string{"latency_p50_ms", "preemptions_suffered", "never_scheduled"}})
	r := result(t, rs, "treatment")
	want := map[string]string{"latency_p50_ms": compare.Worse, "preemptions_suffered": compare.Equivalent, "never_scheduled": compare.Equivalent}
	got := map[string]string{}
	for name := range want {
		got[name] = metric(t, r, name).Verdict
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if r.Verdict != compare.Regression {
		t.Errorf("arm verdict %s (%s); want regression", r.Verdict, r.Explanation)
	}
}

// pod is a pod of a run for the hand-made cases.
func pod(pending *float64, waited float64, requests, errors, preReady, preReadyErrors int) compare.PodData {
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	until := created.Add(time.Duration(waited * float64(time.Second)))
	s := align.Summary{Milestones: align.Milestones{Created: &created}, ObservedUntil: &until}
	s.Durations.Pending = pending
	s.Counts = align.Counts{Requests: requests, RequestErrors: errors, PreReadyRequests: preReady, PreReadyErrors: preReadyErrors}
	return compare.PodData{Summary: s}
}

func f(v float64) *float64 { return &v }

func TestRunMetricsServedErrorsAndCensoredPending(t *testing.T) {
	run := compare.RunData{Pods: []compare.PodData{
		pod(f(0.02), 30, 100, 30, 25, 25), // 25 failures before Ready, 5 served errors of 75 served
		pod(f(0.04), 30, 100, 25, 25, 25), // failures before Ready only
		pod(nil, 60, 0, 0, 0, 0),          // still Pending after 60 s: censored
	}}
	values, lower := compare.RunMetrics(run)
	got := map[string]float64{}
	for _, k := range []string{"error_rate", "pre_ready_errors", "pending_p50_s", "pending_p95_s", "pending_max_s", "never_scheduled",
		"gated_p95_s", "schedulable_wait_p95_s"} {
		got[k] = math.Round(values[k]*1e6) / 1e6
	}
	want := map[string]float64{
		"error_rate":             0.033333,  // 5 served errors of 150 served requests
		"pre_ready_errors":       16.666667, // 50 failures before Ready over 3 pods
		"pending_p50_s":          0.04,      // Kaplan–Meier: 2 of 3 scheduled by 0.04 s
		"pending_p95_s":          60,        // not reached: the longest wait, a lower bound
		"pending_max_s":          60,
		"never_scheduled":        1,
		"gated_p95_s":            0,  // no pod was gated
		"schedulable_wait_p95_s": 60, // all of pending was the scheduler's
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run metrics (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"pending_p95_s": true, "pending_max_s": true, "schedulable_wait_p95_s": true}, lower); diff != "" {
		t.Errorf("lower bounds (-want +got):\n%s", diff)
	}
}

// Pending split where the wait was: a scheduling gate's part (gated_p95_s, with a pod still
// gated censored) and the scheduler's (schedulable_wait_p95_s, which a still-gated pod has not
// begun).
func TestRunMetricsSplitGatedFromSchedulable(t *testing.T) {
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s float64) *time.Time { t := created.Add(time.Duration(s * float64(time.Second))); return &t }
	gatedPod := func(gated, wait float64) compare.PodData {
		m := align.Milestones{Created: &created, Gated: at(gated), Scheduled: at(gated + wait)}
		return compare.PodData{Summary: align.Summary{Milestones: m, Durations: align.DurationsOf(m), ObservedUntil: at(gated + wait + 30), Censored: []string{}}}
	}
	held := compare.PodData{Summary: align.Summary{Milestones: align.Milestones{Created: &created}, ObservedUntil: at(10),
		Censored: []string{"gated", "scheduled", "running", "ready", "first_success"}}}
	values, lower := compare.RunMetrics(compare.RunData{Pods: []compare.PodData{gatedPod(2, 0.1), gatedPod(3, 0.2), held}})
	if v := values["gated_p95_s"]; v != 10 || !lower["gated_p95_s"] {
		t.Errorf("gated_p95_s %v (lower bound %v); want 10, a lower bound: one pod still held after 10 s", v, lower["gated_p95_s"])
	}
	if v := values["schedulable_wait_p95_s"]; math.Abs(v-0.2) > 1e-9 || lower["schedulable_wait_p95_s"] {
		t.Errorf("schedulable_wait_p95_s %v (lower bound %v); want 0.2 from the two pods the gate let go", v, lower["schedulable_wait_p95_s"])
	}
	if v := values["pending_max_s"]; !lower["pending_max_s"] || v != 10 {
		t.Errorf("pending_max_s %v (lower %v): the held pod is still pending at 10 s", v, lower["pending_max_s"])
	}
}

// An arm whose pending is only a lower bound (pods still waiting) can be worse than the
// baseline, never better or equivalent.
func TestLowerBoundsLimitVerdicts(t *testing.T) {
	runs := func(pending func(r, i int) *float64, waited float64) map[string]compare.RunData {
		out := map[string]compare.RunData{}
		for r := range 4 {
			var rd compare.RunData
			for i := range 4 {
				rd.Pods = append(rd.Pods, pod(pending(r, i), waited, 0, 0, 0, 0))
			}
			out[string(rune('1'+r))] = rd
		}
		return out
	}
	quick := func(r, i int) *float64 { return f(0.02 + 0.001*float64(r+i)) }
	stuck := func(r, i int) *float64 {
		if i == 3 {
			return nil // one pod in four never scheduled
		}
		return f(0.02 + 0.001*float64(r+i))
	}
	rs := compare.Compare("control", []compare.ArmInput{
		{Name: "control", Runs: runs(quick, 300)},
		{Name: "stuck", Runs: runs(stuck, 300)},
	}, nil, compare.Options{Primary: []string{"pending_p95_s", "pending_p50_s"}})
	r := result(t, rs, "stuck")
	p95 := metric(t, r, "pending_p95_s")
	if !p95.LowerBound || p95.CensoredPods != 4 || p95.Verdict != compare.Worse {
		t.Errorf("pending_p95_s with a pod in four still waiting after 300 s: lower_bound %v, censored %d, verdict %s; want true, 4, worse",
			p95.LowerBound, p95.CensoredPods, p95.Verdict)
	}
	rs = compare.Compare("stuck", []compare.ArmInput{
		{Name: "control", Runs: runs(quick, 300)},
		{Name: "stuck", Runs: runs(stuck, 300)},
	}, nil, compare.Options{Primary: []string{"pending_p95_s"}})
	if v := metric(t, result(t, rs, "control"), "pending_p95_s").Verdict; v != compare.Better {
		t.Errorf("against a censored baseline, the quick arm's pending_p95_s: %s; want better (the baseline's is at least that long)", v)
	}
}

func TestInsufficientDataThresholdsAndRollback(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	one := experiment(rng, design{repeats: 1, pods: 3, requests: 100}, labWorkload, labNoise, noEffect)
	if r := result(t, compare.Compare("control", one, nil, compare.Options{}), "treatment"); r.Verdict != compare.InsufficientData {
		t.Errorf("a single run: %s; want insufficient_data", r.Verdict)
	}
	two := experiment(rng, design{repeats: 2, pods: 1, requests: 100}, labWorkload, labNoise, noEffect)
	if r := result(t, compare.Compare("control", two, nil, compare.Options{}), "treatment"); r.Verdict != compare.InsufficientData {
		t.Errorf("two runs of one pod: %s (%s); want insufficient_data (fewer than 3 pods)", r.Verdict, r.Explanation)
	}
	if r := result(t, compare.Compare("nope", one, nil, compare.Options{}), "treatment"); r.Verdict != compare.InsufficientData {
		t.Errorf("no baseline: %s; want insufficient_data", r.Verdict)
	}

	slower := noEffect
	slower.latency = 2
	arms := experiment(rng, issueDesign, labWorkload, labNoise, slower)
	th, unknown := compare.Thresholds(map[string]any{"p95_latency_ms": 30.0, "error_rate": 0.01, "time_to_first_success_p50_ms": 60000.0, "cost": 3.0})
	if diff := cmp.Diff([]string{"cost"}, unknown); diff != "" {
		t.Errorf("unknown thresholds (-want +got):\n%s", diff)
	}
	rs := compare.Compare("control", arms, th, compare.Options{})
	tr := result(t, rs, "treatment")
	if !tr.Rollback.Required || len(tr.Rollback.Reasons) != 1 || !strings.HasPrefix(tr.Rollback.Reasons[0], "p95_latency_ms: latency_p95_ms") {
		t.Errorf("rollback %+v; want required for the p95 latency threshold only (served error rate 0.2%% < 1%%)", tr.Rollback)
	}
	if c := result(t, rs, "control"); c.Rollback.Required {
		t.Errorf("control rollback %+v; want none: its pre-Ready failures are not served errors", c.Rollback)
	}
}

func TestPrimaryMetricWords(t *testing.T) {
	// The seed's ConfigMap says "placement, Pending, preemption, latency".
	got, unknown := compare.PrimaryMetrics([]string{"placement", "Pending", "preemption", "latency", "cost of GPUs"})
	want := []string{"pending_p50_s", "pending_p95_s", "never_scheduled", "preemptions_suffered", "preemptions_caused", "latency_p50_ms", "latency_p95_ms"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("seed's metrics (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"cost of GPUs"}, unknown); diff != "" {
		t.Errorf("unknown words (-want +got):\n%s", diff)
	}
	for words, want := range map[string][]string{
		"Model Load":            {"model_load_p50_s"},
		"cold-start":            {"time_to_first_success_p50_s", "time_to_first_success_p95_s"},
		"Time to first success": {"time_to_first_success_p50_s", "time_to_first_success_p95_s"},
		"errors":                {"error_rate"},
		"restarts":              {"restarts_per_pod"},
		"GPU":                   {"gpu_util_mean_pct", "gpu_idle_s"},
		"interruptions":         {"interruption_s"},
		"latency_p99_ms":        {"latency_p99_ms"},
		"":                      compare.DefaultPrimary,
	} {
		var list []string
		if words != "" {
			list = []string{words}
		}
		got, unknown := compare.PrimaryMetrics(list)
		if !cmp.Equal(want, got) || len(unknown) > 0 {
			t.Errorf("PrimaryMetrics(%q) = %v, unknown %v; want %v", words, got, unknown, want)
		}
	}
}

func TestMargins(t *testing.T) {
	got, bad := compare.Margins(map[string]any{"latency": "5%", "error_rate": 0.02, "pending_p95_s": "0.5", "nonsense": 1.0, "start": "fast"})
	want := map[string]compare.Margin{
		"latency_p50_ms": {Value: 0.05, Relative: true}, "latency_p95_ms": {Value: 0.05, Relative: true},
		"error_rate": {Value: 0.02}, "pending_p95_s": {Value: 0.5},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("margins (-want +got):\n%s", diff)
	}
	if len(bad) != 2 || !strings.Contains(bad[0], "margins.nonsense") || !strings.Contains(bad[1], "margins.start") {
		t.Errorf("bad margins %v; want nonsense and start named", bad)
	}
	if m := (compare.Margin{Value: 0.1, Relative: true, Floor: 0.1}); m.Abs(0.05) != 0.1 || m.Abs(5) != 0.5 || m.String() != "10% (≥ 0.1)" {
		t.Errorf("default relative margin: Abs(0.05)=%g Abs(5)=%g %q", m.Abs(0.05), m.Abs(5), m.String())
	}
}

func TestCompareRuns(t *testing.T) {
	runs := []string{"10", "2", "1", "b", "a"}
	slices.SortFunc(runs, compare.CompareRuns)
	if diff := cmp.Diff([]string{"1", "2", "a", "b", "10"}, runs); diff != "" {
		t.Errorf("run order (-want +got):\n%s", diff)
	}
}
