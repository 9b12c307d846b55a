package compare_test

import (
	"math/rand/v2"
	"testing"

	"github.com/schedlens/schedlens/internal/compare"
)

// BenchmarkCompare compares two arms of 3 runs × 3 pods × 100 requests (the within-run
// bootstrap dominates, computed every time: the memo is off); ns/op divided by the 6 runs is
// the cost per run.
func BenchmarkCompare(b *testing.B) {
	arms := experiment(rand.New(rand.NewPCG(1, 1)), issueDesign, labWorkload, labNoise, noEffect)
	defer compare.DisableMemo()()
	b.ResetTimer()
	for b.Loop() {
		compare.Compare("control", arms, nil, compare.Options{Primary: day20Primary})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/6/1e6, "ms/run")
}
