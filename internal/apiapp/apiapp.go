// Package apiapp is the api process: the store, the HTTP API with the web UI under /ui/,
// /metrics, /healthz and /readyz on one listener, behind Options and Run, so cmd/api, the lab's
// in-process stack and tests run the same code. Authentication and TLS, when configured, wrap
// this one handler. Beside it, the refresher of the workload metrics (internal/workloadmetrics)
// reads the store in the background for /metrics.
package apiapp

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/auth"
	"github.com/schedlens/schedlens/internal/ops"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/ui"
	"github.com/schedlens/schedlens/internal/workloadmetrics"
)

// Options configure the api.
type Options struct {
	HTTPAddr    string // "127.0.0.1:0" picks a port
	DatabaseURL string
	// IdleThreshold is the GPU utilisation (percent) under which allocated GPU time counts as
	// idle (nil: align.IdleUtilThreshold; 0 is a threshold: no GPU time counts as idle).
	IdleThreshold *float64
	Logger        *slog.Logger
	// Registry receives the metrics (nil: a new one with the Go and process collectors).
	Registry *prometheus.Registry
	// Bound, when set, hears the listener's address.
	Bound func(addr string)
	// Auth authenticates every request but /healthz and /readyz (and /metrics unless
	// AuthMetrics). Nil: no authentication, and HTTPAddr must be loopback unless InsecureNoAuth.
	Auth                        auth.Authenticator
	AuthMetrics, InsecureNoAuth bool
	// TLS, when set, makes the listener serve HTTPS (the pair reloaded when it changes).
	TLS ops.TLSFiles
	// WorkloadMetricsInterval is how often the workload metrics are computed from the store
	// (0: workloadmetrics.DefaultInterval; negative: not exported).
	WorkloadMetricsInterval time.Duration
}

// Run serves until ctx ends, then shuts the server down gracefully.
func Run(ctx context.Context, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
		o.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	// Refuse an unauthenticated non-loopback address before connecting to anything.
	if err := auth.CheckBind("api", o.HTTPAddr, o.Auth != nil, o.InsecureNoAuth); err != nil {
		return err
	}
	tlsOpt, err := ops.TLSOption(o.TLS)
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, o.DatabaseURL, o.Logger, store.WithIdleThreshold(align.IdleThresholdOr(o.IdleThreshold)), store.WithCustomPlans())
	if err != nil {
		return err
	}
	defer db.Close()
	web, err := ui.New(db, o.Logger.With("component", "ui"))
	if err != nil {
		return err
	}
	h, err := api.New(db, o.Logger, o.Registry, o.Registry, api.WithUI(web))
	if err != nil {
		return err
	}
	if h, err = auth.Protect("api", o.HTTPAddr, h, o.Auth, auth.APIPolicy(o.AuthMetrics), o.InsecureNoAuth, o.Logger); err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	if o.WorkloadMetricsInterval >= 0 {
		wm, err := workloadmetrics.New(db, workloadmetrics.Options{Interval: o.WorkloadMetricsInterval, Logger: o.Logger.With("component", "workloadmetrics")}, o.Registry)
		if err != nil {
			return err
		}
		g.Go(func() error { return wm.Run(ctx) })
	}
	g.Go(func() error { return ops.Serve(ctx, o.HTTPAddr, h, o.Logger, o.Bound, tlsOpt) })
	return g.Wait()
}
