package ui

import (
	"cmp"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/window"
)

// windowForm is the time window of a page: what it reads, what the reader typed, and links to
// the usual windows that keep the page's other parameters.
type windowForm struct {
	From, To     time.Time
	FromQ, ToQ   string // as given ("" for the default)
	Presets      []preset
	Span, Hidden string // the window's length in words; the other parameters, for forms
}

// preset is a link to a window before now.
type preset struct {
	Label, URL string
	Current    bool
}

// window reads the page's from and to as the API does (window.Parse: RFC 3339, now, -6h, -2d;
// the last 24 h by default); a bad window is an HTML 400 page.
func (u *UI) window(w http.ResponseWriter, r *http.Request) (windowForm, bool) {
	q := r.URL.Query()
	from, to, err := window.Parse(q.Get("from"), q.Get("to"), time.Now().UTC())
	if err != nil {
		u.fail(w, r, http.StatusBadRequest, "Bad time window", err.Error()+". from and to are RFC 3339 times (2026-12-01T02:00:00Z), now, or times before now (-6h, -90m, -2d); from must be before to, at most 31 days apart.")
		return windowForm{}, false
	}
	f := windowForm{From: from, To: to, FromQ: q.Get("from"), ToQ: q.Get("to"), Span: to.Sub(from).Round(time.Second).String()}
	for _, p := range []struct{ from, label string }{{"-1h", "last hour"}, {"-6h", "last 6 h"}, {"-24h", "last 24 h"}, {"-7d", "last 7 days"}} {
		qq := apiQuery(q)
		qq.Del("to")
		qq.Set("from", p.from)
		f.Presets = append(f.Presets, preset{Label: p.label, URL: withQuery(r.URL.Path, qq), Current: f.FromQ == p.from && f.ToQ == ""})
	}
	return f, true
}

// apiQuery is a page's query without what only the UI reads (partial): what the API's JSON of
// the same view takes.
func apiQuery(q url.Values) url.Values {
	out := url.Values{}
	maps.Copy(out, q)
	out.Del("partial")
	return out
}

// windowQuery is the query of the window [from, to] in RFC 3339.
func windowQuery(from, to time.Time) url.Values {
	return url.Values{"from": {fmtRFC3339(from)}, "to": {fmtRFC3339(to)}}
}

func fmtRFC3339(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
}

// workloadPath is a workload's path under a prefix (Prefix+"/workloads" or the API's).
func workloadPath(prefix string, w events.WorkloadRef) string {
	return prefix + "/" + url.PathEscape(w.Namespace) + "/" + url.PathEscape(w.Kind) + "/" + url.PathEscape(w.Name)
}

func withQuery(s string, q url.Values) string {
	if e := q.Encode(); e != "" {
		return s + "?" + e
	}
	return s
}

func workloadURL(w events.WorkloadRef, q url.Values) string {
	return withQuery(workloadPath(Prefix+"/workloads", w), q)
}

func workloadsURL(q url.Values) string { return withQuery(Prefix+"/workloads", q) }

// workloadsView is the workloads page's data.
type workloadsView struct {
	Window windowForm
	Filter report.WorkloadFilter
	Kinds  []string
	Rows   []workloadRow
	APIURL string
	// DisruptionsURL lists the disruptions of the same window and filters.
	DisruptionsURL string
}

// workloadRow is a workload as the list shows it.
type workloadRow struct {
	report.WorkloadSummary
	Key, URL string
}

func (u *UI) workloads(w http.ResponseWriter, r *http.Request) {
	win, ok := u.window(w, r)
	if !ok {
		return
	}
	sc, ok := u.listScope(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	f := report.WorkloadFilter{Namespace: q.Get("namespace"), Kind: events.WorkloadKindOf(q.Get("kind")), Scope: sc}
	ws, err := u.db.Workloads(r.Context(), f, win.From, win.To)
	if err != nil {
		u.internal(w, r, err)
		return
	}
	keep := keepWindow(q)
	v := workloadsView{Window: win, Filter: f, Kinds: events.WorkloadKinds(), APIURL: withQuery("/v1/workloads", apiQuery(q))}
	dq := url.Values{}
	maps.Copy(dq, keep)
	if f.Namespace != "" {
		dq.Set("namespace", f.Namespace)
	}
	if f.Kind != "" {
		dq.Set("kind", f.Kind)
	}
	v.DisruptionsURL = withQuery(Prefix+"/disruptions", dq)
	for _, s := range ws {
		v.Rows = append(v.Rows, workloadRow{WorkloadSummary: s, Key: s.WorkloadRef.String(), URL: workloadURL(s.WorkloadRef, keep)})
	}
	u.render(w, r, "workloads.html", page{Title: "Workloads", View: v, Hidden: sc.Hidden()})
}

// workloadView is the workload page's data.
type workloadView struct {
	Key         string
	Summary     report.WorkloadSummary
	Window      windowForm
	Chart       template.HTML
	Counts      template.HTML
	Legend      template.HTML
	Lanes       int
	Desired     []report.CountPoint
	Ready       []report.CountPoint
	Disruptions []disruptionRow
	Windows     []windowRow
	Revisions   []revisionRow
	Pods        []podRow
	Zoom        zoomLinks
	// APIURL is the window as JSON, TraceURL its trace, CompareURL the before/after of its
	// last two revisions (empty with fewer).
	APIURL, TraceURL, CompareURL string
	CompareLabel                 string
}

// revisionRow is a revision as the revisions table lists it.
type revisionRow struct {
	Number, Hash, Label           string
	FirstCreated                  time.Time
	Pods, Requests                int
	ErrorRate, P50, P95, P99, GPU string
}

func (u *UI) workload(w http.ResponseWriter, r *http.Request) {
	win, ok := u.window(w, r)
	if !ok {
		return
	}
	ref := events.WorkloadRef{Namespace: chi.URLParam(r, "namespace"), Kind: events.WorkloadKindOf(chi.URLParam(r, "kind")), Name: chi.URLParam(r, "name")}
	if !u.mayRead(w, r, ref.Namespace) {
		return
	}
	ww, err := u.db.Workload(r.Context(), ref, win.From, win.To)
	if u.failedLookup(w, r, err, fmt.Sprintf("No pod of %s lived from %s to %s.", ref, fmtTime(win.From), fmtTime(win.To))) {
		return
	}
	v := buildWorkload(ww)
	v.Window = win
	wq := windowQuery(win.From, win.To)
	v.APIURL = withQuery(workloadPath("/v1/workloads", ref), wq)
	v.TraceURL = withQuery(workloadPath("/v1/workloads", ref)+"/trace.json", wq)
	if n := len(ww.Revisions); n >= 2 {
		before, after := ww.Revisions[n-2], ww.Revisions[n-1]
		b, a := cmp.Or(before.Hash, before.Number), cmp.Or(after.Hash, after.Number)
		if b != "" && a != "" {
			cq := windowQuery(win.From, win.To)
			cq.Set("before", b)
			cq.Set("after", a)
			v.CompareURL = withQuery(workloadPath("/v1/workloads", ref)+"/compare", cq)
			v.CompareLabel = fmt.Sprintf("revision %s → %s", revisionLabel(&before.Revision), revisionLabel(&after.Revision))
		}
	}
	v.Zoom = zoomWindow(workloadURL(ref, nil), win.From, win.To)
	u.render(w, r, "workload.html", page{Title: ref.Kind + " " + ref.Namespace + "/" + ref.Name,
		Crumbs: []crumb{{"Workloads", workloadsURL(keepWindow(r.URL.Query()))}}, View: v})
}

// keepWindow is the from and to of q, as given.
func keepWindow(q url.Values) url.Values {
	out := url.Values{}
	for _, k := range []string{"from", "to"} {
		if q.Get(k) != "" {
			out.Set(k, q.Get(k))
		}
	}
	return out
}

// zoomWindow builds the links that zoom and pan a window of absolute times, none longer than
// window.Max; reset is the default window (the last 24 h).
func zoomWindow(base string, from, to time.Time) zoomLinks {
	link := func(a, b time.Time) string {
		if b.Sub(a) > window.Max {
			mid := a.Add(b.Sub(a) / 2)
			a, b = mid.Add(-window.Max/2), mid.Add(window.Max/2)
		}
		return base + "?" + windowQuery(a, b).Encode()
	}
	half := to.Sub(from) / 2
	mid := from.Add(half)
	return zoomLinks{
		In: link(mid.Add(-half/2), mid.Add(half/2)), Out: link(mid.Add(-half*2), mid.Add(half*2)),
		Left: link(from.Add(-half/2), to.Add(-half/2)), Right: link(from.Add(half/2), to.Add(half/2)), Reset: base, ResetLabel: "last 24 h",
	}
}

// buildWorkload lays out a workload's window: the desired-vs-Ready chart, the swimlanes (a
// group per revision) with the disruptions and interruption windows, and the tables.
func buildWorkload(w report.WorkloadWindow) workloadView {
	ref := w.Workload.WorkloadRef
	v := workloadView{Key: ref.String(), Summary: w.Workload, Desired: w.Desired, Ready: w.Ready}
	c := &chart{from: w.From, lo: 0, hi: sec(w.From, w.To), clock: true}
	ms, rows := marks(w.Disruptions, &ref, w.From, w.To)
	v.Disruptions = rows

	// The workload's interruption windows, once each (two disruptions may share one), and the
	// scheduler's notes about the pods that replaced others.
	type key struct {
		kind       string
		start, end time.Time
	}
	seen := map[key]bool{}
	var windows []align.Window
	failures := map[string][]report.SchedulingFailure{}
	for _, d := range w.Disruptions {
		for _, a := range d.Workloads {
			if a.Workload != ref {
				continue
			}
			for _, win := range a.Interruption.Windows {
				if k := (key{win.Kind, win.Start, win.End}); !seen[k] {
					seen[k] = true
					windows = append(windows, win)
				}
			}
			for _, r := range a.Replacements {
				failures[r.UID] = r.FailedScheduling
			}
		}
	}
	slices.SortFunc(windows, func(a, b align.Window) int { return a.Start.Compare(b.Start) })
	for _, win := range windows {
		row := windowRow{Kind: win.Kind, Start: win.Start, End: win.End, Seconds: win.Seconds}
		if win.Ready != nil && win.Desired != nil {
			row.Ready = fmt.Sprintf("%d of %d", *win.Ready, *win.Desired)
		}
		v.Windows = append(v.Windows, row)
	}

	byRev := map[string][]align.Summary{}
	for _, p := range w.Pods {
		byRev[p.Revision] = append(byRev[p.Revision], p.Summary)
	}
	var gs []group
	for _, r := range w.Revisions {
		label := "revision " + revisionLabel(&r.Revision)
		if r.Hash == "" && r.Number == "" {
			label = "pods without a revision"
		}
		g := group{Name: r.Hash, Label: label, Hook: fmt.Sprintf(`data-revision="%s"`, esc(r.Hash)), Pods: byRev[r.Hash]}
		gs = append(gs, g)
		for _, p := range g.Pods {
			v.Pods = append(v.Pods, row(cmp.Or(r.Number, r.Hash), false, p, failures[p.Pod.UID], 0))
		}
		rr := revisionRow{Number: r.Number, Hash: r.Hash, Label: revisionLabel(&r.Revision), FirstCreated: r.FirstCreated, Pods: r.Pods, Requests: r.Requests,
			ErrorRate: "–", P50: latency(r.LatencyMS, "p50"), P95: latency(r.LatencyMS, "p95"), P99: latency(r.LatencyMS, "p99"), GPU: "–"}
		if r.ErrorRate != nil {
			rr.ErrorRate = strconv.FormatFloat(*r.ErrorRate*100, 'f', 2, 64) + " %"
		}
		if r.GPUUtilMean != nil {
			rr.GPU = strconv.FormatFloat(*r.GPUUtilMean, 'f', 0, 64) + " %"
		}
		v.Revisions = append(v.Revisions, rr)
	}
	l := lanes{Chart: c, Groups: gs, Windows: windows, Marks: ms, Bands: true, FailedScheduling: failures,
		Attrs: fmt.Sprintf(` data-origin="%s"`, esc(fmtRFC3339(w.From)))}
	l.Title = fmt.Sprintf("%s from %s to %s: one lane per pod, grouped by revision, %d lanes; the tables below list the same",
		v.Key, fmtTime(w.From), fmtTime(w.To), len(w.Pods))
	v.Chart, v.Lanes = l.draw()
	v.Counts = countsChart(c, w.Desired, w.Ready, windows, v.Key)
	v.Legend = legend(true)
	return v
}

func latency(m map[string]float64, q string) string {
	if v, ok := m[q]; ok {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return "–"
}

// countsChart draws the pods the workload wanted (dashed) and had Ready (solid) as step lines
// on the swimlanes' time axis, over its interruption windows.
func countsChart(c *chart, desired, ready []report.CountPoint, windows []align.Window, key string) template.HTML {
	end := c.at(c.hi)
	const h, y0, y1 = 130.0, 12.0, 112.0
	top := 1
	for _, p := range append(slices.Clone(desired), ready...) {
		top = max(top, p.Count)
	}
	scale := float64(top) * 1.1
	y := func(v int) float64 { return y1 - float64(v)/scale*(y1-y0) }
	clamp := func(x float64) float64 { return min(max(x, plotX0), plotX1) }
	var s svg
	s.f(`<svg id="counts" class="chart counts" viewBox="0 0 %s %s" width="100%%" role="img" aria-labelledby="counts-title">`, n(chartW), n(h))
	s.f(`<title id="counts-title">Pods %s wanted (dashed) and had Ready (solid) over time; the table below lists the changes</title>`, esc(key))
	s.f(`<defs><pattern id="band-counts" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="8" height="8" class="band-bg"/><line x1="0" y1="0" x2="0" y2="8" class="band-line"/></pattern></defs>`)
	for _, w := range windows {
		x0, x1 := clamp(c.x(w.Start)), clamp(c.x(w.End))
		if x1 > x0 {
			s.f(`<rect class="interruption" style="fill:url(#band-counts)" x="%s" y="%s" width="%s" height="%s"/>`, n(x0), n(y0), n(max(x1-x0, 1)), n(y1-y0))
		}
	}
	for _, t := range ticks(0, float64(top), 4) {
		if t != float64(int(t)) {
			continue
		}
		yy := y(int(t))
		s.f(`<line class="tick" x1="%s" x2="%s" y1="%s" y2="%s"/><text x="%s" y="%s" text-anchor="end">%d</text>`, n(plotX0), n(plotX1), n(yy), n(yy), n(plotX0-6), n(yy+4), int(t))
	}
	s.f(`<text x="4" y="%s" class="muted">pods</text>`, n(y0+10))
	s.f(`<line class="count desired" x1="4" x2="28" y1="%s" y2="%s"/><text x="34" y="%s">desired</text>`, n(y0+30), n(y0+30), n(y0+34))
	s.f(`<line class="count ready" x1="4" x2="28" y1="%s" y2="%s"/><text x="34" y="%s">Ready</text>`, n(y0+50), n(y0+50), n(y0+54))
	step := func(class string, pts []report.CountPoint) {
		// A step at the window's end is where observation ends (Ready spans end there), not
		// a change: the lines run to the end at the count before it.
		pts = slices.DeleteFunc(slices.Clone(pts), func(p report.CountPoint) bool { return !p.At.Before(end) && len(pts) > 1 })
		if len(pts) == 0 {
			return
		}
		var d strings.Builder
		fmt.Fprintf(&d, "M%s %s", n(clamp(c.x(pts[0].At))), n(y(pts[0].Count)))
		for _, p := range pts[1:] {
			fmt.Fprintf(&d, "H%sV%s", n(clamp(c.x(p.At))), n(y(p.Count)))
		}
		fmt.Fprintf(&d, "H%s", n(plotX1))
		s.f(`<path class="count %s" data-series="%s" d="%s"/>`, class, class, d.String())
	}
	step("ready", ready)
	step("desired", desired) // dashed, over Ready where they agree
	s.f(`</svg>`)
	return template.HTML(s.String())
}
