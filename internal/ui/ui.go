// Package ui is schedlens' web UI: server-rendered HTML and SVG over the store, mounted by the
// api under /ui/ on the same router (so the same listener and, later, the same auth). Assets are
// embedded; nothing is fetched from elsewhere, and the only script (static/ui.js, hand-written)
// adds live updates, wheel/drag/keyboard zoom and filter auto-submit to pages that work without
// it.
//
// Views, each addressable by URL:
//   - /ui/ — experiments, with their arms' verdicts as badges;
//   - /ui/experiments/{name} — the comparison as a forest plot, breaches, placement;
//   - /ui/experiments/{name}/arms/{arm} — the runs and pods behind an arm's intervals;
//   - /ui/experiments/{name}/runs/{run} — the run timeline, one lane per pod;
//   - /ui/pods/{uid} — one pod at full detail;
//   - /ui/workloads — every workload with pods in a time window;
//   - /ui/workloads/{namespace}/{kind}/{name} — one workload over a window, a lane per pod
//     grouped by revision, with its disruptions and desired-vs-Ready;
//   - /ui/disruptions — the disruptions of a window, each linking to the time around it.
package ui

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/labels"
	"github.com/schedlens/schedlens/internal/record"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/scope"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is where the api mounts the UI.
const Prefix = "/ui"

// Reader is what the UI reads: the store's reports, timelines, comparisons, workloads and
// disruptions (*store.DB), and the namespaces they live in (what a caller may read of them).
type Reader interface {
	Namespaces(ctx context.Context) ([]string, error)
	ExperimentNamespaces(ctx context.Context, name string) ([]string, error)
	Experiments(ctx context.Context, s scope.Scope) ([]report.ExperimentInfo, error)
	Experiment(ctx context.Context, name string) (report.ExperimentInfo, error)
	LastEvents(ctx context.Context) (map[string]time.Time, error)
	Comparison(ctx context.Context, name, namespace, baseline string) (compare.Comparison, error)
	ComparisonInput(ctx context.Context, name, namespace string) (compare.Input, error)
	RunDetail(ctx context.Context, experiment, namespace, run string, s scope.Scope) (report.RunDetail, error)
	RunVersion(ctx context.Context, experiment, namespace, run string) (string, error)
	Timeline(ctx context.Context, uid string) (align.Timeline, error)
	PodSeries(ctx context.Context, uid string) (report.PodSeries, error)
	Workloads(ctx context.Context, f report.WorkloadFilter, from, to time.Time) ([]report.WorkloadSummary, error)
	Workload(ctx context.Context, w events.WorkloadRef, from, to time.Time) (report.WorkloadWindow, error)
	Disruptions(ctx context.Context, f report.WorkloadFilter, from, to time.Time) ([]report.Disruption, error)
	RecordOrImported(ctx context.Context, name, namespace string) (record.Record, bool, error)
	ImportedRecord(ctx context.Context, name, namespace string) (record.Record, error)
	Successors(ctx context.Context, name string) ([]string, error)
	Labels(ctx context.Context, s scope.Scope, from, to time.Time) (labels.Answer, error)
}

// UI serves the web UI.
type UI struct {
	db     Reader
	logger *slog.Logger
	pages  map[string]*template.Template
}

// New returns the UI's handler, to be mounted at Prefix.
func New(db Reader, logger *slog.Logger) (http.Handler, error) {
	u := &UI{db: db, logger: logger, pages: map[string]*template.Template{}}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if n == "templates/layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", n, err)
		}
		u.pages[n[len("templates/"):]] = t
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	r := chi.NewRouter()
	r.Get("/", u.experiments)
	r.Get("/experiments/{name}", u.experiment)
	r.Get("/experiments/{name}/arms/{arm}", u.arm)
	r.Get("/experiments/{name}/against", u.againstForm)
	r.Get("/experiments/{name}/against/{other}", u.against)
	r.Get("/experiments/{name}/runs/{run}", u.run)
	r.Get("/experiments/{name}/runs/{run}/version", u.runVersion)
	r.Get("/pods/{uid}", u.pod)
	r.Get("/workloads", u.workloads)
	r.Get("/workloads/{namespace}/{kind}/{name}", u.workload)
	r.Get("/disruptions", u.disruptions)
	r.Get("/labels", u.labelsPage)
	r.Handle("/static/*", http.StripPrefix(Prefix+"/static/", cacheable(http.FileServerFS(static))))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		u.fail(w, r, http.StatusNotFound, "Not found", "There is no page at "+r.URL.Path+".")
	})
	return r, nil
}

func cacheable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		h.ServeHTTP(w, r)
	})
}

// page is what every template receives: the title and the view's own data; Hidden, on a list,
// is how many namespaces it leaves out (the caller may not read them), said under the title.
type page struct {
	Title  string
	Crumbs []crumb
	View   any
	Hidden int
}

type crumb struct{ Label, URL string }

// render executes a page template; partial renders only its "view" block (live updates).
func (u *UI) render(w http.ResponseWriter, r *http.Request, name string, p page) {
	t := u.pages[name]
	var buf bytes.Buffer
	block := "layout.html"
	if r.URL.Query().Get("partial") == "1" {
		block = "view"
	}
	if err := t.ExecuteTemplate(&buf, block, p); err != nil {
		u.internal(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = buf.WriteTo(w)
}

// fail answers with an HTML error page.
func (u *UI) fail(w http.ResponseWriter, r *http.Request, status int, title, detail string) {
	var buf bytes.Buffer
	if err := u.pages["error.html"].ExecuteTemplate(&buf, "layout.html", page{Title: title, View: struct {
		Status int
		Detail string
	}{status, detail}}); err != nil {
		http.Error(w, detail, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

func (u *UI) internal(w http.ResponseWriter, r *http.Request, err error) {
	u.logger.Error("ui request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	u.fail(w, r, http.StatusInternalServerError, "Internal error", "The page could not be built; see the server log.")
}

// failedLookup answers a lookup that failed: a 404 page saying what for report.ErrNotFound, a 500
// for any other error. It reports whether it answered (not for a nil err).
func (u *UI) failedLookup(w http.ResponseWriter, r *http.Request, err error, what string) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, report.ErrNotFound):
		u.fail(w, r, http.StatusNotFound, "Not found", what)
	default:
		u.internal(w, r, err)
	}
	return true
}

// Links.

func experimentURL(name string) string { return Prefix + "/experiments/" + url.PathEscape(name) }

func runURL(name, run string, q url.Values) string {
	s := experimentURL(name) + "/runs/" + url.PathEscape(run)
	if e := q.Encode(); e != "" {
		s += "?" + e
	}
	return s
}

func armURL(name, arm string, q url.Values) string {
	s := experimentURL(name) + "/arms/" + url.PathEscape(arm)
	if e := q.Encode(); e != "" {
		s += "?" + e
	}
	return s
}

func podURL(uid string) string { return Prefix + "/pods/" + url.PathEscape(uid) }

var funcs = template.FuncMap{
	"experimentURL": experimentURL,
	"podURL":        podURL,
	"runURL":        func(name, run, ns string) string { return runURL(name, run, nsQuery(ns)) },
	"armURL":        func(name, arm, ns string) string { return armURL(name, arm, nsQuery(ns)) },
	"time":          fmtTime,
	"ptime": func(t *time.Time) string {
		if t == nil {
			return "–"
		}
		return fmtTime(*t)
	},
	"secs": fmtSecs,
	"num":  fmtNum,
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"verdictLabel": verdictLabel,
}

func nsQuery(ns string) url.Values {
	q := url.Values{}
	if ns != "" {
		q.Set("namespace", ns)
	}
	return q
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000")
}

func fmtSecs(v *float64) string {
	if v == nil {
		return "–"
	}
	return strconv.FormatFloat(*v, 'f', 2, 64)
}

func fmtNum(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.4g", *v)
}

// verdictLabel is how a verdict reads in a badge.
func verdictLabel(v string) string {
	switch v {
	case "trade_off":
		return "trade-off"
	case "no_effect":
		return "no effect"
	case "insufficient_data":
		return "insufficient data"
	}
	return v
}
