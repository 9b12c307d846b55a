package align_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
)

// Latency quantiles read from the histogram are within the stated relative error of the exact
// quantile (same rank definition), and histograms of parts merge into the histogram of the whole.
func TestLatencyQuantileRelativeError(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for _, dist := range []struct {
		name string
		draw func() float64
	}{
		{"lognormal around 30 ms", func() float64 { return 30 * math.Exp(0.6*rng.NormFloat64()) }},
		{"bimodal 2 ms / 800 ms", func() float64 {
			if rng.IntN(10) == 0 {
				return 800 + 100*rng.Float64()
			}
			return 2 + rng.Float64()
		}},
		{"sub-millisecond", func() float64 { return 0.05 + 0.5*rng.Float64() }},
	} {
		t.Run(dist.name, func(t *testing.T) {
			var xs []float64
			whole, a, b := map[int32]int64{}, map[int32]int64{}, map[int32]int64{}
			for i := range 5000 {
				x := dist.draw()
				xs = append(xs, x)
				bk := align.LatencyBucket(x)
				whole[bk]++
				if i%3 == 0 {
					a[bk]++
				} else {
					b[bk]++
				}
			}
			merged := map[int32]int64{}
			for _, h := range []map[int32]int64{a, b} {
				for k, v := range h {
					merged[k] += v
				}
			}
			if diff := cmp.Diff(whole, merged); diff != "" {
				t.Errorf("merged parts differ from the whole:\n%s", diff)
			}
			slices.Sort(xs)
			for _, q := range []float64{0.5, 0.9, 0.95, 0.99} {
				exact := xs[int(math.Floor(q*float64(len(xs)-1)))]
				got, ok := align.LatencyQuantile(whole, q)
				if !ok {
					t.Fatal("empty histogram")
				}
				if rel := math.Abs(got-exact) / exact; rel > align.LatencyRelativeError+1e-9 {
					t.Errorf("p%g = %.4f, exact %.4f: relative error %.4f > %.4f", q*100, got, exact, rel, align.LatencyRelativeError)
				}
			}
		})
	}
	if _, ok := align.LatencyQuantile(nil, 0.5); ok {
		t.Error("quantile of an empty histogram: ok")
	}
}

func TestSummarizeGPU(t *testing.T) {
	// 60 s at 0% (model loading), 30 s at 3%, 210 s at 80%.
	g := align.SummarizeGPU(map[int32]float64{0: 60, 3: 30, 80: 210}, 300*16384, 17000, 5)
	fbMean, fbMax := 16384.0, 17000.0
	want := &align.GPUSummary{
		Seconds: 300, UtilMean: (3*30 + 80*210) / 300.0, UtilP95: 80,
		FBUsedMiBMean: &fbMean, FBUsedMiBMax: &fbMax, IdleSeconds: 90, IdleThresholdPct: 5,
	}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if align.SummarizeGPU(nil, 0, 0, 5) != nil {
		t.Error("no samples: want nil")
	}
}
