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
	m := &metrics{
		stored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedlens_correlator_events_stored_total", Help: "Events newly stored, by kind.",
		}, []string{"kind"}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedlens_correlator_duplicates_total", Help: "Delivered events already stored (redeliveries, republished ids).",
		}),
		deadLetters: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedlens_correlator_dead_letters_total", Help: "Messages dead-lettered as malformed or invalid.",
		}),
		batchFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedlens_correlator_batch_failures_total", Help: "Batches that failed transiently and were left for redelivery.",
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "schedlens_correlator_batch_size", Help: "Messages per stored batch.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 8),
		}),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "schedlens_correlator_batch_duration_seconds", Help: "Time to decode, store, commit and ack one batch.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 10),
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "schedlens_correlator_consumer_pending", Help: "Messages in the stream not yet delivered to the consumer.",
		}),
		ackPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "schedlens_correlator_consumer_ack_pending", Help: "Messages delivered and not yet acknowledged.",
		}),
		streamBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "schedlens_correlator_stream_bytes", Help: "Bytes the SCHEDLENS stream holds.",
		}),
		streamMaxBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "schedlens_correlator_stream_max_bytes", Help: "The SCHEDLENS stream's byte limit (-1: none).",
		}),
		streamMessages: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "schedlens_correlator_stream_messages", Help: "Messages the SCHEDLENS stream holds.",
		}),
		unconsumedBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "schedlens_correlator_stream_unconsumed_bytes", Help: "Bytes of the SCHEDLENS stream not yet acknowledged by the consumer (pending and ack-pending messages at the stream's mean message size).",
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedlens_correlator_stream_lost_total", Help: "Messages the stream discarded (byte or age limit) before the consumer was delivered them.",
		}),
	}
	for _, c := range []prometheus.Collector{m.stored, m.duplicates, m.deadLetters, m.batchFailures, m.batchSize, m.batchSeconds, m.pending, m.ackPending,
		m.streamBytes, m.streamMaxBytes, m.streamMessages, m.unconsumedBytes, m.lost} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(res store.AppendResult, n int, took time.Duration) {
	for k, c := range res.ByKind {
		m.stored.WithLabelValues(string(k)).Add(float64(c))
	}
	m.duplicates.Add(float64(res.Duplicates))
	m.deadLetters.Add(float64(res.DeadLetters))
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
