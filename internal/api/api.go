// Package api serves the HTTP API over the store: pod timelines and lists, experiments and their
// comparisons, service interruptions, run traces, workloads over any time window with the
// disruptions found in it and before/after comparisons, statistics and dead letters as JSON, errors as
// application/problem+json (RFC 9457), and the web UI under /ui/ when mounted (WithUI).
//
// Every route only reads, except PUT /v1/experiments/{name}, which stores a definition (as an
// experiment event), DELETE /v1/experiments/{name}, and POST /v1/records, which stores a record
// imported from another schedlens. POST /v1/requests/lookup reads too: a POST because its ids come in a body.
// External request results are written elsewhere: POST /v1/ingest/requests is the collector's
// (its own -ingest-addr listener).
//
// Every read covers the namespaces its caller may read, as authentication put them in the
// request's context (internal/scope; scope.go): lists are read through the store with them and
// count what they leave out (namespaces_hidden), and a read by name outside them is a 403.
package api

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/ops"
	"github.com/schedlens/schedlens/internal/store"
)

// Page size bounds of GET /v1/pods and GET /v1/unattributed-requests.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Server holds the API's dependencies.
type Server struct {
	db      *store.DB
	logger  *slog.Logger
	latency *prometheus.HistogramVec
}

// Option adds to the API's router.
type Option func(chi.Router)

// WithUI mounts the web UI (internal/ui) under /ui/ on the API's router: same listener, same
// middleware. / redirects there.
func WithUI(ui http.Handler) Option {
	return func(r chi.Router) {
		r.Mount("/ui", ui)
		r.Get("/", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusFound) })
	}
}

// New returns the API's handler. Its metrics are registered on reg and served from g.
func New(db *store.DB, logger *slog.Logger, reg prometheus.Registerer, g prometheus.Gatherer, opts ...Option) (http.Handler, error) {
	s := &Server{db: db, logger: logger,
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "schedlens_api_request_duration_seconds",
			Help:    "API request latency by route and status code.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "code"}),
	}
	if err := reg.Register(s.latency); err != nil {
		return nil, err
	}
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "schedlens_api_database_replay_lag_seconds",
		Help: "How far the api's database — a hot standby — replays behind its primary (0: caught up, or a primary; -1: unknown).",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, lag, err := db.Replica(ctx)
		if err != nil {
			return -1
		}
		return lag.Seconds()
	})
	if err := reg.Register(lag); err != nil {
		return nil, err
	}
	r := chi.NewRouter()
	r.Use(middleware.Recoverer, s.instrument, checkParams, limitBody)
	ops.Register(r, g, s.ready)
	r.Get("/v1/pods", s.listPods)
	r.Get("/v1/pods/{uid}/timeline", s.timeline)
	r.Get("/v1/stats", s.stats)
	r.Get("/v1/dead-letters", s.deadLetters)
	r.Get("/v1/unattributed-requests", s.unattributed)
	r.Post("/v1/requests/lookup", s.lookupRequests)
	r.Get("/v1/experiments", s.listExperiments)
	r.Get("/v1/experiments/{name}", s.experiment)
	r.Put("/v1/experiments/{name}", s.putExperiment)
	r.Delete("/v1/experiments/{name}", s.deleteExperiment)
	r.Get("/v1/experiments/{name}/comparison", s.comparison)
	r.Get("/v1/experiments/{name}/comparison.csv", s.comparisonCSV)
	r.Get("/v1/experiments/{name}/record", s.record)
	r.Get("/v1/experiments/{name}/against/{other}", s.against)
	r.Post("/v1/records", s.importRecord)
	r.Get("/v1/experiments/{name}/runs/{run}/interruptions", s.interruptions)
	r.Get("/v1/experiments/{name}/runs/{run}/trace.json", s.runTrace)
	r.Get("/v1/workloads", s.listWorkloads)
	r.Get("/v1/workloads/{namespace}/{kind}/{name}", s.workload)
	r.Get("/v1/workloads/{namespace}/{kind}/{name}/trace.json", s.workloadTrace)
	r.Get("/v1/workloads/{namespace}/{kind}/{name}/compare", s.workloadComparison)
	r.Get("/v1/disruptions", s.listDisruptions)
	r.Get("/v1/labels", s.listLabels)
	r.Get("/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openAPI)
	})
	for _, o := range opts {
		o(r)
	}
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		problem(w, http.StatusMethodNotAllowed, "Method Not Allowed", fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path))
	})
	return r, nil
}

// openAPI documents every route; a test keeps it in step with the router.
//
//go:embed openapi.json
var openAPI []byte

// ready is /readyz: the database answers and its schema is the one this binary expects.
func (s *Server) ready(ctx context.Context) error {
	if err := s.db.Ping(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	current, err := s.db.SchemaCurrent(ctx)
	if err != nil {
		return err
	}
	if !current {
		return errors.New("database schema is behind: run `correlator migrate`")
	}
	standby, lag, err := s.db.Replica(ctx)
	if err != nil {
		return err
	}
	if standby {
		ops.Note(ctx, "database: hot standby, replay %.3fs behind its primary", lag.Seconds())
	}
	return nil
}

func (s *Server) timeline(w http.ResponseWriter, r *http.Request) {
	uid := strings.ToLower(chi.URLParam(r, "uid")) // UIDs are stored in lower case
	if !events.ValidUID(uid) {
		problem(w, http.StatusBadRequest, "Malformed pod UID", fmt.Sprintf("%q is not a Kubernetes UID (8-4-4-4-12 hex digits)", uid))
		return
	}
	tl, err := s.db.Timeline(r.Context(), uid)
	if !s.mayReadPod(w, r, uid, tl.Pod.Namespace, err) {
		return
	}
	if s.failed(w, r, err, "Unknown pod", fmt.Sprintf("no events about pod %s", uid)) {
		return
	}
	writeJSON(w, tl)
}

func (s *Server) listPods(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := parseLimit(w, r)
	if !ok {
		return
	}
	sc, ok := s.listScope(w, r)
	if !ok {
		return
	}
	f := store.PodFilter{Experiment: q.Get("experiment"), Arm: q.Get("arm"), Run: q.Get("run"), Namespace: q.Get("namespace"), Node: q.Get("node"), Scope: sc}
	page, err := s.db.ListPods(r.Context(), f, limit, q.Get("cursor"))
	s.writePage(w, r, err, "pods", page.Pods, page.NextCursor, map[string]any{"namespaces_hidden": sc.Hidden()})
}

// writePage answers with one page of a cursor-paged list (/v1/pods, /v1/unattributed-requests):
// its items under key, next_cursor (null on the last page) and the fields of more; or, when err,
// the problem it is, a 400 for a cursor the endpoint did not hand out.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, err error, key string, items any, nextCursor string, more map[string]any) {
	if errors.Is(err, store.ErrBadCursor) {
		problem(w, http.StatusBadRequest, "Bad cursor", "cursor must be a next_cursor value returned by this endpoint")
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	var next *string
	if nextCursor != "" {
		next = &nextCursor
	}
	body := map[string]any{key: items, "next_cursor": next}
	for k, v := range more {
		body[k] = v
	}
	writeJSON(w, body)
}

// ScopedStats is /v1/stats for a caller who may read some namespaces only: their pods. What no
// namespace owns (events by kind, dead letters, results waiting for a pod) is left out.
type ScopedStats struct {
	PodsTotal        int64 `json:"pods_total"`
	NamespacesHidden int   `json:"namespaces_hidden"`
}

// Stats is /v1/stats for a caller of every namespace.
type Stats struct {
	store.Stats
	NamespacesHidden int `json:"namespaces_hidden"`
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.readScope(w, r)
	if !ok {
		return
	}
	if sc.Limited() {
		n, err := s.db.PodCount(r.Context(), sc)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		writeJSON(w, ScopedStats{PodsTotal: n, NamespacesHidden: sc.Hidden()})
		return
	}
	st, err := s.db.Stats(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, Stats{Stats: st})
}

func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	if !s.mayReadAll(w, r) {
		return
	}
	limit, ok := parseLimit(w, r)
	if !ok {
		return
	}
	page, err := s.db.DeadLetterPage(r.Context(), limit, store.DeadLetterRawBytes, store.DeadLetterPageBytes)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, page)
}

// interruptions serves the service interruptions of every arm of an experiment run.
func (s *Server) interruptions(w http.ResponseWriter, r *http.Request) {
	name, run := chi.URLParam(r, "name"), chi.URLParam(r, "run")
	if !s.mayReadExperiment(w, r, name) {
		return
	}
	minGap := time.Second
	if v := r.URL.Query().Get("min_gap"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			problem(w, http.StatusBadRequest, "Bad min_gap", "min_gap must be a positive duration such as 1s or 500ms")
			return
		}
		minGap = d
	}
	arms, err := s.db.RunInterruptions(r.Context(), name, r.URL.Query().Get("namespace"), run, minGap)
	if s.failed(w, r, err, "Run not found", fmt.Sprintf("no pods of experiment %q run %q", name, run)) {
		return
	}
	writeJSON(w, map[string]any{"experiment": name, "run": run, "min_gap_seconds": minGap.Seconds(), "arms": arms})
}

// parseLimit reads ?limit=, answering 400 itself when it is bad.
func parseLimit(w http.ResponseWriter, r *http.Request) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return DefaultLimit, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxLimit {
		problem(w, http.StatusBadRequest, "Bad limit", fmt.Sprintf("limit must be an integer from 1 to %d, got %q", MaxLimit, v))
		return 0, false
	}
	return n, true
}

// failed answers with the problem err is, if any: a 404 with title and detail when the store
// found nothing (store.ErrNotFound), internal's answer otherwise. It reports whether it answered,
// so that a handler reading one thing by name needs one check.
func (s *Server) failed(w http.ResponseWriter, r *http.Request, err error, title, detail string) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, store.ErrNotFound):
		problem(w, http.StatusNotFound, title, detail)
	default:
		s.internal(w, r, err)
	}
	return true
}

// internal logs an unexpected error and answers 500 without leaking its text; a query the
// database cancelled for its statement timeout (store.WithStatementTimeout) is a 503.
func (s *Server) internal(w http.ResponseWriter, r *http.Request, err error) {
	if store.IsTimeout(err) {
		s.logger.Warn("query timed out", "method", r.Method, "path", r.URL.Path, "error", err)
		w.Header().Set("Retry-After", "5")
		problem(w, http.StatusServiceUnavailable, "Query Timed Out", "the query ran longer than the server's statement timeout; narrow it or retry later")
		return
	}
	if store.IsPermissionDenied(err) {
		s.logger.Warn("the database role may not do this", "method", r.Method, "path", r.URL.Path, "error", err)
		problem(w, http.StatusInternalServerError, "Database Refused the Write",
			"this api's database may only be read — a read-only role (docs/security.md) or a hot standby (docs/operations.md); define experiments through a ConfigMap or an api on the primary with a role that may write")
		return
	}
	s.logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	problem(w, http.StatusInternalServerError, "Internal Server Error", "the request failed; see the server log")
}

func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := chi.RouteContext(r.Context()).RoutePattern()
		if route == "" {
			route = "unmatched"
		}
		s.latency.WithLabelValues(route, strconv.Itoa(ww.Status())).Observe(time.Since(start).Seconds())
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

// problem writes an RFC 9457 problem document.
func problem(w http.ResponseWriter, status int, title, detail string) {
	ops.Problem(w, status, title, detail)
}

// OpenAPIDocument returns the OpenAPI 3 document the api serves at /openapi.json.
func OpenAPIDocument() []byte { return openAPI }
