// Package publisher is the collector's bounded, retrying publisher: informer handlers offer
// envelopes without ever waiting on NATS, a buffer holds them while JetStream is slow or away,
// failed publishes are retried, and after an overflow or a failure it asks for the current state
// to be published again (ids make the repeats harmless).
package publisher

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/wait"
)

// Config bounds the publisher.
type Config struct {
	Buffer   int           // envelopes held while JetStream is slow or away
	Batch    int           // envelopes in flight at once
	RetryMin time.Duration // first delay after a failed publish; doubles up to RetryMax
	RetryMax time.Duration
	Drain    time.Duration // on shutdown, how long to keep publishing what is buffered
}

// DefaultConfig holds 50,000 envelopes (a few minutes of a busy experiment) and retries from
// 200 ms up to 5 s.
func DefaultConfig() Config {
	return Config{Buffer: 50_000, Batch: 256, RetryMin: 200 * time.Millisecond, RetryMax: 5 * time.Second, Drain: 10 * time.Second}
}

// Publisher sends envelopes to JetStream from a bounded buffer, so that informer handlers never
// wait on NATS. Failed publishes are retried until they succeed. When the buffer overflows, or
// publishing has failed, the publisher asks for the current state to be published again once
// JetStream accepts messages (OnRecover): envelope ids make the repeats harmless, and the
// current state carries what the dropped envelopes said (condition times, series counts).
type Publisher struct {
	js     jetstream.JetStream
	ensure func(context.Context) error
	cfg    Config
	logger *slog.Logger
	m      *metrics

	buf      chan *events.Envelope
	retrying atomic.Int64
	dirty    atomic.Bool // something was dropped or failed: re-publish the state on recovery

	mu        sync.Mutex
	onRecover func()
}

// New returns a publisher registering its metrics with reg; ensure (may be nil) sets up the
// stream and is retried until it succeeds before the first publish.
func New(js jetstream.JetStream, ensure func(context.Context) error, cfg Config, logger *slog.Logger, reg prometheus.Registerer) *Publisher {
	return &Publisher{js: js, ensure: ensure, cfg: cfg, logger: logger, m: newMetrics(reg), buf: make(chan *events.Envelope, cfg.Buffer)}
}

// OnRecover sets what to call when JetStream accepts messages again after a failure or an
// overflow: the collector re-publishes the current state. It is called from its own goroutine.
func (p *Publisher) OnRecover(f func()) {
	p.mu.Lock()
	p.onRecover = f
	p.mu.Unlock()
}

// Offer queues env without blocking. When the buffer is full env is dropped, counted, and the
// state is re-published on recovery; Offer reports whether env was queued.
func (p *Publisher) Offer(env *events.Envelope) bool {
	select {
	case p.buf <- queued(env):
		p.m.buffered.Set(float64(len(p.buf)) + float64(p.retrying.Load()))
		return true
	default:
		p.m.dropped.Inc()
		p.dirty.Store(true)
		return false
	}
}

// Put queues env, waiting for room: for re-publishing state from a goroutine of its own.
func (p *Publisher) Put(ctx context.Context, env *events.Envelope) error {
	select {
	case p.buf <- queued(env):
		p.m.buffered.Set(float64(len(p.buf)) + float64(p.retrying.Load()))
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queued is what the buffer keeps of env: its encoded bytes and what publishing them needs (the
// subject's cluster and kind, the id, the kind for the metrics). The decoded data and payload an
// encoded envelope also carries are not needed to publish and are as large again as the bytes:
// while a relist of 10,000 pods waits for JetStream they would be most of the collector's heap.
// An envelope not encoded yet is kept whole (bus.PublishAsync encodes it).
func queued(env *events.Envelope) *events.Envelope {
	if env.Raw == nil {
		return env
	}
	return &events.Envelope{ID: env.ID, Kind: env.Kind, Cluster: env.Cluster, Raw: env.Raw}
}

// Buffered is the number of envelopes not yet acknowledged by JetStream.
func (p *Publisher) Buffered() int { return len(p.buf) + int(p.retrying.Load()) }

// Run publishes until ctx ends, then keeps publishing what is buffered for up to cfg.Drain.
func (p *Publisher) Run(ctx context.Context) error {
	for p.ensure != nil {
		err := p.ensure(ctx)
		if err == nil {
			break
		}
		p.m.publishFailures.Inc()
		p.logger.Warn("stream not ready; retrying", "error", err)
		if !wait.Sleep(ctx, p.cfg.RetryMax) {
			return nil
		}
	}
	delay := p.cfg.RetryMin
	var batch []*events.Envelope
	for {
		batch = p.fill(ctx, batch)
		if len(batch) == 0 {
			return p.drain()
		}
		failed := p.send(ctx, batch)
		p.retrying.Store(int64(len(failed)))
		p.m.buffered.Set(float64(p.Buffered()))
		if len(failed) == 0 {
			delay = p.cfg.RetryMin
			batch = batch[:0]
			p.recovered()
			continue
		}
		p.dirty.Store(true)
		batch = append(batch[:0], failed...)
		if !wait.Sleep(ctx, delay) {
			return p.drain(batch...)
		}
		delay = min(2*delay, p.cfg.RetryMax)
	}
}

// fill tops batch up from the buffer, waiting for the first envelope when batch is empty. It
// returns an empty batch only once ctx is done.
func (p *Publisher) fill(ctx context.Context, batch []*events.Envelope) []*events.Envelope {
	if len(batch) == 0 {
		select {
		case env := <-p.buf:
			batch = append(batch, env)
		case <-ctx.Done():
			return batch
		}
	}
	return p.topUp(batch)
}

// topUp adds buffered envelopes to batch, without waiting, until it holds cfg.Batch.
func (p *Publisher) topUp(batch []*events.Envelope) []*events.Envelope {
	for len(batch) < p.cfg.Batch {
		select {
		case env := <-p.buf:
			batch = append(batch, env)
		default:
			return batch
		}
	}
	return batch
}

// send publishes batch and waits for every acknowledgement; it returns the envelopes to retry.
func (p *Publisher) send(ctx context.Context, batch []*events.Envelope) []*events.Envelope {
	type inflight struct {
		env *events.Envelope
		f   jetstream.PubAckFuture
	}
	var failed []*events.Envelope
	flying := make([]inflight, 0, len(batch))
	for _, env := range batch {
		f, err := bus.PublishAsync(p.js, env)
		if err != nil {
			if p.fail(env, err) {
				failed = append(failed, env)
			}
			continue
		}
		flying = append(flying, inflight{env, f})
	}
	for _, fl := range flying {
		select {
		case ack := <-fl.f.Ok():
			if ack.Duplicate {
				p.m.duplicates.Inc()
			} else {
				p.m.published.WithLabelValues(string(fl.env.Kind)).Inc()
			}
		case err := <-fl.f.Err():
			if p.fail(fl.env, err) {
				failed = append(failed, fl.env)
			}
		case <-ctx.Done():
			// Shutting down: what is still unacknowledged is retried by the drain.
			failed = append(failed, fl.env)
		}
	}
	return failed
}

// fail counts a failed publish and reports whether to retry it. A message too large is
// permanent — the same bytes are refused every time — so it is logged, counted and dropped,
// never retried. A stream refusing new messages because it is full (provisioned with
// discard-new) is counted apart and retried with the others: the buffer holds what follows
// meanwhile, and what overflows it is re-published from the cluster state on recovery.
func (p *Publisher) fail(env *events.Envelope, err error) bool {
	switch {
	case bus.TooLarge(err):
		size := len(env.Raw)
		p.m.tooLarge.WithLabelValues(string(env.Kind)).Inc()
		p.logger.Error("envelope too large for NATS; dropped, not retried", "id", env.ID, "kind", env.Kind, "bytes", size, "error", err)
		return false
	case bus.StreamFull(err):
		p.m.streamFull.Inc()
		p.logger.Warn("the stream is full and refuses new messages; holding and retrying", "id", env.ID, "error", err)
	}
	p.m.publishFailures.Inc()
	p.logger.Debug("publish failed; will retry", "id", env.ID, "error", err)
	return true
}

// recovered calls OnRecover once publishing works again after a failure or an overflow.
func (p *Publisher) recovered() {
	if !p.dirty.Swap(false) {
		return
	}
	p.mu.Lock()
	f := p.onRecover
	p.mu.Unlock()
	if f != nil {
		p.logger.Info("publishing recovered; re-publishing the current state")
		go f()
	}
}

// drain publishes what is left for up to cfg.Drain after shutdown began.
func (p *Publisher) drain(batch ...*events.Envelope) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Drain)
	defer cancel()
	for {
		batch = p.topUp(batch)
		if len(batch) == 0 {
			return nil
		}
		batch = p.send(ctx, batch)
		if ctx.Err() != nil || (len(batch) > 0 && !wait.Sleep(ctx, p.cfg.RetryMin)) {
			left := len(batch) + len(p.buf)
			p.logger.Warn("shutting down with envelopes not acknowledged; they are re-published from the cluster state on the next start", "left", left)
			return nil
		}
	}
}

type metrics struct {
	published       *prometheus.CounterVec
	duplicates      prometheus.Counter
	publishFailures prometheus.Counter
	buffered        prometheus.Gauge
	dropped         prometheus.Counter
	tooLarge        *prometheus.CounterVec
	streamFull      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	m := &metrics{
		published:       f.NewCounterVec(prometheus.CounterOpts{Name: "schedlens_collector_published_total", Help: "Envelopes acknowledged by JetStream as new, by kind."}, []string{"kind"}),
		duplicates:      f.NewCounter(prometheus.CounterOpts{Name: "schedlens_collector_duplicates_total", Help: "Envelopes JetStream already held (same id within its duplicate window): relists, restarts, re-published state."}),
		publishFailures: f.NewCounter(prometheus.CounterOpts{Name: "schedlens_collector_publish_failures_total", Help: "Publish attempts that failed and were retried."}),
		buffered:        f.NewGauge(prometheus.GaugeOpts{Name: "schedlens_collector_buffered", Help: "Envelopes waiting for JetStream: buffered or being retried."}),
		dropped:         f.NewCounter(prometheus.CounterOpts{Name: "schedlens_collector_buffer_overflows_total", Help: "Envelopes dropped because the buffer was full; the current state is re-published once JetStream accepts messages."}),
		tooLarge:        f.NewCounterVec(prometheus.CounterOpts{Name: "schedlens_collector_publish_too_large_total", Help: "Envelopes dropped because NATS refuses their size (max_payload, the stream's max message size): permanent, never retried."}, []string{"kind"}),
		streamFull:      f.NewCounter(prometheus.CounterOpts{Name: "schedlens_collector_stream_full_total", Help: "Publishes refused because the stream was full and refuses new messages (discard-new); retried."}),
	}
	for _, k := range events.Kinds {
		m.published.WithLabelValues(string(k))
		m.tooLarge.WithLabelValues(string(k))
	}
	return m
}

// JetStreamOptions are the options of the JetStream context a Publisher publishes on. The
// timeout matters: a publish in flight on a connection that drops (the NATS node it was on
// stopped) is never answered, and without it the window would wait for its ack forever instead
// of publishing it again.
func JetStreamOptions() []jetstream.JetStreamOpt {
	return []jetstream.JetStreamOpt{jetstream.WithPublishAsyncTimeout(10 * time.Second), jetstream.WithPublishAsyncMaxPending(1024)}
}
