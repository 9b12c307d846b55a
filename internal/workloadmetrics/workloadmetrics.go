// Package workloadmetrics exports what schedlens found about workloads to Prometheus, in the
// style of kube-state-metrics: the disruptions by kind that touched each workload, what they
// cost it (interruption and recovery seconds), the workloads below their desired replicas now,
// and the pods waiting for a GPU now with the scheduler's reason class. Labels name a
// workload (its namespace, kind and name), never a pod or a request.
//
// Detecting disruptions reads every pod of the window, so it is not done on a scrape: a
// Refresher reads the store every interval, in the background, and /metrics serves the last
// snapshot it computed. Counters and histograms count from the start of the current UTC day
// (Period), so every api replica, and an api after a restart, export the same values for the
// same stored history; the first refresh reads the day so far, the next ones only the last
// minutes (Lag) and the disruptions not yet settled. docs/metrics.md says what each series
// means and why.
package workloadmetrics

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/workload"
)

const (
	// DefaultInterval is how often a Refresher reads the store unless told otherwise.
	DefaultInterval = 30 * time.Second
	// Period is what counters and histograms count over: they start again at 00:00 UTC (a
	// counter reset Prometheus' rate() and increase() handle).
	Period = 24 * time.Hour
	// Lag is how far back each refresh reads again before the previous one's time, so events
	// stored late (a collector buffering, a correlator behind) still count.
	Lag = 5 * time.Minute
	// Settle is how long a disruption's cost must have stood (the disruption over and the
	// workload recovered) before it is observed in the histograms: events stored late could
	// still change it.
	Settle = 30 * time.Second
	// Window is how long ago a workload's last pod may have lived for its replicas to be
	// exported (as store.Lookback: a read looks that far back).
	Window = time.Hour
	// PendingLookback bounds the pods waiting for a GPU: those first seen longer ago are not
	// read (a pod whose end no collector reported would otherwise wait for ever).
	PendingLookback = 7 * 24 * time.Hour
)

// Buckets are the upper bounds, in seconds, of the interruption and recovery histograms: the
// chart's interruption alert threshold must be one of them.
var Buckets = []float64{1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// Source is what a refresh reads (*store.DB).
type Source interface {
	// WorkloadInput is detection's input over [from, to] for every workload.
	WorkloadInput(ctx context.Context, from, to time.Time) (workload.Input, error)
	// PendingGPUPods are the pods asking for GPUs, first seen from since, not scheduled yet.
	PendingGPUPods(ctx context.Context, since time.Time) ([]report.PendingPod, error)
}

// Options configure a Refresher.
type Options struct {
	// Interval between refreshes (0: DefaultInterval).
	Interval time.Duration
	// Now is the clock (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Refresher computes the exported series from the store in the background and serves the last
// snapshot to every scrape (it is a prometheus.Collector).
type Refresher struct {
	src    Source
	o      Options
	state  *tally
	served atomic.Pointer[[]prometheus.Metric]

	duration prometheus.Histogram
	errors   prometheus.Counter
	last     prometheus.Gauge
	pods     prometheus.Gauge
}

// New returns a Refresher reading src, registered on reg with its own metrics. It serves
// nothing of the workloads until its first refresh.
func New(src Source, o Options, reg prometheus.Registerer) (*Refresher, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Refresher{src: src, o: o,
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "schedlens_workload_metrics_refresh_duration_seconds",
			Help:    "Time a refresh of the workload metrics took: reading the store and detecting disruptions.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "schedlens_workload_metrics_refresh_errors_total",
			Help: "Refreshes of the workload metrics that failed (the last snapshot is served meanwhile)."}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schedlens_workload_metrics_last_refresh_timestamp_seconds",
			Help: "When the workload metrics served were computed (Unix time; 0 before the first refresh)."}),
		pods: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schedlens_workload_metrics_refresh_pods",
			Help: "Pods the last refresh of the workload metrics read."}),
	}
	for _, c := range []prometheus.Collector{r, r.duration, r.errors, r.last, r.pods} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Run refreshes at once and then every interval until ctx ends. A failed refresh is logged and
// counted; the snapshot before it is served until one succeeds.
func (r *Refresher) Run(ctx context.Context) error {
	tick := time.NewTicker(r.o.Interval)
	defer tick.Stop()
	for {
		if err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
			r.o.Logger.Warn("refresh of the workload metrics failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Refresh reads the store once and replaces the snapshot served. Calls must not overlap (Run
// makes one at a time).
func (r *Refresher) Refresh(ctx context.Context) error {
	began := time.Now()
	now := r.o.Now().UTC()
	if r.state == nil || !r.state.origin.Equal(now.Truncate(Period)) {
		r.state = newTally(now.Truncate(Period))
	}
	in, err := r.src.WorkloadInput(ctx, r.state.from(), now)
	if err != nil {
		r.errors.Inc()
		return err
	}
	pending, err := r.src.PendingGPUPods(ctx, now.Add(-PendingLookback))
	if err != nil {
		r.errors.Inc()
		return err
	}
	ms := r.state.update(in, workload.Detect(in), pending, now)
	r.served.Store(&ms)
	r.duration.Observe(time.Since(began).Seconds())
	r.last.Set(float64(now.UnixNano()) / 1e9)
	r.pods.Set(float64(len(in.Pods)))
	return nil
}

// Describe sends the descriptions of every series the snapshot may hold.
func (r *Refresher) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

// Collect sends the last snapshot.
func (r *Refresher) Collect(ch chan<- prometheus.Metric) {
	if ms := r.served.Load(); ms != nil {
		for _, m := range *ms {
			ch <- m
		}
	}
}
