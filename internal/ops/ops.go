// Package ops serves what operators and orchestrators poll on every schedlens process:
// /metrics, /healthz (the process is alive) and /readyz (its dependencies answer).
package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadyFunc returns nil when the process can do its work.
type ReadyFunc func(ctx context.Context) error

// Register adds /metrics, /healthz and /readyz to mux.
func Register(mux interface {
	Handle(string, http.Handler)
}, g prometheus.Gatherer, ready ReadyFunc) {
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.Handle("/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	}))
	mux.Handle("/readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		var notes []string
		ctx = context.WithValue(ctx, noteKey{}, &notes)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := ready(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready:", err)
			return
		}
		fmt.Fprintln(w, "ok")
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}))
}

type noteKey struct{}

// Note adds a line after "ok" to the answer of /readyz, from within a ReadyFunc: what an
// operator should see of a ready process (an api on a hot standby: how far behind it reads).
func Note(ctx context.Context, format string, args ...any) {
	if notes, ok := ctx.Value(noteKey{}).(*[]string); ok {
		*notes = append(*notes, fmt.Sprintf(format, args...))
	}
}

// Problem writes an RFC 9457 problem document (application/problem+json): the one error shape of
// every schedlens HTTP answer.
func Problem(w http.ResponseWriter, status int, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": title, "status": status, "detail": detail})
}

// Handler is a mux with only the ops endpoints, for processes without an API of their own.
func Handler(g prometheus.Gatherer, ready ReadyFunc) http.Handler {
	mux := http.NewServeMux()
	Register(mux, g, ready)
	return mux
}

// Timeouts bound what one client may hold of a server: a slow client (a slow-loris sending
// its headers a byte at a time, a body that never ends, a reader that never reads) is cut off
// instead of holding a connection and a goroutine forever.
type Timeouts struct {
	ReadHeader time.Duration // to read a request's headers
	Read       time.Duration // to read a whole request, body included
	Write      time.Duration // from the end of the headers to the end of the response
	Idle       time.Duration // a keep-alive connection waiting for its next request
	// MaxHeaderBytes bounds a request's headers (and its URL); beyond, the answer is 431.
	MaxHeaderBytes int
}

// DefaultTimeouts suit the schedlens servers: an ingest body of 32 MiB at a few hundred KiB/s
// within Read, a comparison or a 1,000-pod trace within Write.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 10 * time.Second, Read: time.Minute, Write: 2 * time.Minute, Idle: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
}

// ServeOption changes how Serve serves.
type ServeOption func(*http.Server)

// WithTimeouts replaces DefaultTimeouts; zero fields keep their defaults.
func WithTimeouts(t Timeouts) ServeOption {
	return func(s *http.Server) {
		set := func(dst *time.Duration, v time.Duration) {
			if v > 0 {
				*dst = v
			}
		}
		set(&s.ReadHeaderTimeout, t.ReadHeader)
		set(&s.ReadTimeout, t.Read)
		set(&s.WriteTimeout, t.Write)
		set(&s.IdleTimeout, t.Idle)
		if t.MaxHeaderBytes > 0 {
			s.MaxHeaderBytes = t.MaxHeaderBytes
		}
	}
}

// NewServer builds the http.Server Serve runs: h behind DefaultTimeouts, changed by opts.
func NewServer(h http.Handler, opts ...ServeOption) *http.Server {
	t := DefaultTimeouts()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write,
		IdleTimeout: t.Idle, MaxHeaderBytes: t.MaxHeaderBytes}
	for _, o := range opts {
		o(srv)
	}
	return srv
}

// Serve runs an HTTP server (NewServer) on addr until ctx ends, then shuts it down
// gracefully. When bound is not nil it is called with the listening address (useful with port 0).
func Serve(ctx context.Context, addr string, h http.Handler, logger *slog.Logger, bound func(addr string), opts ...ServeOption) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := NewServer(h, opts...)
	logger.Info("http listening", "addr", l.Addr().String(), "tls", srv.TLSConfig != nil, "read_timeout", srv.ReadTimeout, "write_timeout", srv.WriteTimeout)
	if bound != nil {
		bound(l.Addr().String())
	}
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(l, "", "") // the certificate comes from TLSConfig.GetCertificate
			return
		}
		errc <- srv.Serve(l)
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("http server on %s: %w", addr, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down http server: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
