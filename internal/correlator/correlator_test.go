package correlator_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/metricstest"
	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

type env struct {
	t   *testing.T
	js  jetstream.JetStream
	db  *store.DB
	url string
}

func setup(t *testing.T) *env {
	t.Helper()
	js := natstest.Start(t).Stream()
	url := pgtest.URL(t)
	db, err := store.Open(context.Background(), url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return &env{t: t, js: js, db: db, url: url}
}

func (e *env) publish(envs []*events.Envelope) {
	e.t.Helper()
	for _, env := range envs {
		if _, err := e.js.Publish(context.Background(), events.SubjectOf(env), env.Raw, jetstream.WithMsgID(env.ID)); err != nil {
			e.t.Fatalf("publish %s: %v", env.ID, err)
		}
	}
}

// publishRaw publishes body as it is on subject, with msgID for JetStream's deduplication: a
// message the collector would never send.
func (e *env) publishRaw(subject, msgID, body string) {
	e.t.Helper()
	msg := &nats.Msg{Subject: subject, Data: []byte(body), Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	if _, err := e.js.PublishMsg(context.Background(), msg); err != nil {
		e.t.Fatalf("publish %s: %v", msgID, err)
	}
}

// deadLetters returns the stored dead letters, at most limit, in stream order.
func (e *env) deadLetters(limit int) []store.StoredDeadLetter {
	e.t.Helper()
	dls, err := e.db.DeadLetters(context.Background(), limit)
	if err != nil {
		e.t.Fatal(err)
	}
	sort.Slice(dls, func(i, j int) bool { return dls[i].StreamSeq < dls[j].StreamSeq })
	return dls
}

// start runs a correlator until the test ends; it returns Run's result channel.
func (e *env) start(cfg correlator.Config, reg prometheus.Registerer) (context.CancelFunc, <-chan error) {
	e.t.Helper()
	c, err := correlator.New(e.js, e.db, cfg, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, finished := make(chan error, 1), make(chan struct{})
	go func() { done <- c.Run(ctx); close(finished) }()
	e.t.Cleanup(func() { cancel(); <-finished })
	return cancel, done
}

// drained waits until the consumer has nothing pending or unacknowledged.
func (e *env) drained(consumer string) {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c, err := e.js.Consumer(context.Background(), bus.StreamName, consumer)
		if err == nil {
			info, err := c.Info(context.Background())
			if err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.Delivered.Stream > 0 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("consumer %s not drained in time", consumer)
}

func (e *env) stats() store.Stats {
	e.t.Helper()
	s, err := e.db.Stats(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// checkTimelines compares every pod's stored timeline with align's over the published events.
func (e *env) checkTimelines(envs []*events.Envelope) {
	e.t.Helper()
	uids := map[string]bool{}
	for _, env := range envs {
		if uid := env.PodUID(); uid != "" {
			uids[uid] = true
		}
	}
	for uid := range uids {
		want, _ := align.Build(uid, envs, events.DefaultLabelKeys)
		got, err := e.db.Timeline(context.Background(), uid)
		if err != nil {
			e.t.Fatalf("timeline %s: %v", uid, err)
		}
		want.Events, got.Events = nil, nil
		if diff := cmp.Diff(want, got); diff != "" {
			e.t.Errorf("pod %s: (-align +stored):\n%s", uid, diff)
		}
	}
}

func testConfig() correlator.Config {
	cfg := correlator.DefaultConfig()
	cfg.BatchSize, cfg.BatchWait, cfg.AckWait, cfg.RetryDelay = 64, 50*time.Millisecond, 2*time.Second, 200*time.Millisecond
	return cfg
}

func TestStoresEventsAndDeadLettersEachKindOfPoison(t *testing.T) {
	t.Parallel()
	e := setup(t)
	envs := eventgen.Generate(eventgen.Default())
	var good *events.Envelope
	for _, env := range envs {
		if env.Kind == events.KindPodStatus {
			good = env
			break
		}
	}
	goodJSON := string(good.Raw)
	poison := []struct {
		name, subject, body, wantErr string
	}{
		{"not json", "schedlens.v1.lab.pod_status", `{"v":1,`, "not valid JSON"},
		{"invalid utf-8", "schedlens.v1.lab.pod_status", "{\"v\":1,\"id\":\"\xff\"}", "not valid UTF-8"},
		{"nul escape", "schedlens.v1.lab.pod_status", strings.Replace(goodJSON, `"eventgen"`, `"event\u0000gen"`, 1), `\u0000`},
		{"missing id", "schedlens.v1.lab.pod_status", strings.Replace(goodJSON, `"id":`, `"idx":`, 1), "id: missing"},
		{"unknown kind", "schedlens.v1.lab.pod_status", strings.Replace(goodJSON, `"kind":"pod_status"`, `"kind":"pod_mood"`, 1), `unknown kind "pod_mood"`},
		{"wrong type", "schedlens.v1.lab.pod_status", strings.Replace(goodJSON, `"phase":"Pending"`, `"phase":7`, 1), "data.phase"},
		{"wrong subject", "schedlens.v1.lab.request", goodJSON, "arrived on subject"},
		{"bad uid", "schedlens.v1.lab.pod_status", strings.Replace(goodJSON, good.Pod.UID, "not-a-uid", -1), "pod.uid"},
	}
	// Poison first, in the middle and last: the pipeline must keep going around it.
	e.publish(envs[:len(envs)/2])
	for i, p := range poison {
		e.publishRaw(p.subject, "poison-"+string(rune('a'+i)), p.body)
	}
	e.publish(envs[len(envs)/2:])

	reg := prometheus.NewRegistry()
	e.start(testConfig(), reg)
	e.drained("correlator")

	st := e.stats()
	if st.EventsTotal != int64(len(envs)) || st.DeadLettersTotal != int64(len(poison)) {
		t.Fatalf("events %d, dead letters %d; want %d and %d", st.EventsTotal, st.DeadLettersTotal, len(envs), len(poison))
	}
	dls := e.deadLetters(100)
	for i, p := range poison {
		if !strings.Contains(dls[i].Error, p.wantErr) || dls[i].Subject != p.subject {
			t.Errorf("%s: dead letter %q on %s, want error containing %q on %s", p.name, dls[i].Error, dls[i].Subject, p.wantErr, p.subject)
		}
		if dls[i].Stream != bus.StreamName || dls[i].StreamSeq == 0 {
			t.Errorf("%s: dead letter position %s/%d", p.name, dls[i].Stream, dls[i].StreamSeq)
		}
	}
	if got := metricstest.Value(t, reg, "schedlens_correlator_dead_letters_total"); got != float64(len(poison)) {
		t.Errorf("dead letter metric = %v, want %d", got, len(poison))
	}
	if got := metricstest.Value(t, reg, "schedlens_correlator_events_stored_total"); got != float64(len(envs)) {
		t.Errorf("events stored metric = %v, want %d", got, len(envs))
	}
	e.checkTimelines(envs)
}

// A consumer killed after commit and before ack: the batches it held are redelivered to the
// next one, stored again as duplicates, and nothing is lost or counted twice. Storing batches
// at once, it can have committed one per concurrent batch when it dies.
func TestCrashBetweenCommitAndAckLosesAndDoublesNothing(t *testing.T) {
	t.Parallel()
	for _, concurrent := range []int{1, 2} {
		t.Run(fmt.Sprintf("concurrent-batches=%d", concurrent), func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			envs := eventgen.Generate(eventgen.Default())
			e.publish(envs)

			crash := errors.New("killed between commit and ack")
			cfg := testConfig()
			cfg.ConcurrentBatches = concurrent
			cfg.BeforeAck = func(int) error { return crash }
			_, done := e.start(cfg, prometheus.NewRegistry())
			select {
			case err := <-done:
				if !errors.Is(err, crash) {
					t.Fatalf("first correlator ended with %v, want the crash", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("first correlator never committed a batch")
			}
			if committed := e.stats().EventsTotal; committed == 0 || committed > int64(concurrent*cfg.BatchSize) {
				t.Fatalf("after the crash %d events are stored, want at most one batch per concurrent batch (1..%d)", committed, concurrent*cfg.BatchSize)
			}

			reg := prometheus.NewRegistry()
			e.start(testConfig(), reg)
			e.drained("correlator")
			if got := e.stats().EventsTotal; got != int64(len(envs)) {
				t.Errorf("events stored = %d, want %d", got, len(envs))
			}
			if got := metricstest.Value(t, reg, "schedlens_correlator_duplicates_total"); got == 0 {
				t.Error("the redelivered batch was not seen as duplicates")
			}
			e.checkTimelines(envs)
		})
	}
}

// With -concurrent-batches 2 two batches are in their transactions at once: each batch's
// BeforeAck (after its commit) waits for the other's, which can only come while it waits.
// Stored one batch at a time, the first would wait alone and the test fails.
func TestBatchesAreStoredConcurrently(t *testing.T) {
	t.Parallel()
	e := setup(t)
	envs := eventgen.Generate(eventgen.Default())
	e.publish(envs)

	cfg := testConfig()
	cfg.ConcurrentBatches = 2
	var (
		mu      sync.Mutex
		waiting int
		met     = make(chan struct{})
	)
	cfg.BeforeAck = func(int) error {
		mu.Lock()
		if waiting++; waiting == 2 {
			close(met)
		}
		mu.Unlock()
		select {
		case <-met:
			return nil
		case <-time.After(20 * time.Second):
			return errors.New("no second batch was stored while the first waited to be acknowledged")
		}
	}
	_, done := e.start(cfg, prometheus.NewRegistry())
	select {
	case <-met:
	case err := <-done:
		t.Fatalf("correlator stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("two batches were never in flight at once")
	}
	e.drained("correlator")
	if got := e.stats().EventsTotal; got != int64(len(envs)) {
		t.Errorf("events stored = %d, want %d", got, len(envs))
	}
	e.checkTimelines(envs)
}

// A database failure that is not about the data (here: the events table is briefly missing)
// leaves the batch for redelivery; once the database is back, everything is stored.
func TestTransientDatabaseFailureIsRetried(t *testing.T) {
	t.Parallel()
	e := setup(t)
	admin, err := pgx.Connect(context.Background(), e.url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(context.Background(), `ALTER TABLE events RENAME TO events_away`); err != nil {
		t.Fatal(err)
	}
	envs := eventgen.Generate(eventgen.Default())
	e.publish(envs)
	reg := prometheus.NewRegistry()
	e.start(testConfig(), reg)

	deadline := time.Now().Add(20 * time.Second)
	for metricstest.Value(t, reg, "schedlens_correlator_batch_failures_total") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no batch failed while the table was away")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := admin.Exec(context.Background(), `ALTER TABLE events_away RENAME TO events`); err != nil {
		t.Fatal(err)
	}
	e.drained("correlator")
	if got := e.stats().EventsTotal; got != int64(len(envs)) {
		t.Errorf("events stored = %d, want %d", got, len(envs))
	}
	if got := e.stats().DeadLettersTotal; got != 0 {
		t.Errorf("dead letters = %d, want 0: a transient failure is not poison", got)
	}
	e.checkTimelines(envs)
}

// Cancelling Run while a batch is in flight still commits and acknowledges that batch.
func TestShutdownFinishesInFlightBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	envs := eventgen.Generate(eventgen.Default())
	e.publish(envs)
	cfg := testConfig()
	var cancel context.CancelFunc
	cfg.BeforeAck = func(int) error { cancel(); return nil }
	c, err := correlator.New(e.js, e.db, cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	cancel = stop
	if err := c.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	stored := e.stats().EventsTotal
	if stored == 0 {
		t.Fatal("the in-flight batch was not stored")
	}
	cons, err := e.js.Consumer(context.Background(), bus.StreamName, cfg.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := cons.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.NumAckPending == 0 && info.AckFloor.Stream == uint64(stored) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after shutdown: %d unacknowledged, ack floor %d, want 0 and %d", info.NumAckPending, info.AckFloor.Stream, stored)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
