package compare_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/schedlens/schedlens/internal/compare"
)

// arm draws runs × one value per metric: each metric normal around its base value (times the
// planted factor for that metric) with 10 % run-to-run noise.
func arm(rng *rand.Rand, name string, runs int, factor map[string]float64) compare.ArmInput {
	in := compare.ArmInput{Name: name, Pods: 3 * runs, Metrics: map[string][]float64{}}
	for i, m := range compare.Metrics {
		base := 10 + float64(i)
		if f, ok := factor[m.Name]; ok {
			base *= f
		}
		for range runs {
			in.Metrics[m.Name] = append(in.Metrics[m.Name], base*(1+0.1*rng.NormFloat64()))
		}
	}
	return in
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

func verdicts(r compare.ArmResult) map[string]string {
	out := map[string]string{}
	for _, m := range r.Metrics {
		if m.Verdict != compare.NoDifference {
			out[m.Metric] = m.Verdict
		}
	}
	return out
}

func TestPlantedEffects(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 6))
	ctl := arm(rng, "control", 5, nil)
	tradeOff := arm(rng, "affinity", 5, map[string]float64{"pending_p50_s": 0.3, "pending_p95_s": 0.3, "model_load_p50_s": 2})
	better := map[string]float64{}
	for _, m := range compare.Metrics {
		if m.Direction == compare.LowerIsBetter {
			better[m.Name] = 0.5
		} else {
			better[m.Name] = 1.5
		}
	}
	improved := arm(rng, "priority", 5, better)
	worse := arm(rng, "sharing", 5, map[string]float64{"latency_p95_ms": 3, "error_rate": 2.5})
	rs := compare.Compare(compare.Metrics, "control", []compare.ArmInput{ctl, tradeOff, improved, worse}, nil, compare.Options{})

	if r := result(t, rs, "affinity"); r.Verdict != compare.TradeOff || !strings.Contains(r.Explanation, "moved from scheduling to execution") {
		t.Errorf("lower pending, higher model load: %s (%s), verdicts %v; want trade_off", r.Verdict, r.Explanation, verdicts(r))
	}
	if r := result(t, rs, "priority"); r.Verdict != compare.Improvement {
		t.Errorf("better on every metric: %s (%s); want improvement", r.Verdict, r.Explanation)
	} else if n := len(verdicts(r)); n < len(compare.Metrics)/2 {
		t.Errorf("better on every metric, but only %d metrics called: %v", n, verdicts(r))
	}
	if r := result(t, rs, "sharing"); r.Verdict != compare.Regression {
		t.Errorf("worse tail latency and errors: %s (%s); want regression", r.Verdict, r.Explanation)
	}
	if r := result(t, rs, "control"); !r.Baseline || r.Verdict != "" {
		t.Errorf("baseline: %+v", r)
	}
	// Direction: lower pending is better, a positive difference on gpu util is better.
	for _, m := range result(t, rs, "priority").Metrics {
		if m.Verdict == compare.Worse {
			t.Errorf("%s called worse for an arm better on it", m.Metric)
		}
	}
}

// An arm that differs from the control only by chance is no_effect in at least 95 of 100
// simulated experiments (3 repeats each, every metric compared).
func TestNoEffectWhenOnlyTheSeedDiffers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	noEffect := 0
	for range 100 {
		rs := compare.Compare(compare.Metrics, "control", []compare.ArmInput{arm(rng, "control", 3, nil), arm(rng, "same", 3, nil)}, nil, compare.Options{})
		if result(t, rs, "same").Verdict == compare.NoEffect {
			noEffect++
		}
	}
	if noEffect < 95 {
		t.Errorf("no_effect in %d of 100 experiments of identical arms; want at least 95", noEffect)
	}
	t.Logf("identical arms: no_effect in %d of 100", noEffect)
}

func TestInsufficientDataAndThresholds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	one := compare.Compare(compare.Metrics, "control", []compare.ArmInput{arm(rng, "control", 1, nil), arm(rng, "affinity", 1, nil)}, nil, compare.Options{})
	if r := result(t, one, "affinity"); r.Verdict != compare.InsufficientData {
		t.Errorf("a single run: %s; want insufficient_data", r.Verdict)
	}
	few := arm(rng, "affinity", 3, nil)
	few.Pods = 2
	if r := result(t, compare.Compare(compare.Metrics, "control", []compare.ArmInput{arm(rng, "control", 3, nil), few}, nil, compare.Options{}), "affinity"); r.Verdict != compare.InsufficientData {
		t.Errorf("two pods: %s; want insufficient_data", r.Verdict)
	}
	if r := result(t, compare.Compare(compare.Metrics, "nope", []compare.ArmInput{few}, nil, compare.Options{}), "affinity"); r.Verdict != compare.InsufficientData {
		t.Errorf("no baseline: %s; want insufficient_data", r.Verdict)
	}

	limit := 30.0 // latency_p95_ms is about 21 in control, 42 in the slow arm
	th := []compare.Threshold{{Name: "p95_latency_ms", Metric: "latency_p95_ms", Max: &limit}}
	rs := compare.Compare(compare.Metrics, "control", []compare.ArmInput{arm(rng, "control", 3, nil), arm(rng, "slow", 3, map[string]float64{"latency_p95_ms": 2})}, th, compare.Options{})
	if b := result(t, rs, "slow").Breaches; len(b) != 1 || !strings.HasPrefix(b[0], "p95_latency_ms: latency_p95_ms") {
		t.Errorf("breaches %v; want the p95 latency threshold", b)
	}
	if b := result(t, rs, "control").Breaches; len(b) != 0 {
		t.Errorf("control breaches %v; want none", b)
	}
}
