package events_test

import (
	"testing"

	"github.com/schedlens/schedlens/internal/events"
)

// BenchmarkDecode reads a pod snapshot, the commonest and largest kind; b.ReportMetric gives
// bytes per second through the codec (bounds included).
func BenchmarkDecode(b *testing.B) {
	msg := []byte(podStatusJSON)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := events.Decode(msg); err != nil {
			b.Fatal(err)
		}
	}
}
