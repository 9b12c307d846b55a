package summary_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/summary"
)

// Property: for generated latencies — lognormal, bimodal, uniform, heavy-tailed, with zeros and
// repeats, 1 to 20,000 of them spread over one pod's buckets — every quantile read from the
// merge of the buckets' sketches, after encoding and decoding each, is within RelativeAccuracy
// of the exact quantile (the latency of rank ⌊q·(n−1)⌋), and the counts are exact.
func TestQuantilesWithinTheBound(t *testing.T) {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	gens := map[string]func(r *rand.Rand) float64{
		"lognormal": func(r *rand.Rand) float64 { return math.Exp(3 + 0.8*r.NormFloat64()) },
		"bimodal": func(r *rand.Rand) float64 {
			if r.IntN(10) == 0 {
				return 800 + 200*r.Float64()
			}
			return 20 + 5*r.Float64()
		},
		"uniform":      func(r *rand.Rand) float64 { return 1000 * r.Float64() },
		"pareto":       func(r *rand.Rand) float64 { return 5 / math.Pow(1-r.Float64(), 1/1.2) },
		"zeros":        func(r *rand.Rand) float64 { return float64(r.IntN(3)) * 0.5 },
		"one value":    func(*rand.Rand) float64 { return 42 },
		"sub-ms":       func(r *rand.Rand) float64 { return 0.01 + r.Float64()*0.2 },
		"minute-tails": func(r *rand.Rand) float64 { return math.Exp(r.Float64() * 11) },
	}
	quantiles := []float64{0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1}
	cases := 0
	for name, gen := range gens {
		for seed := range uint64(25) {
			r := rand.New(rand.NewPCG(seed, 24))
			n := 1 + r.IntN(20000)
			if seed%5 == 0 {
				n = 1 + r.IntN(5)
			}
			var bs summary.Buckets
			var exact []float64
			var errs, pre, preErrs int64
			for range n {
				at := start.Add(time.Duration(r.IntN(600_000)) * time.Millisecond)
				req := &events.Request{OK: r.IntN(20) != 0, LatencyMS: gen(r)}
				ready := r.IntN(8) != 0
				req.PodReady = &ready
				if !req.OK {
					req.Status = 503
					errs++
				}
				if !ready {
					pre++
					if !req.OK {
						preErrs++
					}
				}
				bs.Add("pod", at, req)
				if req.OK {
					exact = append(exact, req.LatencyMS)
				}
			}
			merged := summary.NewSketch()
			var total, gotErrs, gotPre, gotPreErrs int64
			for _, b := range bs.List() {
				total, gotErrs, gotPre, gotPreErrs = total+b.Requests, gotErrs+b.Errors, gotPre+b.PreReady, gotPreErrs+b.PreReadyErrors
				if b.Start.Truncate(summary.Width) != b.Start {
					t.Fatalf("bucket start %s is not on a %s boundary", b.Start, summary.Width)
				}
				enc := b.EncodeLatency()
				if enc == nil {
					continue
				}
				s, err := summary.DecodeLatency(enc)
				if err != nil {
					t.Fatal(err)
				}
				if err := merged.MergeWith(s); err != nil {
					t.Fatal(err)
				}
			}
			if total != int64(n) || gotErrs != errs || gotPre != pre || gotPreErrs != preErrs {
				t.Fatalf("%s seed %d: counts %d/%d/%d/%d, want %d/%d/%d/%d", name, seed, total, gotErrs, gotPre, gotPreErrs, n, errs, pre, preErrs)
			}
			if len(exact) == 0 {
				continue
			}
			slices.Sort(exact)
			if got := int(merged.GetCount()); got != len(exact) {
				t.Fatalf("%s seed %d: the sketch holds %d latencies, want %d", name, seed, got, len(exact))
			}
			for _, q := range quantiles {
				want := exact[int(q*float64(len(exact)-1))]
				got, err := merged.GetValueAtQuantile(q)
				if err != nil {
					t.Fatal(err)
				}
				cases++
				if math.Abs(got-want) > summary.RelativeAccuracy*want+1e-9 {
					t.Errorf("%s seed %d (n %d): q%.3f = %.6g, exact %.6g: relative error %.4f > %.2f",
						name, seed, len(exact), q, got, want, math.Abs(got-want)/want, summary.RelativeAccuracy)
				}
			}
		}
	}
	t.Logf("%d quantiles checked", cases)
}

// A bucket names at most MaxErrorClasses classes; the rest count as "other", and the total
// stays exact.
func TestErrorClassesBounded(t *testing.T) {
	var b summary.Bucket
	for i := range 20 {
		b.Add(time.Unix(0, 0), &events.Request{Status: 500 + i})
	}
	if len(b.ErrorClasses) != summary.MaxErrorClasses+1 || b.ErrorClasses["other"] != 20-summary.MaxErrorClasses || b.Errors != 20 {
		t.Errorf("classes %v, errors %d; want %d named, %d other, 20 in all", b.ErrorClasses, b.Errors, summary.MaxErrorClasses, 20-summary.MaxErrorClasses)
	}
}
