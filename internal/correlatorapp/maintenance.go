package correlatorapp

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/store"
)

// DefaultMaintenanceInterval is how often `correlator serve` maintains the store.
const DefaultMaintenanceInterval = time.Hour

// DefaultWarmInterval is how often `correlator serve` brings the stored comparisons up to date.
const DefaultWarmInterval = time.Minute

// maintenanceMetrics are what every correlator reports of the store's maintenance, whichever
// of them did it: the state is read from the store after each attempt.
type maintenanceMetrics struct {
	runs       *prometheus.CounterVec
	dropped    prometheus.Counter
	bytes      *prometheus.GaugeVec
	oldest     prometheus.Gauge
	horizon    prometheus.Gauge
	maintained prometheus.Gauge
	warmed     prometheus.Counter
}

func newMaintenanceMetrics(reg prometheus.Registerer) (*maintenanceMetrics, error) {
	m := &maintenanceMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schedlens_store_maintenance_runs_total",
			Help: "Maintenance attempts of this process by result: done, skipped (another process held the lock and maintains), failed."}, []string{"result"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "schedlens_store_partitions_dropped_total",
			Help: "Day partitions this process dropped past the retention horizon."}),
		bytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "schedlens_store_bytes",
			Help: "Bytes on disk (tables, indexes, TOAST) by class: events (raw), kept_events (experiment runs, kept pods' snapshots), inventories, projections, dead_letters."}, []string{"class"}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schedlens_store_oldest_timestamp_seconds",
			Help: "Start of the oldest day of raw events kept (0: a table adopted when the store was partitioned, unbounded below)."}),
		horizon: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schedlens_store_retention_horizon_timestamp_seconds",
			Help: "Raw events older than this are dropped and refused (0: retention has dropped nothing)."}),
		maintained: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schedlens_store_last_maintenance_timestamp_seconds",
			Help: "When the store was last maintained, by any correlator (0: never)."}),
		warmed: prometheus.NewCounter(prometheus.CounterOpts{Name: "schedlens_store_comparisons_built_total",
			Help: "Default comparisons this process built and stored for the api replicas because their experiment's stored state changed (-comparison-warm-interval)."}),
	}
	for _, r := range []string{"done", "skipped", "failed"} {
		m.runs.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.runs, m.dropped, m.bytes, m.oldest, m.horizon, m.maintained, m.warmed} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// unix is t in seconds since the epoch, 0 for the zero time.
func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// maintain runs one maintenance and updates the metrics; a failure is logged and counted.
func maintain(ctx context.Context, db *store.DB, r store.Retention, m *maintenanceMetrics, logger *slog.Logger) {
	res, err := db.Maintain(ctx, r, time.Now())
	switch {
	case err != nil:
		m.runs.WithLabelValues("failed").Inc()
		logger.Error("store maintenance failed", "error", err)
	case res.Skipped:
		m.runs.WithLabelValues("skipped").Inc()
	default:
		m.runs.WithLabelValues("done").Inc()
		m.dropped.Add(float64(len(res.Dropped)))
		if len(res.Created) > 0 || len(res.Dropped) > 0 || res.Pods > 0 || res.DeadLetters > 0 {
			logger.Info("store maintained", "created", res.Created, "dropped", res.Dropped, "kept_events", res.Kept,
				"pods_dropped", res.Pods, "pods_pinned", res.Pinned, "dead_letters", res.DeadLetters, "horizon", res.Horizon)
		}
	}
	if st, serr := db.Storage(ctx); serr != nil {
		logger.Warn("read storage", "error", serr)
	} else {
		for _, c := range store.StorageClasses {
			m.bytes.WithLabelValues(c).Set(float64(st.Bytes[c]))
		}
		m.oldest.Set(unix(st.Oldest))
		m.horizon.Set(unix(st.Horizon))
		m.maintained.Set(unix(st.MaintainedAt))
	}
}

// maintainEvery maintains the store now and every interval until ctx ends. A failure is
// logged and counted, and tried again at the next interval.
func maintainEvery(ctx context.Context, db *store.DB, r store.Retention, interval time.Duration, m *maintenanceMetrics, logger *slog.Logger) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		maintain(ctx, db, r, m, logger)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Maintain migrates, then maintains the store once (`correlator maintain`): it creates the
// coming days' partitions and drops what o.Retention no longer keeps.
func Maintain(ctx context.Context, o Options) (store.MaintainResult, error) {
	o.defaults()
	db, err := o.open(ctx)
	if err != nil {
		return store.MaintainResult{}, err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return store.MaintainResult{}, err
	}
	return db.Maintain(ctx, o.Retention, time.Now())
}

// warmEvery brings every experiment's stored default comparison up to date every interval until
// ctx ends (store.WarmComparisons: only experiments whose stored state changed, and only once
// it held still for an interval, so that a run being stored does not take the correlator's CPU
// from storing). Several correlators may each do it: the result is the same row.
func warmEvery(ctx context.Context, db *store.DB, interval time.Duration, m *maintenanceMetrics, logger *slog.Logger) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		start := time.Now()
		n, err := db.WarmComparisons(ctx, true)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			logger.Warn("warm comparisons", "error", err)
		default:
			m.warmed.Add(float64(n))
			if n > 0 {
				logger.Info("comparisons stored", "built", n, "seconds", time.Since(start).Seconds())
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
