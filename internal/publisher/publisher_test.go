package publisher_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/metricstest"
	"github.com/schedlens/schedlens/internal/natsserver"
	"github.com/schedlens/schedlens/internal/publisher"
	"github.com/schedlens/schedlens/internal/testenv"
)

// start runs a NATS server (configure adjusts it) and a publisher over it until the test ends.
func start(t *testing.T, configure func(*server.Options), stream func(jetstream.JetStream) error) (*publisher.Publisher, jetstream.JetStream, *prometheus.Registry) {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Options{Dir: t.TempDir(), Configure: configure})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream(js); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	cfg := publisher.DefaultConfig()
	cfg.RetryMin, cfg.RetryMax, cfg.Drain = 10*time.Millisecond, 50*time.Millisecond, time.Second
	p := publisher.New(js, nil, cfg, slog.New(slog.DiscardHandler), reg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p, js, reg
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	if !testenv.Until(10*time.Second, 10*time.Millisecond, ok) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func streamMsgs(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), bus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// An envelope larger than the server's max_payload is refused every time: it is dropped and
// counted (schedlens_collector_publish_too_large_total{kind}), not retried — the envelopes
// after it are published, and nothing stays buffered.
func TestTooLargeIsPermanentNotRetried(t *testing.T) {
	p, js, reg := start(t, func(o *server.Options) { o.MaxPayload = 8 << 10 }, func(js jetstream.JetStream) error {
		_, err := bus.EnsureStream(context.Background(), js, bus.StreamConfig{})
		return err
	})
	envs := eventgen.Generate(eventgen.Default())[:3]
	big := *envs[1]
	big.ID += "/big"
	big.Raw = bytes.Repeat([]byte("x"), 16<<10)
	for _, env := range []*events.Envelope{envs[0], &big, envs[2]} {
		if !p.Offer(env) {
			t.Fatal("buffer full")
		}
	}
	waitFor(t, "the small envelopes published", func() bool { return metricstest.Value(t, reg, "schedlens_collector_published_total") == 2 })
	time.Sleep(200 * time.Millisecond) // several retry delays: a retried envelope would count again
	if got := metricstest.Value(t, reg, "schedlens_collector_publish_too_large_total"); got != 1 {
		t.Errorf("publish_too_large_total = %v, want 1", got)
	}
	if got := metricstest.Registered(t, reg, "schedlens_collector_publish_failures_total"); got != 0 {
		t.Errorf("publish_failures_total = %v, want 0: a too-large envelope is not a failure to retry", got)
	}
	if got := p.Buffered(); got != 0 {
		t.Errorf("%d envelopes still buffered, want 0", got)
	}
	if got := streamMsgs(t, js); got != 2 {
		t.Errorf("the stream holds %d messages, want 2", got)
	}
}

// A stream provisioned with discard-new refuses new messages when full: the publisher counts it
// (schedlens_collector_stream_full_total), holds the envelopes, and publishes every one once
// the stream has room again — nothing is lost and nothing old is discarded.
func TestStreamFullBackPressuresThePublisher(t *testing.T) {
	envs := eventgen.Generate(eventgen.Default())[:40]
	p, js, reg := start(t, nil, func(js jetstream.JetStream) error {
		_, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
			Name: bus.StreamName, Subjects: []string{events.StreamSubjects}, Storage: jetstream.FileStorage,
			Discard: jetstream.DiscardNew, MaxBytes: 8 << 10, Duplicates: time.Minute,
		})
		return err
	})
	for _, env := range envs {
		p.Offer(env)
	}
	waitFor(t, "the stream to refuse", func() bool { return metricstest.Value(t, reg, "schedlens_collector_stream_full_total") > 0 })
	held := streamMsgs(t, js)
	if held == 0 || held >= uint64(len(envs)) {
		t.Fatalf("the full stream holds %d of %d messages", held, len(envs))
	}
	if p.Buffered() == 0 {
		t.Fatal("nothing held while the stream refuses")
	}
	s, err := js.Stream(context.Background(), bus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.MaxBytes = 1 << 20
	if _, err := js.UpdateStream(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every envelope published", func() bool { return p.Buffered() == 0 })
	if got := streamMsgs(t, js); got != uint64(len(envs)) {
		t.Errorf("the stream holds %d messages, want all %d", got, len(envs))
	}
	if got := metricstest.Registered(t, reg, "schedlens_collector_publish_too_large_total"); got != 0 {
		t.Errorf("publish_too_large_total = %v, want 0", got)
	}
}

func TestTooLargeAndStreamFullClassify(t *testing.T) {
	if !bus.TooLarge(nats.ErrMaxPayload) || bus.TooLarge(errors.New("nats: timeout")) || bus.StreamFull(nats.ErrMaxPayload) {
		t.Error("misclassified")
	}
}
