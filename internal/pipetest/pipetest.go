// Package pipetest fills a test's database through the real pipeline: envelopes published to
// an in-process NATS JetStream (internal/natstest), consumed by the correlator into the test's
// own Postgres database (internal/pgtest). Tests of what reads the store (the api, the web UI,
// the importer's read-back) use it so that what they read was written the way production
// writes it.
package pipetest

import (
	"context"
	"log/slog"
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

// Pipeline is a running NATS server with schedlens' stream and a test database, and the
// correlator between them once started.
type Pipeline struct {
	t testing.TB
	// JS reaches the stream, for tests that publish through code of their own.
	JS jetstream.JetStream
	// DB is the store the correlator writes, for the code under test to read.
	DB *store.DB
	// URL is the test database's URL; NATSURL the NATS server's, for a collector to publish to.
	URL, NATSURL string
}

// Start runs NATS and a correlator on a new test database until the test ends.
func Start(t testing.TB) *Pipeline {
	t.Helper()
	p := Open(t)
	p.StartCorrelator()
	return p
}

// Open runs NATS with schedlens' stream and opens a new test database, without a correlator:
// what is published stays in the stream until StartCorrelator.
func Open(t testing.TB) *Pipeline {
	t.Helper()
	url := pgtest.URL(t)
	srv := natstest.Start(t)
	return &Pipeline{t: t, JS: srv.Stream(), DB: pgtest.Open(t, url), URL: url, NATSURL: srv.URL()}
}

// StartCorrelator runs a correlator from the stream into the database until the test ends; a
// correlator that stops before then, with an error or without, fails the test.
func (p *Pipeline) StartCorrelator() {
	p.t.Helper()
	cfg := correlator.DefaultConfig()
	cfg.BatchWait = 50 * time.Millisecond
	c, err := correlator.New(p.JS, p.DB, cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		p.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	p.t.Cleanup(func() {
		select {
		case err := <-done:
			p.t.Errorf("the correlator stopped before the test ended: %v", err)
			cancel()
			return
		default:
		}
		cancel()
		<-done
	})
}

// Publish sends envelopes to the stream as a collector would (bus.PublishAll: Nats-Msg-Id = id)
// and waits until the correlator (StartCorrelator) has stored every one of them.
func (p *Pipeline) Publish(envs []*events.Envelope) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := bus.PublishAll(ctx, p.JS, envs); err != nil {
		p.t.Fatalf("publish: %v", err)
	}
	for ctx.Err() == nil {
		c, err := p.JS.Consumer(ctx, bus.StreamName, correlator.DefaultConfig().Consumer)
		if err == nil {
			info, err := c.Info(ctx)
			if err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.AckFloor.Stream >= p.StreamState().LastSeq {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatal("correlator did not store everything within 2 minutes")
}

// StreamState is the state of schedlens' stream: its messages and sequence numbers.
func (p *Pipeline) StreamState() jetstream.StreamState {
	p.t.Helper()
	return natstest.Info(p.t, p.JS).State
}
