// Package collectorapp is the collector process: everything `collector run` wires — the
// Kubernetes client, NATS and the publisher that buffers for it, the informers, the prober, GPU
// sampling, /metrics, /healthz and /readyz, and POST /v1/ingest/requests on its own listener —
// behind Options, New and Run, so cmd/collector, the lab's in-process stack and tests run the
// same code.
package collectorapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"

	"github.com/schedlens/schedlens/internal/auth"
	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/collector"
	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/ingest"
	"github.com/schedlens/schedlens/internal/ops"
	"github.com/schedlens/schedlens/internal/publisher"
)

// Options configure the collector.
type Options struct {
	NATSURL string
	Stream  bus.StreamConfig
	// Client is the cluster to watch; nil: one built from Kubeconfig (empty: in-cluster, else
	// the default loading rules).
	Client     kubernetes.Interface
	Kubeconfig string
	Collector  collector.Config
	Publisher  publisher.Config
	// MetricsAddr serves /metrics, /healthz and /readyz; IngestAddr serves POST
	// /v1/ingest/requests (empty: no ingest listener).
	MetricsAddr, IngestAddr string
	Logger                  *slog.Logger
	// Registry receives the metrics (nil: a new one with the Go and process collectors).
	Registry *prometheus.Registry
	// Bound, when set, hears each listener's address ("metrics", "ingest").
	Bound func(listener, addr string)
	// Auth authenticates posts to the ingest listener (role write), and with AuthMetrics the
	// metrics listener's /metrics (role read). Nil: no authentication, and IngestAddr must be
	// loopback unless InsecureNoAuth.
	Auth                        auth.Authenticator
	AuthMetrics, InsecureNoAuth bool
	// TLS, when set, makes both listeners serve HTTPS (the pair reloaded when it changes).
	TLS ops.TLSFiles
	// NATS holds the NATS client's TLS and credentials.
	NATS bus.Credentials
}

// App is a configured collector.
type App struct {
	o      Options
	tls    ops.ServeOption
	client kubernetes.Interface
	nc     *nats.Conn
	js     jetstream.JetStream
	pub    *publisher.Publisher
	c      *collector.Collector
}

// New checks o, connects to the cluster's API and to NATS (retrying in the background while NATS
// is away: publishes wait in the buffer), and builds the collector; Run starts it.
func New(o Options) (*App, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
		o.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if o.Publisher.Buffer == 0 {
		o.Publisher = publisher.DefaultConfig()
	}
	cfg := &o.Collector
	if _, _, err := events.ParseSubject(events.Subject(cfg.Cluster, events.KindPodStatus)); err != nil {
		return nil, fmt.Errorf("cluster %q cannot be a subject token (no '.', '*', '>' or spaces)", cfg.Cluster)
	}
	if err := ingest.CheckCluster(cfg.Cluster); err != nil { // the ingest endpoint puts it in ids
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if cfg.Source == "" {
		host, _ := os.Hostname()
		cfg.Source = "collector/" + host
	}
	a := &App{o: o, client: o.Client}
	if o.IngestAddr != "" {
		if err := auth.CheckBind("ingest", o.IngestAddr, o.Auth != nil, o.InsecureNoAuth); err != nil {
			return nil, err
		}
	}
	var err error
	if a.tls, err = ops.TLSOption(o.TLS); err != nil {
		return nil, err
	}
	if o.NATS.InboxPrefix == "" {
		o.NATS.InboxPrefix = bus.CollectorInboxPrefix
	}
	natsOpts, err := o.NATS.Options()
	if err != nil {
		return nil, err
	}
	if a.client == nil {
		restCfg, err := config.KubeConfig(o.Kubeconfig)
		if err != nil {
			return nil, err
		}
		restCfg.UserAgent = "schedlens-collector"
		if a.client, err = kubernetes.NewForConfig(restCfg); err != nil {
			return nil, fmt.Errorf("kubernetes client: %w", err)
		}
	}
	a.nc, err = bus.Connect(o.NATSURL, "schedlens-collector", o.Logger, append(natsOpts, nats.RetryOnFailedConnect(true))...)
	if err != nil {
		return nil, err
	}
	a.js, err = jetstream.New(a.nc, publisher.JetStreamOptions()...)
	if err != nil {
		a.nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	ensure := func(ctx context.Context) error {
		_, err := bus.EnsureStream(ctx, a.js, o.Stream)
		return err
	}
	a.pub = publisher.New(a.js, ensure, o.Publisher, o.Logger, o.Registry)
	if a.c, err = collector.New(a.client, a.pub, *cfg, o.Logger, o.Registry); err != nil {
		a.nc.Close()
		return nil, err
	}
	// /readyz as a metric, so an alert can say which collector is not ready and for how long.
	o.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "schedlens_collector_ready",
		Help: "1 once the informers have listed everything and NATS is connected (as /readyz), else 0.",
	}, func() float64 {
		if a.Ready() != nil {
			return 0
		}
		return 1
	}))
	return a, nil
}

// Ready reports whether the informers have listed everything and NATS is connected.
func (a *App) Ready() error {
	if !a.nc.IsConnected() {
		return errors.New("nats not connected")
	}
	return a.c.Ready()
}

// Buffered is how many envelopes wait for JetStream.
func (a *App) Buffered() int { return a.pub.Buffered() }

// Run watches until ctx ends, then stops in two stages: the informers and listeners with ctx,
// then the publisher, which drains its buffer (for at most the publisher's Drain) before the NATS
// connection closes.
func (a *App) Run(ctx context.Context) error {
	defer a.nc.Close()
	pubCtx, stopPub := context.WithCancel(context.Background())
	defer stopPub()
	pubDone := make(chan error, 1)
	go func() { pubDone <- a.pub.Run(pubCtx) }()

	bound := func(name string) func(string) {
		if a.o.Bound == nil {
			return nil
		}
		return func(addr string) { a.o.Bound(name, addr) }
	}
	g, gctx := errgroup.WithContext(ctx)
	var metrics http.Handler = ops.Handler(a.o.Registry, func(context.Context) error { return a.Ready() })
	if a.o.Auth != nil && a.o.AuthMetrics {
		metrics = auth.Middleware(a.o.Auth, auth.MetricsPolicy(true), a.o.Logger)(metrics)
	}
	g.Go(func() error {
		return ops.Serve(gctx, a.o.MetricsAddr, metrics, a.o.Logger, bound("metrics"), a.tls)
	})
	if a.o.IngestAddr != "" {
		publish := func(ctx context.Context, envs []*events.Envelope) error {
			_, err := bus.PublishAll(ctx, a.js, envs)
			return err
		}
		mux := http.NewServeMux()
		mux.Handle(ingest.Path, ingest.Handler(ingest.Options{Cluster: a.o.Collector.Cluster, Source: "ingest", Logger: a.o.Logger}, publish))
		logger := a.o.Logger.With("listener", "ingest")
		h, err := auth.Protect("ingest", a.o.IngestAddr, mux, a.o.Auth, auth.IngestPolicy(), a.o.InsecureNoAuth, logger)
		if err != nil {
			return err
		}
		g.Go(func() error {
			return ops.Serve(gctx, a.o.IngestAddr, h, logger, bound("ingest"), a.tls)
		})
	}
	g.Go(func() error {
		// Stopped while still listing (an unreachable API server, say): a clean stop, not an error.
		if err := a.c.Run(gctx); err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
			return err
		}
		return nil
	})
	err := g.Wait()
	stopPub()
	if perr := <-pubDone; perr != nil && err == nil {
		err = perr
	}
	return err
}
