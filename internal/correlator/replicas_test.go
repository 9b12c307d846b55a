package correlator_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/metricstest"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/store"
)

// reads is everything the api serves from the projections of one experiment: every pod's
// timeline (pod_timeline and its series), the pod list, the comparison input, each run's
// interruptions, and the stats.
type reads struct {
	Timelines     map[string]align.Timeline
	Pods          []align.Summary
	Comparison    any
	Interruptions map[string][]report.ArmInterruptions
	Stats         store.Stats
}

func readAll(t *testing.T, db *store.DB, envs []*events.Envelope, experiment string) reads {
	t.Helper()
	ctx := context.Background()
	r := reads{Timelines: map[string]align.Timeline{}, Interruptions: map[string][]report.ArmInterruptions{}}
	runs := map[string]bool{}
	for _, env := range envs {
		uid := env.PodUID()
		if uid == "" {
			continue
		}
		if _, done := r.Timelines[uid]; done {
			continue
		}
		tl, err := db.Timeline(ctx, uid)
		if err != nil {
			t.Fatalf("timeline %s: %v", uid, err)
		}
		for i := range tl.Events {
			tl.Events[i].Data = canonical(tl.Events[i].Data)
		}
		r.Timelines[uid] = tl
		if tl.Experiment.Run != nil {
			runs[*tl.Experiment.Run] = true
		}
	}
	for cursor := ""; ; {
		page, err := db.ListPods(ctx, store.PodFilter{}, 50, cursor)
		if err != nil {
			t.Fatalf("list pods: %v", err)
		}
		r.Pods = append(r.Pods, page.Pods...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	in, err := db.ComparisonInput(ctx, experiment, "")
	if err != nil {
		t.Fatalf("comparison input: %v", err)
	}
	r.Comparison = in
	for run := range runs {
		arms, err := db.RunInterruptions(ctx, experiment, "", run, 2*time.Second)
		if err != nil {
			t.Fatalf("interruptions of run %s: %v", run, err)
		}
		r.Interruptions[run] = arms
	}
	if r.Stats, err = db.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// Three correlators on the one durable consumer, each with its own connection pool, small and
// different batch sizes, one, two and three batches stored at once, and random pauses before
// their acks, over a stream published in a shuffled order with copies (outside JetStream's
// duplicate window: no message id), store exactly what one correlator storing one batch at a
// time stores from the stream in order: the same timelines, pod list, comparison input,
// interruptions and counts. Three seeds give three interleavings.
func TestThreeCorrelatorsAgreeWithOne(t *testing.T) {
	t.Parallel()
	cfg := eventgen.Default()
	cfg.Runs, cfg.InventoryEvery, cfg.OversizedRuns = 5, 2, 1
	envs := eventgen.Generate(cfg)

	one := setup(t)
	one.publish(envs)
	single := testConfig()
	single.ConcurrentBatches = 1 // the reference: one batch at a time
	one.start(single, prometheus.NewRegistry())
	one.drained("correlator")
	want := readAll(t, one.db, envs, cfg.Experiment)
	if len(want.Timelines) == 0 || want.Stats.EventsTotal != int64(len(envs)) {
		t.Fatalf("one correlator stored %d events of %d, %d timelines", want.Stats.EventsTotal, len(envs), len(want.Timelines))
	}

	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 12))
		three := setup(t)
		order := slices.Clone(envs)
		for _, i := range rng.Perm(len(envs))[:len(envs)/5] {
			order = append(order, envs[i]) // a copy JetStream does not drop: Postgres must
		}
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		published := map[string]bool{}
		for _, env := range order {
			opts := []jetstream.PublishOpt{}
			if !published[env.ID] {
				opts = append(opts, jetstream.WithMsgID(env.ID))
				published[env.ID] = true
			}
			if _, err := three.js.Publish(context.Background(), events.SubjectOf(env), env.Raw, opts...); err != nil {
				t.Fatalf("publish %s: %v", env.ID, err)
			}
		}
		var mu sync.Mutex
		var regs []*prometheus.Registry
		for k, size := range []int{7, 19, 41} {
			db, err := store.Open(context.Background(), three.url, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(db.Close)
			c := testConfig()
			c.BatchSize, c.BatchWait = size, time.Duration(5+10*k)*time.Millisecond
			c.ConcurrentBatches = 1 + k // and several batches at once within a replica
			pause := rand.New(rand.NewPCG(seed, uint64(k)))
			c.BeforeAck = func(int) error {
				mu.Lock()
				d := time.Duration(pause.IntN(8)) * time.Millisecond
				mu.Unlock()
				time.Sleep(d)
				return nil
			}
			replica := &env{t: t, js: three.js, db: db, url: three.url}
			reg := prometheus.NewRegistry()
			regs = append(regs, reg)
			replica.start(c, reg)
		}
		three.drained("correlator")
		var stored, copies []float64
		for _, reg := range regs {
			stored = append(stored, metricstest.Value(t, reg, "schedlens_correlator_events_stored_total"))
			copies = append(copies, metricstest.Value(t, reg, "schedlens_correlator_duplicates_total"))
		}
		if stored[0]+stored[1]+stored[2] != float64(len(envs)) || copies[0]+copies[1]+copies[2] != float64(len(order)-len(envs)) || slices.Contains(stored, 0) {
			t.Errorf("seed %d: replicas stored %v events and saw %v copies; want %d and %d in all, every replica some", seed, stored, copies, len(envs), len(order)-len(envs))
		}
		got := readAll(t, three.db, envs, cfg.Experiment)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d: three correlators disagree with one (-one +three):\n%s", seed, diff)
		}
	}
}

// canonical re-encodes a JSON document so that jsonb's key order and spacing do not count.
func canonical(b []byte) []byte {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return b
	}
	out, _ := json.Marshal(v)
	return out
}
