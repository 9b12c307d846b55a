package store_test

import (
	"context"
	"testing"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
)

func benchEnvelopes(b *testing.B, n int) []*events.Envelope {
	cfg := eventgen.Default()
	cfg.Runs = 1 + n/250
	envs := eventgen.Generate(cfg)
	if len(envs) < n {
		b.Fatalf("only %d envelopes", len(envs))
	}
	return envs[:n]
}

func BenchmarkDecode(b *testing.B) {
	envs := benchEnvelopes(b, 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := events.Decode(envs[i%len(envs)].Raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	db := pgtest.DB(b)
	envs := benchEnvelopes(b, 20000)
	b.ResetTimer()
	n := 0
	for i := 0; i < len(envs); i += 1000 {
		if _, err := db.Append(context.Background(), envs[i:i+1000], nil); err != nil {
			b.Fatal(err)
		}
		n += 1000
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}
