package align_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
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

// A device dcgm-exporter reports for several pods (a time-sliced GPU, a shared DRA claim) is
// divided among them: the pods' GPU seconds add up to the device's, never more.
func TestSharedDeviceNotCountedTwice(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var envs []*events.Envelope
	uids := []string{"7f1c0000-0000-4000-8000-000000000001", "7f1c0000-0000-4000-8000-000000000002"}
	for i := range 4 { // 4 scrapes, 30 s apart, each naming both pods
		for j, uid := range uids {
			envs = append(envs, &events.Envelope{ID: fmt.Sprintf("gpu_sample/n/GPU-1/%d/%d", i, j), Kind: events.KindGPUSample,
				OccurredAt: at.Add(time.Duration(i) * 30 * time.Second), Pod: &events.PodRef{Namespace: "ns", Name: fmt.Sprint("p", j), UID: uid},
				Payload: &events.GPUSample{GPU: "0", UUID: "GPU-1", PeriodS: 30, SharedBy: 2, Metrics: map[string]float64{"DCGM_FI_DEV_GPU_UTIL": 60}}})
		}
	}
	total := 0.0
	for _, uid := range uids {
		tl, ok := align.Build(uid, envs, events.DefaultLabelKeys)
		if !ok || tl.GPU == nil {
			t.Fatalf("%s: no GPU summary", uid)
		}
		if tl.GPU.UtilMean != 60 {
			t.Errorf("%s: util mean %v, want the device's 60", uid, tl.GPU.UtilMean)
		}
		total += tl.GPU.Seconds
	}
	if total != 120 {
		t.Errorf("the pods' GPU seconds add up to %v, want the device's 120", total)
	}
}
