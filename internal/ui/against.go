package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/labels"
	"github.com/schedlens/schedlens/internal/record"
	"github.com/schedlens/schedlens/internal/report"
)

// chainView is the experiment page's record section: the record's JSON, the experiment it
// chains to (its definition's previous key) and those chained to it, each with the way to hold
// the two against each other, and a form to hold it against any other.
type chainView struct {
	RecordURL   string
	Previous    *chainLink
	Next        []chainLink
	Others      []string
	AgainstForm string
}

type chainLink struct{ Name, URL, AgainstURL string }

// againstView is the against page: record.Compare of two experiments, for reading.
type againstView struct {
	A, B        chainLink
	DigestA     string
	DigestB     string
	Differences []differenceRow
	Baseline    string
	Shifts      []shiftRow
	Arms        []record.ArmHeld
	JSONURL     string
}

type differenceRow struct{ Path, A, B string }

type shiftRow struct {
	Metric, Unit, A, B, Difference, Margin, Shift string
}

// againstURL is the page holding a against b.
func againstURL(a, b string) string { return experimentURL(a) + "/against/" + url.PathEscape(b) }

// chainOf is the record section of experiment e's page: its previous (the definition's
// previous key), the experiments chained to it, and the others of all to hold it against.
func (u *UI) chainOf(r *http.Request, e report.ExperimentInfo, all []report.ExperimentInfo) (*chainView, error) {
	name := e.Name
	v := &chainView{RecordURL: "/v1/experiments/" + url.PathEscape(name) + "/record", AgainstForm: experimentURL(name) + "/against"}
	if e.Definition != nil {
		if b, err := json.Marshal(e.Definition); err == nil {
			if prev := record.PreviousOf(b); prev != "" {
				v.Previous = &chainLink{Name: prev, URL: experimentURL(prev), AgainstURL: againstURL(name, prev)}
			}
		}
	}
	next, err := u.db.Successors(r.Context(), name)
	if err != nil {
		return nil, err
	}
	for _, n := range next {
		v.Next = append(v.Next, chainLink{Name: n, URL: experimentURL(n), AgainstURL: againstURL(n, name)})
	}
	for _, x := range all {
		if x.Name != name {
			v.Others = append(v.Others, x.Name)
		}
	}
	return v, nil
}

// againstForm sends the experiment page's form (?other=) to the against page.
func (u *UI) againstForm(w http.ResponseWriter, r *http.Request) {
	other := r.URL.Query().Get("other")
	if other == "" {
		u.fail(w, r, http.StatusBadRequest, "Bad request", "Name the experiment to hold it against (?other=).")
		return
	}
	http.Redirect(w, r, againstURL(chi.URLParam(r, "name"), other), http.StatusSeeOther)
}

// against is /ui/experiments/{name}/against/{other}.
func (u *UI) against(w http.ResponseWriter, r *http.Request) {
	names := [2]string{chi.URLParam(r, "name"), chi.URLParam(r, "other")}
	var recs [2]record.Record
	for i, name := range names {
		if !u.mayReadExperiment(w, r, name) {
			return
		}
		rec, _, err := u.db.RecordOrImported(r.Context(), name, r.URL.Query().Get("namespace"))
		if u.failedLookup(w, r, err, fmt.Sprintf("No pods and no imported record of experiment %q.", name)) {
			return
		}
		recs[i] = rec
	}
	c := record.Compare(recs[0], recs[1])
	v := againstView{A: chainLink{Name: names[0], URL: experimentURL(names[0])}, B: chainLink{Name: names[1], URL: experimentURL(names[1])},
		DigestA: c.A.Digest, DigestB: c.B.Digest, Baseline: c.Baseline.Arm, Arms: c.Arms,
		JSONURL: "/v1/experiments/" + url.PathEscape(names[0]) + "/against/" + url.PathEscape(names[1])}
	for _, d := range c.Differences {
		v.Differences = append(v.Differences, differenceRow{Path: d.Path, A: compactJSON(d.A), B: compactJSON(d.B)})
	}
	for _, m := range c.Baseline.Metrics {
		s := shiftRow{Metric: m.Metric, Unit: m.Unit, A: intervalText(m.A), B: intervalText(m.B), Difference: "–", Margin: "–", Shift: m.Shift}
		if d := m.Difference; d != nil {
			s.Difference = fmt.Sprintf("%+.4g [%s, %s]", d.Mean, fmtNum(d.Low), fmtNum(d.High))
		}
		if m.Margin != nil {
			s.Margin = "±" + fmtNum(m.Margin)
		}
		v.Shifts = append(v.Shifts, s)
	}
	u.render(w, r, "against.html", page{Title: names[0] + " against " + names[1],
		Crumbs: []crumb{{"Experiments", Prefix + "/"}, {names[0], experimentURL(names[0])}}, View: v})
}

// compactJSON writes a difference's value for a table cell: "–" when absent.
func compactJSON(v any) string {
	if v == nil {
		return "–"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// intervalText is an across-run mean with its interval: "1.23 [1.1, 1.4]".
func intervalText(i compare.Interval) string {
	return fmt.Sprintf("%.4g [%s, %s]", i.Mean, fmtNum(i.Low), fmtNum(i.High))
}

// labelsView is /ui/labels: the node labels placement uses over a window (internal/labels).
type labelsView struct {
	Window         windowForm
	Labels         []labels.Label
	Registries     int
	RegistryErrors []string
	APIURL         string
}

// labelsPage is /ui/labels?from=&to=.
func (u *UI) labelsPage(w http.ResponseWriter, r *http.Request) {
	win, ok := u.window(w, r)
	if !ok {
		return
	}
	sc, ok := u.listScope(w, r)
	if !ok {
		return
	}
	a, err := u.db.Labels(r.Context(), sc, win.From, win.To)
	if err != nil {
		u.internal(w, r, err)
		return
	}
	v := labelsView{Window: win, Labels: a.Labels, Registries: a.Registries, RegistryErrors: a.RegistryErrors,
		APIURL: withQuery("/v1/labels", apiQuery(r.URL.Query()))}
	u.render(w, r, "labels.html", page{Title: "Node labels", View: v, Hidden: sc.Hidden()})
}
