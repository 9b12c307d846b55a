package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
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

// BenchmarkRequestIndex is what the index of successful requests (events_request_ok,
// migration 00019) costs ingest: request-heavy envelopes (the default experiment with 500
// requests per pod) appended to a database with the index and to one without it, the two in
// turn each iteration, with ids of the iteration's own. It reports both rates and the cost,
// (without − with) ÷ without, in percent.
func BenchmarkRequestIndex(b *testing.B) {
	ctx := context.Background()
	with, without := pgtest.DB(b), pgtest.DB(b)
	if _, err := without.Exec(ctx, `DROP INDEX events_request_ok`); err != nil {
		b.Fatal(err)
	}
	cfg := eventgen.Default()
	cfg.RequestsPerPod = 500
	var took [2]time.Duration
	appended := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cfg.IDPrefix = fmt.Sprintf("iteration-%d/", i)
		envs := eventgen.Generate(cfg)
		b.StartTimer()
		for k := range 2 {
			db := []*store.DB{with, without}[(i+k)%2]
			start := time.Now()
			for j := 0; j < len(envs); j += 1000 {
				if _, err := db.Append(ctx, envs[j:min(j+1000, len(envs))], nil); err != nil {
					b.Fatal(err)
				}
			}
			took[(i+k)%2] += time.Since(start)
		}
		appended += len(envs)
	}
	rate := func(d time.Duration) float64 { return float64(appended) / d.Seconds() }
	b.ReportMetric(rate(took[0]), "events/s-with-index")
	b.ReportMetric(rate(took[1]), "events/s-without")
	b.ReportMetric(100*(1-rate(took[0])/rate(took[1])), "cost-%")
}
