package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/events"
)

// Metrics are the collector's own Prometheus series, registered on the registry run builds.
type Metrics struct {
	published       *prometheus.CounterVec
	duplicates      prometheus.Counter
	publishFailures prometheus.Counter
	buffered        prometheus.Gauge
	dropped         prometheus.Counter
	resyncs         prometheus.Counter
	inventories     prometheus.Counter
	heartbeats      prometheus.Counter
	convertErrors   *prometheus.CounterVec
	unattributed    prometheus.Counter
	probesActive    prometheus.Gauge
	probeResults    *prometheus.CounterVec
}

// NewMetrics creates and registers the collector's metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedlens_collector_published_total",
			Help: "Envelopes acknowledged by JetStream as new, by kind.",
		}, []string{"kind"}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedlens_collector_duplicates_total",
			Help: "Envelopes JetStream already held (same id within its duplicate window): relists, restarts, re-published state.",
		}),
		publishFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedlens_collector_publish_failures_total",
			Help: "Publish attempts that failed and were retried.",
		}),
		buffered: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "schedlens_collector_buffered",
			Help: "Envelopes waiting for JetStream: buffered or being retried.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedlens_collector_buffer_overflows_total",
			Help: "Envelopes dropped because the buffer was full; the current state is re-published once JetStream accepts messages.",
		}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedlens_collector_resyncs_total",
			Help: "Times the whole current state was re-published (after a NATS outage or a buffer overflow).",
		}),
		inventories: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedlens_collector_inventories_total",
			Help: "Inventories (lists of the pods in scope) published.",
		}),
		heartbeats: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedlens_collector_heartbeats_total",
			Help: "Heartbeats (a scope's watch is still live) published.",
		}),
		convertErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedlens_collector_conversion_errors_total",
			Help: "Kubernetes objects that could not be turned into an envelope, by kind.",
		}, []string{"kind"}),
		unattributed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "schedlens_collector_events_unattributed_total",
			Help: "Kubernetes events about pods never seen in scope, dropped after waiting for the pod.",
		}),
		probesActive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "schedlens_collector_probes_active",
			Help: "Pods the prober is sending the experiment's request to.",
		}),
		probeResults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedlens_collector_probe_requests_total",
			Help: "Probe attempts by error class (\"\" for success).",
		}, []string{"error"}),
	}
	reg.MustRegister(m.published, m.duplicates, m.publishFailures, m.buffered, m.dropped, m.resyncs,
		m.inventories, m.heartbeats, m.convertErrors, m.unattributed, m.probesActive, m.probeResults)
	for _, k := range events.Kinds {
		m.published.WithLabelValues(string(k))
	}
	return m
}
