// Package correlatorapp is the correlator process: everything `correlator serve` wires — the
// store (migrated), NATS and the SCHEDLENS stream, the consumer loop, /metrics, /healthz and
// /readyz — behind Options and Run, so cmd/correlator, the lab's in-process stack and tests run
// the same code.
package correlatorapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/ops"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/wait"
)

// Options configure the correlator.
type Options struct {
	NATSURL     string
	DatabaseURL string
	MetricsAddr string            // /metrics, /healthz, /readyz; "127.0.0.1:0" picks a port
	Correlator  correlator.Config // zero (no Consumer): the defaults
	Stream      bus.StreamConfig
	// Labels are the pod label keys that attribute pods to experiments when an envelope names
	// no experiment (zero: the defaults).
	Labels events.LabelKeys
	Logger *slog.Logger
	// Registry receives the metrics (nil: a new one with the Go and process collectors).
	Registry *prometheus.Registry
	// Bound, when set, hears the metrics listener's address.
	Bound func(addr string)
	// DatabaseRetryMax is the longest wait between attempts to reach the database on start
	// (zero: DefaultDatabaseRetryMax).
	DatabaseRetryMax time.Duration
	// TLS, when set, makes the metrics listener serve HTTPS (the pair reloaded when it changes).
	TLS ops.TLSFiles
	// NATS holds the NATS client's TLS and credentials.
	NATS bus.Credentials
	// Retention is how long each class of data is kept (zero: for ever).
	Retention store.Retention
	// MaintenanceInterval is how often serve maintains the store — creates the coming days'
	// partitions and drops what Retention no longer keeps — one correlator of several at a
	// time (zero: DefaultMaintenanceInterval; negative: never, `correlator maintain` does it).
	MaintenanceInterval time.Duration
	// WarmInterval is how often serve brings every experiment's stored default comparison up to
	// date (store.WarmComparisons), so that an api replica's first comparison reads one row
	// (zero: DefaultWarmInterval; negative: never).
	WarmInterval time.Duration
	// IdleThreshold is the GPU utilisation (percent) under which allocated GPU time counts as
	// idle in the comparisons it stores: the api's (-gpu-idle-threshold), or an api replica
	// computes its own (nil: align.IdleUtilThreshold; 0 is a threshold: no GPU time counts as
	// idle).
	IdleThreshold *float64
}

// DefaultDatabaseRetryMax is the longest wait between two attempts to reach the database.
const DefaultDatabaseRetryMax = 10 * time.Second

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
		o.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if o.Correlator.Consumer == "" {
		hook := o.Correlator.BeforeAck
		o.Correlator = correlator.DefaultConfig()
		o.Correlator.BeforeAck = hook
	}
	if o.Labels == (events.LabelKeys{}) {
		o.Labels = events.DefaultLabelKeys
	}
	if o.MaintenanceInterval == 0 {
		o.MaintenanceInterval = DefaultMaintenanceInterval
	}
	if o.WarmInterval == 0 {
		o.WarmInterval = DefaultWarmInterval
	}
}

func (o Options) open(ctx context.Context) (*store.DB, error) {
	return store.Open(ctx, o.DatabaseURL, o.Logger, store.WithLabelKeys(o.Labels), store.WithIdleThreshold(align.IdleThresholdOr(o.IdleThreshold)))
}

// Migrate applies the schema's pending migrations.
func Migrate(ctx context.Context, o Options) error {
	o.defaults()
	db, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Migrate(ctx)
}

// Rebuild migrates, then recomputes every projection from the events table, chunk events at a
// time.
func Rebuild(ctx context.Context, o Options, chunk int) (store.RebuildResult, error) {
	o.defaults()
	db, err := o.open(ctx)
	if err != nil {
		return store.RebuildResult{}, err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return store.RebuildResult{}, err
	}
	return db.Rebuild(ctx, chunk)
}

// Run waits for the database (retrying with backoff, /readyz 503 meanwhile), migrates the
// schema, creates or updates the stream and its durable consumer, and stores batches until ctx
// ends (the batch in flight is finished first, and its acks flushed).
func Run(ctx context.Context, o Options) error {
	o.defaults()
	logger := o.Logger
	tlsOpt, err := ops.TLSOption(o.TLS)
	if err != nil {
		return err
	}
	if o.NATS.InboxPrefix == "" {
		o.NATS.InboxPrefix = bus.CorrelatorInboxPrefix
	}
	natsOpts, err := o.NATS.Options()
	if err != nil {
		return err
	}
	db, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	var (
		migrated atomic.Bool
		streamed atomic.Bool // the stream is ensured (the consumer loop starts next)
		nc       atomic.Pointer[nats.Conn]
	)
	ready := func(ctx context.Context) error {
		if !migrated.Load() {
			return errors.New("database: not reachable or not migrated yet")
		}
		if c := nc.Load(); c == nil || !c.IsConnected() {
			return errors.New("nats: not connected")
		}
		if !streamed.Load() {
			return errors.New("nats: stream not ensured yet")
		}
		return db.Ping(ctx)
	}
	mm, err := newMaintenanceMetrics(o.Registry)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return ops.Serve(gctx, o.MetricsAddr, ops.Handler(o.Registry, ready), logger, o.Bound, tlsOpt)
	})
	g.Go(func() error {
		if err := waitAndMigrate(gctx, db, o.DatabaseRetryMax, logger); err != nil {
			return err
		}
		migrated.Store(true)
		if o.MaintenanceInterval > 0 {
			g.Go(func() error { return maintainEvery(gctx, db, o.Retention, o.MaintenanceInterval, mm, logger) })
		}
		if o.WarmInterval > 0 {
			g.Go(func() error { return warmEvery(gctx, db, o.WarmInterval, mm, logger) })
		}
		conn, err := bus.Connect(o.NATSURL, "schedlens-correlator", logger, natsOpts...)
		if err != nil {
			return err
		}
		nc.Store(conn)
		js, err := jetstream.New(conn)
		if err != nil {
			return fmt.Errorf("jetstream: %w", err)
		}
		if _, err := bus.EnsureStream(gctx, js, o.Stream); err != nil {
			return err
		}
		c, err := correlator.New(js, db, o.Correlator, logger, o.Registry)
		if err != nil {
			return err
		}
		streamed.Store(true)
		return c.Run(gctx)
	})
	err = g.Wait()
	if conn := nc.Load(); conn != nil {
		// Acks of the last batch are in the connection's buffer: send them before closing.
		if ferr := conn.FlushTimeout(5 * time.Second); ferr != nil {
			logger.Warn("flush acks on shutdown", "error", ferr)
		}
		conn.Close()
	}
	logger.Info("stopped")
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// waitAndMigrate waits until the database answers — logging each failed attempt, retrying
// from 250 ms doubling up to retryMax — then migrates. A migration that fails while the
// database answers is an error (the schema, not the connection); one that fails because the
// database went away again is retried. It returns ctx's error when ctx ends first.
func waitAndMigrate(ctx context.Context, db *store.DB, retryMax time.Duration, logger *slog.Logger) error {
	if retryMax <= 0 {
		retryMax = DefaultDatabaseRetryMax
	}
	delay, since := 250*time.Millisecond, time.Now()
	for attempt := 1; ; attempt++ {
		err := db.Ping(ctx)
		if err == nil {
			if err = db.Migrate(ctx); err == nil {
				if attempt > 1 {
					logger.Info("database reachable", "attempts", attempt, "waited", time.Since(since).Round(time.Millisecond))
				}
				return nil
			}
			if db.Ping(ctx) == nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logger.Warn("waiting for the database", "attempt", attempt, "retry_in", delay, "error", err)
		if !wait.Sleep(ctx, delay) {
			return ctx.Err()
		}
		delay = min(2*delay, retryMax)
	}
}
