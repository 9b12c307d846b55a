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
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/schedlens/schedlens/internal/apiapp"
	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/collector"
	"github.com/schedlens/schedlens/internal/collectorapp"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/correlatorapp"
	"github.com/schedlens/schedlens/internal/dcgm"
	"github.com/schedlens/schedlens/internal/natsserver"
	"github.com/schedlens/schedlens/internal/prober"
	"github.com/schedlens/schedlens/internal/wait"
	"github.com/schedlens/schedlens/lab/background"
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
	// WorkloadMetricsInterval is how often the api computes its workload metrics (0: its
	// default; apiapp.Options).
	WorkloadMetricsInterval time.Duration
}

// Stack is the running pipeline: the same apps the binaries run (collectorapp, correlatorapp,
// apiapp), in this process.
type Stack struct {
	NATSURL string
	APIAddr string // host:port the API listens on

	opts   Options
	ns     *natsserver.Server
	nc     *nats.Conn // the stack's own view of the stream, for CaughtUp
	js     jetstream.JetStream
	cancel context.CancelFunc
	bg     background.Group // the correlator, the api and every collector

	mu         sync.Mutex
	collectors []*running // in the order they started; the last is "the collector"
}

type running struct {
	app    *collectorapp.App
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs NATS, the correlator (which migrates the database), the api and the collector.
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
	ns, err := natsserver.Start(natsserver.Options{Dir: s.opts.NATSDir})
	if err != nil {
		return err
	}
	s.ns, s.NATSURL = ns, ns.URL()
	if s.nc, err = bus.Connect(s.NATSURL, "schedlens-lab", s.opts.Logger); err != nil {
		return err
	}
	if s.js, err = jetstream.New(s.nc); err != nil {
		return err
	}
	if _, err := bus.EnsureStream(ctx, s.js, bus.StreamConfig{}); err != nil {
		return err
	}

	// The correlator migrates the schema before it consumes: the api waits until it is ready.
	corrUp := make(chan string, 1)
	s.bg.Go("correlator", func() error {
		return correlatorapp.Run(ctx, correlatorapp.Options{NATSURL: s.NATSURL, DatabaseURL: s.opts.DatabaseURL, MetricsAddr: "127.0.0.1:0",
			Logger: s.opts.Logger.With("component", "correlator"), Bound: func(a string) { corrUp <- a }})
	})
	if err := s.wait(corrUp, "correlator"); err != nil {
		return err
	}
	if err := s.ready(ctx, "http://"+<-corrUp+"/readyz", "correlator"); err != nil {
		return err
	}
	apiUp := make(chan string, 1)
	addr := s.opts.HTTPAddr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s.bg.Go("api", func() error {
		return apiapp.Run(ctx, apiapp.Options{HTTPAddr: addr, DatabaseURL: s.opts.DatabaseURL, WorkloadMetricsInterval: s.opts.WorkloadMetricsInterval,
			Logger: s.opts.Logger.With("component", "api"), Bound: func(a string) { apiUp <- a }})
	})
	if err := s.wait(apiUp, "api"); err != nil {
		return err
	}
	s.APIAddr = <-apiUp
	if host, port, err := net.SplitHostPort(s.APIAddr); err == nil && (host == "::" || host == "0.0.0.0" || host == "") {
		s.APIAddr = net.JoinHostPort("127.0.0.1", port)
	}
	return s.StartCollector(ctx)
}

// ready waits until a component's readiness probe answers 200.
func (s *Stack) ready(ctx context.Context, url, name string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := s.Err(); err != nil {
			return fmt.Errorf("%s did not become ready: %w", name, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 60s", name)
		}
		if !wait.Sleep(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// wait waits for a component's listener (it puts the address back for the caller to read).
func (s *Stack) wait(up chan string, name string) error {
	select {
	case a := <-up:
		up <- a
		return nil
	case <-time.After(60 * time.Second):
		return fmt.Errorf("%s did not start: %v", name, s.Err())
	}
}

// StartCollector starts a collector (one may already run: two replicas then watch at once) and
// waits until it has listed everything.
func (s *Stack) StartCollector(ctx context.Context) error {
	cfg := collector.DefaultConfig()
	cfg.Cluster, cfg.Source, cfg.Namespaces = s.opts.Cluster, "collector/lab", s.opts.Namespaces
	// Pods without an experiment definition get the lab endpoints' inference request; every
	// pod of the lab serves it, labelled or not (the unlabelled workload scenario's too).
	cfg.Probe.Default = prober.Request{Method: "POST", Port: 8000, Path: "/v2/models/model/infer", Body: `{"inputs":"hello"}`}
	cfg.ProbeSelector = ""
	cfg.DCGM.Interval, cfg.DCGM.Targets = 0, s.opts.DCGMTargets
	if s.opts.DCGMTargets != nil {
		cfg.DCGM.Interval = time.Second
	}
	reg := prometheus.NewRegistry()
	app, err := collectorapp.New(collectorapp.Options{NATSURL: s.NATSURL, Client: s.opts.Client, Collector: cfg,
		MetricsAddr: "127.0.0.1:0", Logger: s.opts.Logger.With("component", "collector"), Registry: reg})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	r := &running{app: app, reg: reg, cancel: cancel, done: make(chan struct{})}
	s.bg.Go("collector", func() error {
		defer close(r.done)
		return app.Run(cctx)
	})
	s.mu.Lock()
	s.collectors = append(s.collectors, r) // a previous one keeps running until it is stopped
	s.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for app.Ready() != nil {
		if time.Now().After(deadline) {
			return errors.New("collector not ready after 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// StopCollector stops the most recently started collector, after its buffer is published; the
// one started before it, if it still runs, becomes the collector.
func (s *Stack) StopCollector() {
	s.mu.Lock()
	var r *running
	if n := len(s.collectors); n > 0 {
		r, s.collectors = s.collectors[n-1], s.collectors[:n-1]
	}
	s.mu.Unlock()
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

// current is the most recently started collector still running (nil when none runs).
func (s *Stack) current() *running {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.collectors); n > 0 {
		return s.collectors[n-1]
	}
	return nil
}

// CollectorMetrics gathers the running collector's metrics (nil when none runs).
func (s *Stack) CollectorMetrics() prometheus.Gatherer {
	r := s.current()
	if r == nil {
		return nil
	}
	return r.reg
}

// consumerInfo is the state of the correlator's durable consumer of the stream: how far it has
// read and acknowledged.
func (s *Stack) consumerInfo(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	cons, err := s.js.Consumer(ctx, bus.StreamName, correlator.DefaultConfig().Consumer)
	if err != nil {
		return nil, err
	}
	return cons.Info(ctx)
}

// CaughtUp waits until everything published so far is stored: the collector's buffer is
// empty, then the correlator has acknowledged the stream up to the last message it held then.
// It holds while pods keep being probed.
func (s *Stack) CaughtUp(ctx context.Context) error {
	poll := func(ok func() (bool, error)) error {
		for {
			done, err := ok()
			if done {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("pipeline not caught up: %w (last: %v)", ctx.Err(), err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	if err := poll(func() (bool, error) {
		r := s.current()
		return r == nil || r.app.Buffered() == 0, nil
	}); err != nil {
		return err
	}
	stream, err := s.js.Stream(ctx, bus.StreamName)
	if err != nil {
		return err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return err
	}
	last := info.State.LastSeq
	return poll(func() (bool, error) {
		ci, err := s.consumerInfo(ctx)
		if err != nil {
			return false, err
		}
		return ci.AckFloor.Stream >= last, nil
	})
}

// Err returns what made a component stop early.
func (s *Stack) Err() error { return s.bg.Err() }

// Stop stops every collector (newest first), the api and the correlator, then NATS.
func (s *Stack) Stop() {
	for s.current() != nil {
		s.StopCollector()
	}
	s.cancel()
	s.bg.Wait()
	if s.nc != nil {
		s.nc.Close()
	}
	if s.ns != nil {
		s.ns.Close()
	}
}
