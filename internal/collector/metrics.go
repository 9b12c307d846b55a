package collector

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// metrics are the informers' own Prometheus series (the publisher, the prober and the GPU
// sampling register theirs).
type metrics struct {
	resyncs       prometheus.Counter
	inventories   prometheus.Counter
	heartbeats    prometheus.Counter
	convertErrors *prometheus.CounterVec
	unattributed  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
		resyncs:       f.NewCounter(prometheus.CounterOpts{Name: "schedlens_collector_resyncs_total", Help: "Times the whole current state was re-published (after a NATS outage or a buffer overflow)."}),
		inventories:   f.NewCounter(prometheus.CounterOpts{Name: "schedlens_collector_inventories_total", Help: "Inventories (lists of the pods in scope) published."}),
		heartbeats:    f.NewCounter(prometheus.CounterOpts{Name: "schedlens_collector_heartbeats_total", Help: "Heartbeats (a scope's watch is still live) published."}),
		convertErrors: f.NewCounterVec(prometheus.CounterOpts{Name: "schedlens_collector_conversion_errors_total", Help: "Kubernetes objects that could not be turned into an envelope, by kind."}, []string{"kind"}),
		unattributed:  f.NewCounter(prometheus.CounterOpts{Name: "schedlens_collector_events_unattributed_total", Help: "Kubernetes events about pods never seen in scope, dropped after waiting for the pod."}),
	}
}
