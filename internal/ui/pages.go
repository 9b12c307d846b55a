package ui

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
)

// armInfo is an arm as its definition describes it.
type armInfo struct{ Name, Description string }

// definedArms reads the arms of a definition, in order.
func definedArms(def *events.Experiment) []armInfo {
	if def == nil {
		return nil
	}
	var out []armInfo
	for _, a := range def.Arms {
		if a.Name != "" {
			out = append(out, armInfo{Name: a.Name, Description: a.Description})
		}
	}
	return out
}

// armOrder is the baseline, then the definition's arms, then the other arms seen.
func armOrder(e report.ExperimentInfo) []string {
	var out []string
	if e.Definition != nil && e.Definition.Baseline != "" {
		out = append(out, e.Definition.Baseline)
	}
	for _, a := range definedArms(e.Definition) {
		if !slices.Contains(out, a.Name) {
			out = append(out, a.Name)
		}
	}
	return out
}

// experimentRow is one line of the experiments page.
type experimentRow struct {
	Name, Change string
	Arms         []badge
	Baseline     string
	Runs         []string
	Pods         int
	LastEvent    time.Time
	Imported     bool   // known only by an imported record: no runs here to open
	Problem      string // why there is no comparison
}

// badge is an arm's verdict as a badge.
type badge struct{ Arm, Verdict, Explanation, URL string }

func (u *UI) experiments(w http.ResponseWriter, r *http.Request) {
	sc, ok := u.readScope(w, r)
	if !ok {
		return
	}
	list, err := u.db.Experiments(r.Context(), sc)
	if err != nil {
		u.internal(w, r, err)
		return
	}
	last, err := u.db.LastEvents(r.Context())
	if err != nil {
		u.internal(w, r, err)
		return
	}
	var rows []experimentRow
	for _, e := range list {
		row := experimentRow{Name: e.Name, Runs: e.Runs, Pods: e.Pods, LastEvent: last[e.Name]}
		if e.Definition != nil {
			row.Change = e.Definition.Change
		}
		c, err := u.comparisonOf(r.Context(), e, "", "")
		switch {
		case err == nil:
			row.Baseline, row.Imported = c.Baseline, e.Imported != nil
			for _, a := range c.Arms {
				if !a.Baseline {
					b := badge{Arm: a.Arm, Verdict: a.Verdict, Explanation: a.Explanation, URL: armURL(e.Name, a.Arm, nil)}
					if row.Imported {
						b.URL = experimentURL(e.Name) // no runs here to open
					}
					row.Arms = append(row.Arms, b)
				}
			}
		case errors.Is(err, errNoComparison):
			row.Problem = err.Error()
		default:
			u.internal(w, r, err)
			return
		}
		rows = append(rows, row)
	}
	u.render(w, r, "experiments.html", page{Title: "Experiments", View: rows, Hidden: sc.Hidden()})
}

// errNoComparison wraps the reasons an experiment cannot be compared yet.
var errNoComparison = errors.New("no comparison")

// compute is the comparison the store reads, with its expected refusals (no pods, no baseline
// pods) turned into errNoComparison.
func compute(ctx context.Context, db Reader, name, ns, baseline string) (compare.Comparison, error) {
	c, err := db.Comparison(ctx, name, ns, baseline)
	var bad *compare.BadBaselineError
	switch {
	case errors.As(err, &bad):
		return c, fmt.Errorf("%w: %s", errNoComparison, bad.Error())
	case errors.Is(err, report.ErrNotFound):
		return c, fmt.Errorf("%w: no pods yet", errNoComparison)
	}
	return c, err
}

// comparisonOf is compute, or the comparison as recorded for an experiment known here only by
// an imported record.
func (u *UI) comparisonOf(ctx context.Context, e report.ExperimentInfo, ns, baseline string) (compare.Comparison, error) {
	if e.Imported == nil {
		return compute(ctx, u.db, e.Name, ns, baseline)
	}
	rec, err := u.db.ImportedRecord(ctx, e.Name, "")
	return rec.Comparison, err
}

func (u *UI) experiment(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	if !u.mayReadExperiment(w, r, name) {
		return
	}
	ns, baseline := r.URL.Query().Get("namespace"), r.URL.Query().Get("baseline")
	sc, ok := u.readScope(w, r)
	if !ok {
		return
	}
	// The experiments the caller may read: this one among them (read on its own only when the
	// list leaves it out), the others for the record section's form.
	all, err := u.db.Experiments(r.Context(), sc)
	if err != nil {
		u.internal(w, r, err)
		return
	}
	i := slices.IndexFunc(all, func(x report.ExperimentInfo) bool { return x.Name == name })
	var e report.ExperimentInfo
	if i >= 0 {
		e = all[i]
	} else {
		e, err = u.db.Experiment(r.Context(), name)
		if u.failedLookup(w, r, err, fmt.Sprintf("No experiment %q: no definition and no pods.", name)) {
			return
		}
	}
	c, err := u.comparisonOf(r.Context(), e, ns, baseline)
	if err != nil && !errors.Is(err, errNoComparison) {
		u.internal(w, r, err)
		return
	}
	v := buildExperiment(e, c, ns, err)
	if v.Chain, err = u.chainOf(r, e, all); err != nil {
		u.internal(w, r, err)
		return
	}
	u.render(w, r, "experiment.html", page{Title: name, Crumbs: []crumb{{"Experiments", Prefix + "/"}}, View: v})
}

// armView is the runs and pods behind one arm's intervals.
type armView struct {
	Experiment, Arm, Namespace, Metric string
	Description                        string
	Metrics                            []string
	Runs                               []armRun
}

type armRun struct {
	Run, URL string
	Values   []armValue
	Pods     []podLink
}

type armValue struct {
	Metric, Value string
	Selected      bool
}

type podLink struct{ Name, URL, Node, Censored string }

func (u *UI) arm(w http.ResponseWriter, r *http.Request) {
	name, arm := chi.URLParam(r, "name"), chi.URLParam(r, "arm")
	if !u.mayReadExperiment(w, r, name) {
		return
	}
	ns, metric := r.URL.Query().Get("namespace"), r.URL.Query().Get("metric")
	in, err := u.db.ComparisonInput(r.Context(), name, ns)
	if u.failedLookup(w, r, err, fmt.Sprintf("No pods of experiment %q.", name)) {
		return
	}
	byRun, ok := in.Arms[arm]
	if !ok {
		u.fail(w, r, http.StatusNotFound, "Not found", fmt.Sprintf("Experiment %q has no pods in arm %q.", name, arm))
		return
	}
	v := armView{Experiment: name, Arm: arm, Namespace: ns, Metric: metric}
	if e, err := u.db.Experiment(r.Context(), name); err == nil {
		for _, a := range definedArms(e.Definition) {
			if a.Name == arm {
				v.Description = a.Description
			}
		}
	}
	for _, m := range compare.Metrics {
		v.Metrics = append(v.Metrics, m.Name)
	}
	for _, run := range slices.SortedFunc(maps.Keys(byRun), compare.CompareRuns) {
		rd := byRun[run]
		vals, lower := compare.RunMetrics(rd)
		ar := armRun{Run: run, URL: runURL(name, run, url.Values{"arm": {arm}, "namespace": nonEmpty(ns)})}
		for _, m := range compare.Metrics {
			s := "–"
			if x, ok := vals[m.Name]; ok {
				s = strconv.FormatFloat(x, 'g', 4, 64)
				if lower[m.Name] {
					s = "≥ " + s
				}
			}
			ar.Values = append(ar.Values, armValue{Metric: m.Name, Value: s, Selected: m.Name == metric})
		}
		for _, pd := range rd.Pods {
			p := pd.Summary
			ar.Pods = append(ar.Pods, podLink{Name: p.Pod.Name, URL: podURL(p.Pod.UID), Node: deref(p.Pod.Node), Censored: fmt.Sprint(p.Censored)})
		}
		v.Runs = append(v.Runs, ar)
	}
	u.render(w, r, "arm.html", page{Title: arm + " · " + name,
		Crumbs: []crumb{{"Experiments", Prefix + "/"}, {name, experimentURL(name)}}, View: v})
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func (u *UI) run(w http.ResponseWriter, r *http.Request) {
	name, run := chi.URLParam(r, "name"), chi.URLParam(r, "run")
	if !u.mayReadExperiment(w, r, name) {
		return
	}
	q := r.URL.Query()
	ns := q.Get("namespace")
	f := runFilter{Arm: q.Get("arm"), Node: q.Get("node")}
	if q.Has("from") || q.Has("to") {
		lo, err1 := strconv.ParseFloat(q.Get("from"), 64)
		hi, err2 := strconv.ParseFloat(q.Get("to"), 64)
		if err1 != nil || err2 != nil || hi <= lo {
			u.fail(w, r, http.StatusBadRequest, "Bad time window", "from and to must be numbers of seconds from the run's start, with from < to.")
			return
		}
		f.From, f.To = &lo, &hi
	}
	if q.Has("lanes") {
		var lr laneRange
		from, to, ok := strings.Cut(q.Get("lanes"), "-")
		var err1, err2 error
		lr.From, err1 = strconv.Atoi(from)
		lr.To, err2 = strconv.Atoi(to)
		if !ok || err1 != nil || err2 != nil || lr.From < 1 || lr.To < lr.From {
			u.fail(w, r, http.StatusBadRequest, "Bad lanes", "lanes must be first-last, the lanes to draw counted from 1 down the chart, with first ≤ last.")
			return
		}
		f.Lanes = &lr
	}
	sc, ok := u.readScope(w, r) // the pods its pods preempted may be anywhere
	if !ok {
		return
	}
	d, err := u.db.RunDetail(r.Context(), name, ns, run, sc)
	if u.failedLookup(w, r, err, fmt.Sprintf("No pods of experiment %q run %q.", name, run)) {
		return
	}
	var order []string
	if e, err := u.db.Experiment(r.Context(), name); err == nil {
		order = armOrder(e)
	}
	keep := url.Values{}
	for _, k := range []string{"namespace", "arm", "node"} {
		if q.Get(k) != "" {
			keep.Set(k, q.Get(k))
		}
	}
	// The view's query with key set to value: the page of a chunk, or its lanes for the script.
	viewURL := func(key, value string) string {
		cq := url.Values{}
		maps.Copy(cq, keep)
		if f.From != nil {
			cq.Set("from", q.Get("from"))
			cq.Set("to", q.Get("to"))
		}
		cq.Set(key, value)
		return runURL(name, run, cq)
	}
	v := buildRun(d, order, f, func(lr laneRange) string { return viewURL("lanes", lr.String()) }, viewURL("partial", "lanes"))
	if q.Get("partial") == "lanes" {
		// Every chunk's lanes, for ui.js to draw as they near the screen. Should the run have
		// changed since the page was drawn, the live poll finds it and fetches the view again.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(v.chart.inertChunks())
		return
	}
	if v.Version, err = u.db.RunVersion(r.Context(), name, ns, run); err != nil {
		u.internal(w, r, err)
		return
	}
	nsq := nsQuery(ns)
	v.TraceURL = "/v1/experiments/" + url.PathEscape(name) + "/runs/" + url.PathEscape(run) + "/trace.json"
	if e := nsq.Encode(); e != "" {
		v.TraceURL += "?" + e
	}
	v.VersionURL = runURL(name, run, nil) + "/version"
	if e := nsq.Encode(); e != "" {
		v.VersionURL += "?" + e
	}
	v.ExperimentURL = experimentURL(name)
	if f.Lanes != nil { // zooming keeps the lanes drawn
		keep.Set("lanes", f.Lanes.String())
	}
	lo, _ := strconv.ParseFloat(v.FromS, 64)
	hi, _ := strconv.ParseFloat(v.ToS, 64)
	v.Zoom = zoom(runURL(name, run, nil), keep, lo, hi)
	u.render(w, r, "run.html", page{Title: "Run " + run + " · " + name,
		Crumbs: []crumb{{"Experiments", Prefix + "/"}, {name, experimentURL(name)}}, View: v})
}

// runVersion answers the run's version (Reader.RunVersion) as text, for live pages to poll.
func (u *UI) runVersion(w http.ResponseWriter, r *http.Request) {
	if !u.mayReadExperiment(w, r, chi.URLParam(r, "name")) {
		return
	}
	v, err := u.db.RunVersion(r.Context(), chi.URLParam(r, "name"), r.URL.Query().Get("namespace"), chi.URLParam(r, "run"))
	if err != nil {
		u.logger.Error("ui request failed", "path", r.URL.Path, "error", err)
		http.Error(w, "version unavailable", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, v)
}

func (u *UI) pod(w http.ResponseWriter, r *http.Request) {
	uid := strings.ToLower(chi.URLParam(r, "uid")) // UIDs are stored in lower case
	if !events.ValidUID(uid) {
		u.fail(w, r, http.StatusBadRequest, "Malformed pod UID", fmt.Sprintf("%q is not a Kubernetes UID (8-4-4-4-12 hex digits).", uid))
		return
	}
	tl, err := u.db.Timeline(r.Context(), uid)
	if !u.mayReadPod(w, r, uid, tl.Pod.Namespace, err) {
		return
	}
	if u.failedLookup(w, r, err, fmt.Sprintf("No events about pod %s.", uid)) {
		return
	}
	series, err := u.db.PodSeries(r.Context(), uid)
	if err != nil {
		u.internal(w, r, err)
		return
	}
	v := buildPod(tl, series)
	crumbs := []crumb{{"Experiments", Prefix + "/"}}
	if e := tl.Experiment; e.Name != nil {
		crumbs = append(crumbs, crumb{*e.Name, experimentURL(*e.Name)})
		if e.Run != nil {
			crumbs = append(crumbs, crumb{"run " + *e.Run, runURL(*e.Name, *e.Run, url.Values{"namespace": {tl.Pod.Namespace}})})
		}
	}
	u.render(w, r, "pod.html", page{Title: tl.Pod.Name, Crumbs: crumbs, View: v})
}
