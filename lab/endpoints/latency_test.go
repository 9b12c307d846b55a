package endpoints_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/schedlens/schedlens/lab/endpoints"
	"github.com/schedlens/schedlens/lab/sim"
)

// median of 200 seeded draws of Latency(p).
func median(p sim.Pod, seed uint64) time.Duration {
	rng := rand.New(rand.NewPCG(seed, 7))
	ds := make([]time.Duration, 200)
	for i := range ds {
		ds[i] = endpoints.Latency(p, rng)
	}
	slices.Sort(ds)
	return (ds[99] + ds[100]) / 2
}

func gpuPod(model, sharing string, sharers int, mig string) sim.Pod {
	return sim.Pod{GPUModel: model, Sharing: sharing, Sharers: sharers, MIGProfile: mig}
}

const (
	h100 = "NVIDIA-H100-80GB-HBM3"
	a100 = "NVIDIA-A100-SXM4-80GB"
	l40s = "NVIDIA-L40S"
	t4   = "Tesla-T4"
)

func TestLatencyOrdering(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		slow, fast    sim.Pod
		minRatio, max float64 // bounds of median(slow)/median(fast)
	}{
		{"A100 exclusive slower than H100 exclusive", gpuPod(a100, "exclusive", 1, ""), gpuPod(h100, "exclusive", 1, ""), 1.3, 1.7},
		{"L40S exclusive slower than A100 exclusive", gpuPod(l40s, "exclusive", 1, ""), gpuPod(a100, "exclusive", 1, ""), 1.1, 1.6},
		{"T4 exclusive slower than L40S exclusive", gpuPod(t4, "exclusive", 1, ""), gpuPod(l40s, "exclusive", 1, ""), 1.7, 2.3},
		{"time-slicing 4 sharers is 4x exclusive", gpuPod(h100, "time-slicing", 4, ""), gpuPod(h100, "exclusive", 1, ""), 3.6, 4.4},
		{"MPS 4 sharers is about 2x exclusive", gpuPod(h100, "mps", 4, ""), gpuPod(h100, "exclusive", 1, ""), 1.8, 2.3},
		{"time-slicing slower than MPS at 4 sharers", gpuPod(a100, "time-slicing", 4, ""), gpuPod(a100, "mps", 4, ""), 1.6, 2.4},
		{"MIG 1g slower than 7g", gpuPod(a100, "mig", 1, "1g.10gb"), gpuPod(a100, "mig", 1, "7g.80gb"), 3.1, 3.9},
		{"MIG 3g slower than 7g", gpuPod(a100, "mig", 1, "3g.40gb"), gpuPod(a100, "mig", 1, "7g.80gb"), 1.3, 1.7},
		{"MIG 1g slower than 2g", gpuPod(a100, "mig", 1, "1g.10gb"), gpuPod(a100, "mig", 1, "2g.20gb"), 1.5, 2.0},
		{"time-slicing with one sharer is exclusive", gpuPod(t4, "time-slicing", 1, ""), gpuPod(t4, "exclusive", 1, ""), 0.9, 1.1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slow, fast := median(tt.slow, 1), median(tt.fast, 2)
			ratio := float64(slow) / float64(fast)
			if ratio < tt.minRatio || ratio > tt.max {
				t.Errorf("median %v / median %v = %.2f, want in [%.2f, %.2f]", slow, fast, ratio, tt.minRatio, tt.max)
			}
		})
	}
}

func TestLatencyBase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model string
		want  time.Duration
	}{
		{h100, 20 * time.Millisecond},
		{"NVIDIA-H100-80GB-HBM3-SHARED", 20 * time.Millisecond},
		{a100, 30 * time.Millisecond},
		{l40s, 40 * time.Millisecond},
		{t4, 80 * time.Millisecond},
		{"NVIDIA-B200", 50 * time.Millisecond},
		{"", 50 * time.Millisecond},
	}
	for _, tt := range tests {
		got := median(gpuPod(tt.model, "exclusive", 1, ""), 3)
		if d := float64(got)/float64(tt.want) - 1; d < -0.05 || d > 0.05 {
			t.Errorf("%q: median %v, want %v ± 5%%", tt.model, got, tt.want)
		}
	}
}

func TestLatencyDeterministicWithTail(t *testing.T) {
	t.Parallel()
	p := gpuPod(a100, "exclusive", 1, "")
	r1, r2 := rand.New(rand.NewPCG(9, 9)), rand.New(rand.NewPCG(9, 9))
	tail := 0
	for i := range 5000 {
		a, b := endpoints.Latency(p, r1), endpoints.Latency(p, r2)
		if a != b {
			t.Fatalf("draw %d: %v and %v from identically seeded generators", i, a, b)
		}
		if a > 55*time.Millisecond { // 30 ms × 3 in the tail; jitter alone would need 6σ
			tail++
		}
	}
	if tail < 25 || tail > 80 {
		t.Errorf("%d of 5000 draws in the tail, want about 50", tail)
	}
}
