// Package pipetest fills a test's database through the real pipeline: envelopes published to
// an in-process NATS JetStream (internal/natstest), consumed by the correlator into the test's
// own Postgres database (internal/pgtest). Tests of what reads the store (the api, the web UI)
// use it so that what they read was written the way production writes it.
package pipetest

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

// Pipeline is a running NATS server and correlator over a test database.
type Pipeline struct {
	t  testing.TB
	js jetstream.JetStream
	// DB is the store the correlator writes, for the code under test to read.
	DB *store.DB
	// URL is the test database's URL.
	URL string
}

// Start runs NATS and a correlator on a new test database until the test ends.
func Start(t testing.TB) *Pipeline {
	t.Helper()
	url := pgtest.URL(t)
	js := natstest.Start(t).Stream()
	ctx := context.Background()
	db, err := store.Open(ctx, url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	cfg := correlator.DefaultConfig()
	cfg.BatchWait = 50 * time.Millisecond
	c, err := correlator.New(js, db, cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && runCtx.Err() == nil {
			t.Errorf("correlator: %v", err)
		}
	})
	return &Pipeline{t: t, js: js, DB: db, URL: url}
}

// Publish sends envelopes to the stream as a collector would (Nats-Msg-Id = id) and waits until
// the correlator has stored every one of them.
func (p *Pipeline) Publish(envs []*events.Envelope) {
	p.t.Helper()
	ctx := context.Background()
	for chunk := range slices.Chunk(envs, 1000) {
		futures := make([]jetstream.PubAckFuture, 0, len(chunk))
		for _, env := range chunk {
			f, err := p.js.PublishAsync(events.SubjectOf(env), env.Raw, jetstream.WithMsgID(env.ID))
			if err != nil {
				p.t.Fatalf("publish %s: %v", env.ID, err)
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				p.t.Fatalf("publish: %v", err)
			case <-time.After(30 * time.Second):
				p.t.Fatal("publish: no acknowledgement in 30s")
			}
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		c, err := p.js.Consumer(ctx, bus.StreamName, correlator.DefaultConfig().Consumer)
		if err == nil {
			info, err := c.Info(ctx)
			if err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.AckFloor.Stream >= lastSeq(ctx, p.t, p.js) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatal("correlator did not store everything within 2 minutes")
}

func lastSeq(ctx context.Context, t testing.TB, js jetstream.JetStream) uint64 {
	s, err := js.Stream(ctx, bus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}
