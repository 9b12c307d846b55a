package endpoints

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schedlens/schedlens/lab/sim"
)

// Config shapes the simulation.
type Config struct {
	Port      int           // inference port on every pod IP (default 8000)
	Path      string        // inference path answered (default "/v2/models/model/infer"; any method); other paths 404
	DCGMPort  int           // dcgm-exporter port on every node IP (default 9400), path /metrics
	Seed      uint64        // seeds every pod's latency draws and the per-GPU offsets of the DCGM values
	Reconcile time.Duration // how often listeners follow the Source (default 100ms)
}

func (c Config) withDefaults() Config {
	if c.Port == 0 {
		c.Port = 8000
	}
	if c.Path == "" {
		c.Path = "/v2/models/model/infer"
	}
	if c.DCGMPort == 0 {
		c.DCGMPort = 9400
	}
	if c.Reconcile <= 0 {
		c.Reconcile = 100 * time.Millisecond
	}
	return c
}

func (c Config) validate() error {
	for _, p := range []int{c.Port, c.DCGMPort} {
		if p < 1 || p > 65535 {
			return fmt.Errorf("port %d out of range", p)
		}
	}
	if c.Path[0] != '/' {
		return fmt.Errorf("path %q does not start with /", c.Path)
	}
	return nil
}

// Server runs one HTTP listener per running pod (on pod.IP:Port) and one per node (on
// node.IP:DCGMPort).
type Server struct {
	src      sim.Source
	cfg      Config
	log      *slog.Logger
	model    string // the model name in Config.Path
	load     *loadTracker
	exporter *exporter
	started  atomic.Bool

	mu        sync.Mutex
	closed    bool
	listeners map[string]*listener // by address
	warned    map[string]string    // address → last problem logged for it
	handlers  sync.WaitGroup       // requests being served
}

// New returns a Server that follows src once Run is called. A nil logger discards logs.
func New(src sim.Source, cfg Config, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	load := newLoadTracker(time.Now)
	return &Server{
		src:       src,
		cfg:       cfg,
		log:       logger.With("component", "endpoints"),
		model:     modelFromPath(cfg.Path),
		load:      load,
		exporter:  newExporter(cfg.Seed, load, time.Now),
		listeners: make(map[string]*listener),
		warned:    make(map[string]string),
	}
}

// Run reconciles listeners with the Source until ctx ends, then closes them all, resetting open
// connections, and returns nil once every request handler has returned. It can be called once.
func (s *Server) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("endpoints server already ran")
	}
	if err := s.cfg.validate(); err != nil {
		return fmt.Errorf("endpoints config: %w", err)
	}
	defer s.closeAll()
	t := time.NewTicker(s.cfg.Reconcile)
	defer t.Stop()
	for {
		s.reconcile()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// target is a listener the Source calls for.
type target struct {
	owner string // "pod/<uid>" or "node/<name>"
	pod   *sim.Pod
	node  *sim.Node
}

// reconcile opens the listeners the Source calls for and closes the others.
func (s *Server) reconcile() {
	want := make(map[string]target)
	add := func(ip string, port int, t target) {
		addr := net.JoinHostPort(ip, strconv.Itoa(port))
		if a := net.ParseIP(ip); a == nil || !a.IsLoopback() {
			s.warnOnce(addr, "not a loopback address: not listening")
			return
		}
		if prev, dup := want[addr]; dup {
			s.warnOnce(addr, "address claimed by "+prev.owner+" and "+t.owner)
			return
		}
		want[addr] = t
	}
	for _, p := range s.src.Pods() {
		if p.Running && p.IP != "" {
			add(p.IP, s.cfg.Port, target{owner: "pod/" + p.UID, pod: &p})
		}
	}
	for _, n := range s.src.Nodes() {
		if n.Ready && n.IP != "" {
			add(n.IP, s.cfg.DCGMPort, target{owner: "node/" + n.Name, node: &n})
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for addr, l := range s.listeners {
		t, ok := want[addr]
		if ok && t.owner == l.owner {
			if l.pod != nil {
				l.pod.pod.Store(t.pod)
			}
			continue
		}
		delete(s.listeners, addr)
		// A pod that goes finishes the requests it is serving, as a server draining on SIGTERM
		// does; a node's exporter just stops.
		if l.pod != nil {
			go l.drain()
		} else {
			l.close()
		}
		s.log.Debug("listener closed", "addr", addr, "owner", l.owner)
	}
	for addr, t := range want {
		if _, ok := s.listeners[addr]; ok {
			continue
		}
		l, err := s.open(addr, t)
		if err != nil {
			s.warnOnceLocked(addr, err.Error())
			continue
		}
		delete(s.warned, addr)
		s.listeners[addr] = l
		s.log.Debug("listener opened", "addr", addr, "owner", t.owner)
	}
}

// listener is one bound address and the HTTP server on it.
type listener struct {
	owner  string
	pod    *podEndpoint // nil for a dcgm-exporter
	srv    *http.Server
	cancel context.CancelFunc
	done   chan struct{} // closed when Serve has returned
}

func (s *Server) open(addr string, t target) (*listener, error) {
	l := &listener{owner: t.owner, done: make(chan struct{})}
	var h http.Handler
	if t.pod != nil {
		l.pod = newPodEndpoint(s, *t.pod)
		h = l.pod
	} else {
		h = s.serveMetrics(t.node.Name, *t.node)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for %s: %w", t.owner, err)
	}
	// handlers see the listener's context end when it closes, so none outlives it for long
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.srv = &http.Server{
		Handler:           s.track(h),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(l.done)
		if err := l.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("listener failed", "addr", addr, "owner", t.owner, "err", err)
		}
	}()
	return l, nil
}

// close stops accepting, resets open connections and waits for Serve to return; handlers still
// running see their context cancelled.
func (l *listener) close() {
	l.cancel()
	_ = l.srv.Close()
	<-l.done
}

// drain stops accepting at once, lets the requests in progress finish (for at most
// drainTimeout), then closes.
func (l *listener) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	_ = l.srv.Shutdown(ctx)
	l.close()
}

// drainTimeout bounds a pod endpoint's graceful stop.
const drainTimeout = 3 * time.Second

// track counts running handlers so that closeAll can wait for them, and refuses requests once
// the Server is closing.
func (s *Server) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		s.handlers.Add(1)
		s.mu.Unlock()
		defer s.handlers.Done()
		h.ServeHTTP(w, r)
	})
}

func (s *Server) closeAll() {
	s.mu.Lock()
	s.closed = true
	ls := s.listeners
	s.listeners = nil
	s.mu.Unlock()
	for _, l := range ls {
		l.close()
	}
	s.handlers.Wait()
	s.log.Debug("all listeners closed", "count", len(ls))
}

func (s *Server) warnOnce(addr, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.warnOnceLocked(addr, msg)
}

// warnOnceLocked logs a problem with addr unless it is the one last logged for it.
func (s *Server) warnOnceLocked(addr, msg string) {
	if s.warned[addr] == msg {
		return
	}
	s.warned[addr] = msg
	s.log.Warn("cannot serve address", "addr", addr, "reason", msg)
}
