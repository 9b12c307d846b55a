package api

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/labels"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/trace"
	"github.com/schedlens/schedlens/internal/window"
)

// DefaultWindow is the window a workload or disruption read covers when from is not given.
const DefaultWindow = window.Default

// MaxWindow bounds a window: a read looks at every pod alive in it.
const MaxWindow = window.Max

// ParseTime reads a window bound: RFC 3339, "now", or a duration before now ("-6h", "-90m",
// "-2d"; d is 24 hours). It is window.ParseTime, which the web UI reads its windows with too.
func ParseTime(s string, now time.Time) (time.Time, error) { return window.ParseTime(s, now) }

// readWindow reads from and to (default: the last DefaultWindow); a bad bound, an empty window or
// one longer than MaxWindow is a 400.
func readWindow(w http.ResponseWriter, r *http.Request) (from, to time.Time, ok bool) {
	q := r.URL.Query()
	from, to, err := window.Parse(q.Get("from"), q.Get("to"), time.Now().UTC())
	if err != nil {
		problem(w, http.StatusBadRequest, "Bad window", err.Error())
		return from, to, false
	}
	return from, to, true
}

// workloadRef reads {namespace}/{kind}/{name} from the path.
func workloadRef(r *http.Request) events.WorkloadRef {
	return events.WorkloadRef{Namespace: chi.URLParam(r, "namespace"), Kind: events.WorkloadKindOf(chi.URLParam(r, "kind")), Name: chi.URLParam(r, "name")}
}

// WorkloadPage is the answer of GET /v1/workloads.
type WorkloadPage struct {
	From       time.Time                `json:"from"`
	To         time.Time                `json:"to"`
	Workloads  []report.WorkloadSummary `json:"workloads"`
	NextCursor string                   `json:"next_cursor,omitempty"`
	// NamespacesHidden counts the namespaces schedlens holds that the caller may not read.
	NamespacesHidden int `json:"namespaces_hidden"`
}

// DisruptionPage is the answer of GET /v1/disruptions.
type DisruptionPage struct {
	From        time.Time           `json:"from"`
	To          time.Time           `json:"to"`
	Disruptions []report.Disruption `json:"disruptions"`
	NextCursor  string              `json:"next_cursor,omitempty"`
	// NamespacesHidden counts the namespaces schedlens holds that the caller may not read.
	NamespacesHidden int `json:"namespaces_hidden"`
}

// afterCursor returns the items after the cursor's key (keys in list order) and the next
// cursor when more remain than limit.
func afterCursor[T any](w http.ResponseWriter, r *http.Request, items []T, key func(T) string, less func(a, b string) bool) ([]T, string, bool) {
	limit, ok := parseLimit(w, r)
	if !ok {
		return nil, "", false
	}
	if c := r.URL.Query().Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil {
			problem(w, http.StatusBadRequest, "Bad cursor", "the cursor is not one this API gave")
			return nil, "", false
		}
		after := string(b)
		i := 0
		for i < len(items) && !less(after, key(items[i])) {
			i++
		}
		items = items[i:]
	}
	next := ""
	if len(items) > limit {
		items = items[:limit]
		next = base64.RawURLEncoding.EncodeToString([]byte(key(items[limit-1])))
	}
	return items, next, true
}

func (s *Server) listWorkloads(w http.ResponseWriter, r *http.Request) {
	from, to, ok := readWindow(w, r)
	if !ok {
		return
	}
	sc, ok := s.listScope(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	ws, err := s.db.Workloads(r.Context(), store.WorkloadFilter{Namespace: q.Get("namespace"), Kind: events.WorkloadKindOf(q.Get("kind")), Scope: sc}, from, to)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	page, next, ok := afterCursor(w, r, ws, func(x report.WorkloadSummary) string { return x.WorkloadRef.String() },
		func(a, b string) bool { return a < b })
	if !ok {
		return
	}
	writeJSON(w, WorkloadPage{From: from, To: to, Workloads: page, NextCursor: next, NamespacesHidden: sc.Hidden()})
}

// workloadWindow reads the workload of the path over the request's window; false when it
// answered the request with a problem.
func (s *Server) workloadWindow(w http.ResponseWriter, r *http.Request) (report.WorkloadWindow, events.WorkloadRef, bool) {
	ref := workloadRef(r)
	if !s.mayRead(w, r, ref.Namespace) {
		return report.WorkloadWindow{}, ref, false
	}
	from, to, ok := readWindow(w, r)
	if !ok {
		return report.WorkloadWindow{}, ref, false
	}
	ww, err := s.db.Workload(r.Context(), ref, from, to)
	if s.failed(w, r, err, "Unknown workload", fmt.Sprintf("no pod of %s lived from %s to %s", ref, from.Format(time.RFC3339), to.Format(time.RFC3339))) {
		return ww, ref, false
	}
	return ww, ref, true
}

func (s *Server) workload(w http.ResponseWriter, r *http.Request) {
	if ww, _, ok := s.workloadWindow(w, r); ok {
		writeJSON(w, ww)
	}
}

func (s *Server) workloadTrace(w http.ResponseWriter, r *http.Request) {
	ww, ref, ok := s.workloadWindow(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf("inline; filename=%q", fmt.Sprintf("%s-%s-%s.trace.json", ref.Namespace, strings.ToLower(ref.Kind), ref.Name)))
	writeJSON(w, trace.BuildWorkload(ww))
}

func (s *Server) listDisruptions(w http.ResponseWriter, r *http.Request) {
	from, to, ok := readWindow(w, r)
	if !ok {
		return
	}
	sc, ok := s.listScope(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	ds, err := s.db.Disruptions(r.Context(), store.WorkloadFilter{Namespace: q.Get("namespace"), Kind: events.WorkloadKindOf(q.Get("kind")), Node: q.Get("node"), Scope: sc}, from, to)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	// Newest first: the key sorts as the list does when compared the other way round.
	page, next, ok := afterCursor(w, r, ds, func(d report.Disruption) string {
		return d.Start.UTC().Format("2006-01-02T15:04:05.000000000Z") + " " + d.ID
	},
		func(a, b string) bool { return a > b })
	if !ok {
		return
	}
	writeJSON(w, DisruptionPage{From: from, To: to, Disruptions: page, NextCursor: next, NamespacesHidden: sc.Hidden()})
}

// parseSide reads a before/after side: "FROM..TO" (each as ParseTime reads it) or a revision
// (a Deployment's revision number or pod-template-hash, a StatefulSet's controller revision).
func parseSide(name, v string, now time.Time) (store.Side, error) {
	if a, b, ok := strings.Cut(v, ".."); ok {
		from, err := ParseTime(a, now)
		if err != nil {
			return store.Side{}, fmt.Errorf("%s: %w", name, err)
		}
		to, err := ParseTime(b, now)
		if err != nil {
			return store.Side{}, fmt.Errorf("%s: %w", name, err)
		}
		if !from.Before(to) {
			return store.Side{}, fmt.Errorf("%s: %s must be before %s", name, a, b)
		}
		return store.Side{From: from, To: to}, nil
	}
	if v == "" {
		return store.Side{}, fmt.Errorf("%s: missing: want a revision (number or hash) or FROM..TO", name)
	}
	return store.Side{Revision: v}, nil
}

func (s *Server) workloadComparison(w http.ResponseWriter, r *http.Request) {
	if !s.mayRead(w, r, chi.URLParam(r, "namespace")) {
		return
	}
	from, to, ok := readWindow(w, r)
	if !ok {
		return
	}
	now := time.Now().UTC()
	q := r.URL.Query()
	before, err := parseSide("before", q.Get("before"), now)
	if err != nil {
		problem(w, http.StatusBadRequest, "Bad side", err.Error())
		return
	}
	after, err := parseSide("after", q.Get("after"), now)
	if err != nil {
		problem(w, http.StatusBadRequest, "Bad side", err.Error())
		return
	}
	ref := workloadRef(r)
	c, err := s.db.WorkloadComparison(r.Context(), ref, from, to, before, after)
	var bad *compare.BadBaselineError
	switch {
	case errors.As(err, &bad):
		problem(w, http.StatusBadRequest, "Empty side", fmt.Sprintf("before (%s) and after (%s) must each pick pods of %s that lived from %s to %s",
			q.Get("before"), q.Get("after"), ref, from.Format(time.RFC3339), to.Format(time.RFC3339)))
		return
	case s.failed(w, r, err, "Unknown workload", fmt.Sprintf("no pod of %s lived from %s to %s", ref, from.Format(time.RFC3339), to.Format(time.RFC3339))):
		return
	}
	writeJSON(w, c)
}

// LabelsAnswer is GET /v1/labels: internal/labels' answer over the window, with the window and
// how many namespaces the caller may not read.
type LabelsAnswer struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	labels.Answer
	NamespacesHidden int `json:"namespaces_hidden"`
}

// listLabels is GET /v1/labels?from=&to=: the node labels the placement rules of the window's
// pods use, the nodes carrying each value, who depends on them, what the label registries say
// of them, and their drift in the window.
func (s *Server) listLabels(w http.ResponseWriter, r *http.Request) {
	from, to, ok := readWindow(w, r)
	if !ok {
		return
	}
	sc, ok := s.listScope(w, r)
	if !ok {
		return
	}
	a, err := s.db.Labels(r.Context(), sc, from, to)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, LabelsAnswer{From: from, To: to, Answer: a, NamespacesHidden: sc.Hidden()})
}
