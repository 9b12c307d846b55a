package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/scope"
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
	rate := appendInTurn(b, [2]*store.DB{with, without}, cfg, 1000)
	b.ReportMetric(rate[0], "events/s-with-index")
	b.ReportMetric(rate[1], "events/s-without")
	b.ReportMetric(100*(1-rate[0]/rate[1]), "cost-%")
}

// BenchmarkAppendBesideAWeek is what a week of stored history costs a batch: the same pod-mix
// envelopes appended to a fresh database and to one holding a week of partitions before them
// (168 hourly partitions of request results: a week of history when raw samples are kept as
// long as events, the binaries' default), the two in turn each iteration, with ids of the
// iteration's own. It reports both rates and their ratio, week ÷ fresh: a statement that cost
// every partition per batch would show here and not in a fresh database's figures.
func BenchmarkAppendBesideAWeek(b *testing.B) {
	fresh, week := pgtest.DB(b), pgtest.DB(b)
	cfg := eventgen.Default()
	cfg.Runs = 40
	weekBefore(b, week, eventgen.Generate(cfg))
	rate := appendInTurn(b, [2]*store.DB{fresh, week}, cfg, 500)
	b.ReportMetric(rate[0], "events/s-fresh")
	b.ReportMetric(rate[1], "events/s-week")
	b.ReportMetric(rate[1]/rate[0], "week/fresh")
}

// appendInTurn appends, each iteration, cfg's envelopes with ids of the iteration's own to the
// two databases in turn (which goes first alternates), in batches of batch, and returns the
// rate each stored at, in events per second.
func appendInTurn(b *testing.B, dbs [2]*store.DB, cfg eventgen.Config, batch int) [2]float64 {
	ctx := context.Background()
	var took [2]time.Duration
	appended := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cfg.IDPrefix = fmt.Sprintf("iteration-%d/", i)
		envs := eventgen.Generate(cfg)
		b.StartTimer()
		for k := range 2 {
			db := dbs[(i+k)%2]
			start := time.Now()
			for j := 0; j < len(envs); j += batch {
				if _, err := db.Append(ctx, envs[j:min(j+batch, len(envs))], nil); err != nil {
					b.Fatal(err)
				}
			}
			took[(i+k)%2] += time.Since(start)
		}
		appended += len(envs)
	}
	return [2]float64{float64(appended) / took[0].Seconds(), float64(appended) / took[1].Seconds()}
}

// weekBefore stores, one a hour, a request result in each of the 168 hours before envs start:
// a week of hourly partitions of samples (what a week of history holds when raw samples are
// kept as long as events, the binaries' default).
func weekBefore(b *testing.B, db *store.DB, envs []*events.Envelope) {
	ctx := context.Background()
	var sample *events.Envelope
	for _, env := range envs {
		if env.Kind == events.KindRequest && env.Pod != nil {
			sample = env
			break
		}
	}
	if sample == nil {
		b.Fatal("no request result to copy")
	}
	start := envs[0].OccurredAt.UTC().Truncate(time.Hour)
	for h := 1; h <= 7*24; h++ {
		env := copyAt(b, sample, fmt.Sprintf("week/%d", h), sample.Pod, start.Add(-time.Duration(h)*time.Hour))
		if _, err := db.Append(ctx, []*events.Envelope{env}, nil); err != nil {
			b.Fatal(err)
		}
	}
	conn, err := db.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	var parts int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent IN ('events_raw'::regclass, 'events_samples'::regclass)`).Scan(&parts)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("partitions of events beside a week: %d", parts)
}

// BenchmarkRunDetailBesideAWeek is what a week of stored history costs the run page's read: one
// run of the default experiment (and the two others) in a fresh database and in one holding a
// week of sample partitions before it, read in turn. It reports the milliseconds of a read in
// each and their ratio, week ÷ fresh.
func BenchmarkRunDetailBesideAWeek(b *testing.B) {
	ctx := context.Background()
	fresh, week := pgtest.DB(b), pgtest.DB(b)
	cfg := eventgen.Default()
	cfg.PodsPerArm = 25
	envs := eventgen.Generate(cfg)
	weekBefore(b, week, envs)
	for _, db := range []*store.DB{fresh, week} {
		for j := 0; j < len(envs); j += 1000 {
			if _, err := db.Append(ctx, envs[j:min(j+1000, len(envs))], nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	var took [2]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			db := []*store.DB{fresh, week}[(i+k)%2]
			start := time.Now()
			if _, err := db.RunDetail(ctx, cfg.Experiment, cfg.Namespace, "2", scope.All); err != nil {
				b.Fatal(err)
			}
			took[(i+k)%2] += time.Since(start)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(took[0]), "ms/read-fresh")
	b.ReportMetric(ms(took[1]), "ms/read-week")
	b.ReportMetric(ms(took[1])/ms(took[0]), "week/fresh")
}
