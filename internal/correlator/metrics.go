package correlator

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/store"
)

type metrics struct {
	stored        *prometheus.CounterVec
	duplicates    prometheus.Counter
	deadLetters   prometheus.Counter
	expired       prometheus.Counter
	batchFailures prometheus.Counter
	batchSize     prometheus.Histogram
	batchSeconds  prometheus.Histogram
	pending       prometheus.Gauge
	ackPending    prometheus.Gauge
	// The stream's fill level against its byte limit: past it, the oldest messages are dropped.
	streamBytes    prometheus.Gauge
	streamMaxBytes prometheus.Gauge
	streamMessages prometheus.Gauge
	// What the correlator has not consumed yet, against the same limit: at 100 %, what the
	// stream discards was never stored.
	unconsumedBytes prometheus.Gauge
	lost            prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	r := &registrar{reg: reg}
	m := &metrics{
		stored: register(r, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedlens_correlator_events_stored_total", Help: "Events newly stored, by kind.",
		}, []string{"kind"})),
		duplicates:    r.counter("schedlens_correlator_duplicates_total", "Delivered events already stored (redeliveries, republished ids)."),
		deadLetters:   r.counter("schedlens_correlator_dead_letters_total", "Messages dead-lettered as malformed or invalid."),
		expired:       r.counter("schedlens_correlator_events_expired_total", "Delivered events older than the retention horizon, refused: their day was dropped."),
		batchFailures: r.counter("schedlens_correlator_batch_failures_total", "Batches that failed transiently and were left for redelivery."),
		batchSize: r.histogram("schedlens_correlator_batch_size", "Messages per stored batch.",
			prometheus.ExponentialBuckets(1, 4, 8)),
		batchSeconds: r.histogram("schedlens_correlator_batch_duration_seconds", "Time to decode, store, commit and ack one batch.",
			prometheus.ExponentialBuckets(0.001, 2.5, 10)),
		pending:         r.gauge("schedlens_correlator_consumer_pending", "Messages in the stream not yet delivered to the consumer."),
		ackPending:      r.gauge("schedlens_correlator_consumer_ack_pending", "Messages delivered and not yet acknowledged."),
		streamBytes:     r.gauge("schedlens_correlator_stream_bytes", "Bytes the SCHEDLENS stream holds."),
		streamMaxBytes:  r.gauge("schedlens_correlator_stream_max_bytes", "The SCHEDLENS stream's byte limit (-1: none)."),
		streamMessages:  r.gauge("schedlens_correlator_stream_messages", "Messages the SCHEDLENS stream holds."),
		unconsumedBytes: r.gauge("schedlens_correlator_stream_unconsumed_bytes", "Bytes of the SCHEDLENS stream not yet acknowledged by the consumer (pending and ack-pending messages at the stream's mean message size)."),
		lost:            r.counter("schedlens_correlator_stream_lost_total", "Messages the stream discarded (byte or age limit) before the consumer was delivered them."),
	}
	if r.err != nil {
		return nil, r.err
	}
	return m, nil
}

// registrar registers each metric as it is built, in the order built, and keeps the first
// error and registers nothing after it: New returns a registration error where promauto would
// panic.
type registrar struct {
	reg prometheus.Registerer
	err error
}

func register[C prometheus.Collector](r *registrar, c C) C {
	if r.err == nil {
		r.err = r.reg.Register(c)
	}
	return c
}

func (r *registrar) counter(name, help string) prometheus.Counter {
	return register(r, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}))
}

func (r *registrar) gauge(name, help string) prometheus.Gauge {
	return register(r, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help}))
}

func (r *registrar) histogram(name, help string, buckets []float64) prometheus.Histogram {
	return register(r, prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}))
}

func (m *metrics) observe(res store.AppendResult, n int, took time.Duration) {
	for k, c := range res.ByKind {
		m.stored.WithLabelValues(string(k)).Add(float64(c))
	}
	m.duplicates.Add(float64(res.Duplicates))
	m.deadLetters.Add(float64(res.DeadLetters))
	m.expired.Add(float64(res.Expired))
	m.batchSize.Observe(float64(n))
	m.batchSeconds.Observe(took.Seconds())
}

// watchPending refreshes the consumer backlog and stream fill gauges every few seconds until ctx
// ends.
func (c *Correlator) watchPending(ctx context.Context, cons jetstream.Consumer) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		var unconsumed uint64
		if info, err := cons.Info(ctx); err == nil {
			c.metrics.pending.Set(float64(info.NumPending))
			c.metrics.ackPending.Set(float64(info.NumAckPending))
			unconsumed = info.NumPending + uint64(info.NumAckPending)
		}
		if st, err := c.js.Stream(ctx, bus.StreamName); err == nil {
			info := st.CachedInfo()
			c.metrics.streamBytes.Set(float64(info.State.Bytes))
			c.metrics.streamMaxBytes.Set(float64(info.Config.MaxBytes))
			c.metrics.streamMessages.Set(float64(info.State.Msgs))
			c.metrics.unconsumedBytes.Set(unconsumedBytes(info.State.Bytes, info.State.Msgs, unconsumed))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// unconsumedBytes estimates the bytes of the unconsumed messages: their number at the stream's
// mean message size, at most the stream's bytes.
func unconsumedBytes(bytes, msgs, unconsumed uint64) float64 {
	if msgs == 0 || unconsumed == 0 {
		return 0
	}
	return float64(bytes) * float64(min(unconsumed, msgs)) / float64(msgs)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
