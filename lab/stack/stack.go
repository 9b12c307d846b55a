// Package stack runs the whole schedlens pipeline in one process beside the lab: an embedded
// NATS server with JetStream, the project's collector (pointed at the lab's API server), its
// correlator and its api, on the machine's Postgres. The collector can be restarted on its own,
// as a crash or a rollout of it would.
package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/collector"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/dcgm"
	"github.com/schedlens/schedlens/internal/ops"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/ui"
)

// Options configure the stack.
type Options struct {
	Client      kubernetes.Interface // the lab's API server
	DatabaseURL string
	HTTPAddr    string // the API's listen address; 127.0.0.1:0 picks a port
	Cluster     string // envelope cluster name (default "lab")
	Namespaces  []string
	NATSDir     string // JetStream storage
	Logger      *slog.Logger
	// DCGMTargets lists the lab's dcgm-exporters (nil: no GPU samples).
	DCGMTargets func() []dcgm.Target
}

// Stack is the running pipeline.
type Stack struct {
	NATSURL string
	APIAddr string // host:port the API listens on
	DB      *store.DB

	opts   Options
	ns     *server.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	collector *running
	errs      []error
}

type running struct {
	c      *collector.Collector
	pub    *collector.Publisher
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs NATS, migrates the database, and starts the correlator, the api and the collector.
func Start(ctx context.Context, o Options) (*Stack, error) {
	if o.Cluster == "" {
		o.Cluster = "lab"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Stack{opts: o}
	ctx, s.cancel = context.WithCancel(ctx)
	if err := s.start(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Stack) start(ctx context.Context) error {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: s.opts.NATSDir, NoLog: true, NoSigs: true})
	if err != nil {
		return fmt.Errorf("nats server: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return errors.New("nats server not ready")
	}
	s.ns, s.NATSURL = ns, ns.ClientURL()
	if s.nc, err = bus.Connect(s.NATSURL, "schedlens-lab", s.opts.Logger); err != nil {
		return err
	}
	if s.js, err = jetstream.New(s.nc); err != nil {
		return err
	}
	if _, err := bus.EnsureStream(ctx, s.js, bus.StreamConfig{}); err != nil {
		return err
	}

	if s.DB, err = store.Open(ctx, s.opts.DatabaseURL, s.opts.Logger.With("component", "store")); err != nil {
		return err
	}
	if err := s.DB.Migrate(ctx); err != nil {
		return err
	}
	corr, err := correlator.New(s.js, s.DB, correlator.DefaultConfig(), s.opts.Logger.With("component", "correlator"), prometheus.NewRegistry())
	if err != nil {
		return err
	}
	s.go_("correlator", func() error { return corr.Run(ctx) })

	reg := prometheus.NewRegistry()
	web, err := ui.New(s.DB, s.opts.Logger.With("component", "ui"))
	if err != nil {
		return err
	}
	h, err := api.New(s.DB, s.opts.Logger.With("component", "api"), reg, reg, api.WithUI(web))
	if err != nil {
		return err
	}
	bound := make(chan string, 1)
	addr := s.opts.HTTPAddr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s.go_("api", func() error { return ops.Serve(ctx, addr, h, s.opts.Logger.With("component", "api"), bound) })
	select {
	case s.APIAddr = <-bound:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("api did not listen on %s: %v", addr, s.Err())
	}
	if host, port, err := net.SplitHostPort(s.APIAddr); err == nil && (host == "::" || host == "0.0.0.0" || host == "") {
		s.APIAddr = net.JoinHostPort("127.0.0.1", port)
	}
	return s.StartCollector(ctx)
}

func (s *Stack) go_(name string, f func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := f(); err != nil && !errors.Is(err, context.Canceled) {
			s.mu.Lock()
			s.errs = append(s.errs, fmt.Errorf("%s: %w", name, err))
			s.mu.Unlock()
		}
	}()
}

// StartCollector starts a collector (one may already run: two replicas then watch at once) and
// waits until it has listed everything.
func (s *Stack) StartCollector(ctx context.Context) error {
	logger := s.opts.Logger.With("component", "collector")
	reg := prometheus.NewRegistry()
	m := collector.NewMetrics(reg)
	pub := collector.NewPublisher(s.js, nil, collector.DefaultPublisherConfig(), logger, m)
	cfg := collector.DefaultConfig()
	cfg.Cluster, cfg.Source, cfg.Namespaces = s.opts.Cluster, "collector/lab", s.opts.Namespaces
	// Pods without an experiment definition get the lab endpoints' inference request.
	cfg.Probe.Default = collector.ProbeRequest{Method: "POST", Port: 8000, Path: "/v2/models/model/infer", Body: `{"inputs":"hello"}`}
	cfg.DCGM.Interval, cfg.DCGM.Targets = 0, s.opts.DCGMTargets
	if s.opts.DCGMTargets != nil {
		cfg.DCGM.Interval = time.Second
	}
	c, err := collector.New(s.opts.Client, pub, cfg, logger, m)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	r := &running{c: c, pub: pub, reg: reg, cancel: cancel, done: make(chan struct{})}
	pubCtx, stopPub := context.WithCancel(context.Background())
	pubDone := make(chan struct{})
	go func() { defer close(pubDone); _ = pub.Run(pubCtx) }()
	go func() {
		defer close(r.done)
		if err := c.Run(cctx); err != nil {
			s.mu.Lock()
			s.errs = append(s.errs, fmt.Errorf("collector: %w", err))
			s.mu.Unlock()
		}
		stopPub()
		<-pubDone
	}()
	s.mu.Lock()
	prev := s.collector
	s.collector = r
	s.mu.Unlock()
	_ = prev // a previous collector keeps running until StopCollector
	deadline := time.Now().Add(30 * time.Second)
	for c.Ready() != nil {
		if time.Now().After(deadline) {
			return errors.New("collector not ready after 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// StopCollector stops the most recently started collector, after its buffer is published.
func (s *Stack) StopCollector() {
	s.mu.Lock()
	r := s.collector
	s.collector = nil
	s.mu.Unlock()
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

// CollectorMetrics gathers the running collector's metrics (nil when none runs).
func (s *Stack) CollectorMetrics() prometheus.Gatherer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.collector == nil {
		return nil
	}
	return s.collector.reg
}

// Idle reports whether the collector has published everything and the correlator has stored
// everything in the stream.
func (s *Stack) Idle(ctx context.Context) (bool, error) {
	s.mu.Lock()
	r := s.collector
	s.mu.Unlock()
	if r != nil && r.pub.Buffered() > 0 {
		return false, nil
	}
	cons, err := s.js.Consumer(ctx, bus.StreamName, correlator.DefaultConfig().Consumer)
	if err != nil {
		return false, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return false, err
	}
	return info.NumPending == 0 && info.NumAckPending == 0, nil
}

// Err returns what made a component stop early.
func (s *Stack) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// Stop stops the collector, the api and the correlator, then NATS.
func (s *Stack) Stop() {
	s.StopCollector()
	s.cancel()
	s.wg.Wait()
	if s.nc != nil {
		s.nc.Close()
	}
	if s.DB != nil {
		s.DB.Close()
	}
	if s.ns != nil {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	}
}
