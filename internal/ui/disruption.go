package ui

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
)

// around is how much of the time before and after a disruption its links to a workload's page
// show.
const around = 5 * time.Minute

// mark is a disruption as a chart draws it: a numbered flag at its start, and on a workload's
// page a band to its end.
type mark struct {
	N                     int
	ID, Kind, Node, Label string
	Start                 time.Time
	End                   *time.Time // nil while it lasts
	// Interruption is the seconds the workload of the page had fewer pods Ready than it
	// wanted because of it (nil on the run page, which has no one workload).
	Interruption *float64
}

// disruptionRow is a disruption as a table lists it.
type disruptionRow struct {
	N                     int
	ID, Kind, Node, Label string
	Start                 time.Time
	T                     float64 // seconds from the chart's origin
	End                   *time.Time
	Stalled               bool
	Pods                  int
	Workloads             []affectedRow
	// Interruption is the sum of its workloads' interruption seconds (the one workload's, on
	// a workload's page).
	Interruption float64
}

// affectedRow is what a disruption cost one workload, with a link to the workload's page over
// the time around it.
type affectedRow struct {
	Workload, URL string
	report.Affected
}

// marks numbers the disruptions in the order they began (Detect lists the newest first) and
// lays out their flags and table rows; origin is the chart's time zero and to the end of
// observation (an open disruption's links run to it). With only set, each carries the cost to
// that workload alone.
func marks(ds []report.Disruption, only *events.WorkloadRef, origin, to time.Time) ([]mark, []disruptionRow) {
	ds = slices.Clone(ds)
	slices.SortStableFunc(ds, func(a, b report.Disruption) int { return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.ID, b.ID)) })
	var ms []mark
	var rows []disruptionRow
	for i, d := range ds {
		row := disruptionRow{N: i + 1, ID: d.ID, Kind: d.Kind, Node: d.Node, Label: disruptionLabel(d), Start: d.Start,
			T: sec(origin, d.Start), End: d.End, Stalled: d.Stalled, Pods: len(d.Pods)}
		m := mark{N: i + 1, ID: d.ID, Kind: d.Kind, Node: d.Node, Label: row.Label, Start: d.Start, End: d.End}
		for _, a := range d.Workloads {
			if only != nil && a.Workload != *only {
				continue
			}
			row.Workloads = append(row.Workloads, affectedRow{Workload: a.Workload.String(), URL: aroundURL(a.Workload, d, to), Affected: a})
			row.Interruption += a.Interruption.Seconds
			if only != nil {
				secs := a.Interruption.Seconds
				m.Interruption = &secs
			}
		}
		ms, rows = append(ms, m), append(rows, row)
	}
	return ms, rows
}

// aroundURL is the page of workload w over the time around d: from around before its start to
// around after its end (or after to while it lasts), at most window.Max long.
func aroundURL(w events.WorkloadRef, d report.Disruption, to time.Time) string {
	end := to
	if d.End != nil {
		end = *d.End
	}
	from, until := d.Start.Add(-around).Truncate(time.Second), end.Add(around).Truncate(time.Second).Add(time.Second)
	return workloadURL(w, windowQuery(from, until))
}

// disruptionLabel says what happened, in words.
func disruptionLabel(d report.Disruption) string {
	pods := func(n int, what string) string {
		if n == 1 {
			return "1 pod " + what
		}
		return fmt.Sprintf("%d pods %s", n, what)
	}
	var s string
	switch d.Kind {
	case report.DisruptionRollout:
		s = "rollout to revision " + revisionLabel(d.Revision)
		if d.From != nil && d.From.Hash != "" {
			s += " from " + revisionLabel(d.From)
		}
		if len(d.Workloads) > 0 {
			s += " of " + d.Workloads[0].Workload.String()
		}
		if d.Stalled {
			s += "; stalled (ProgressDeadlineExceeded)"
		}
	case report.DisruptionDrain:
		s = fmt.Sprintf("drain of node %s: %s", d.Node, pods(len(d.Pods), "evicted"))
	case report.DisruptionNodeFailure:
		s = fmt.Sprintf("node %s NotReady: %s", d.Node, pods(len(d.Pods), "on it"))
	case report.DisruptionPreemption:
		s = "preemption: " + pods(len(d.Pods), "preempted")
		if p := d.Preemptor; p != nil {
			s += " for " + cmp.Or(strings.Trim(p.Namespace+"/"+p.Name, "/"), p.UID)
		}
	case report.DisruptionScale:
		s = "scale"
		if len(d.Workloads) > 0 {
			s += " of " + d.Workloads[0].Workload.String()
		}
		if d.FromReplicas != nil && d.Replicas != nil {
			s += fmt.Sprintf(" from %d to %d replicas", *d.FromReplicas, *d.Replicas)
		}
	default:
		s = strings.ReplaceAll(d.Kind, "_", " ")
	}
	return s
}

// revisionLabel names a revision: its number and hash, or the hash alone.
func revisionLabel(r *report.Revision) string {
	switch {
	case r == nil || r.Hash == "" && r.Number == "":
		return "?"
	case r.Number == "":
		return r.Hash
	case r.Hash == "":
		return r.Number
	}
	return r.Number + " (" + r.Hash + ")"
}

// disruptionsView is the disruptions page's data.
type disruptionsView struct {
	Window windowForm
	Filter report.WorkloadFilter
	Kinds  []string
	Rows   []disruptionRow
	APIURL string
}

func (u *UI) disruptions(w http.ResponseWriter, r *http.Request) {
	win, ok := u.window(w, r)
	if !ok {
		return
	}
	sc, ok := u.listScope(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	f := report.WorkloadFilter{Namespace: q.Get("namespace"), Kind: events.WorkloadKindOf(q.Get("kind")), Node: q.Get("node"), Scope: sc}
	ds, err := u.db.Disruptions(r.Context(), f, win.From, win.To)
	if err != nil {
		u.internal(w, r, err)
		return
	}
	v := disruptionsView{Window: win, Filter: f, Kinds: events.WorkloadKinds(), APIURL: withQuery("/v1/disruptions", apiQuery(q))}
	_, v.Rows = marks(ds, nil, win.From, win.To)
	slices.Reverse(v.Rows) // newest first, as the API lists them
	u.render(w, r, "disruptions.html", page{Title: "Disruptions", View: v, Hidden: sc.Hidden()})
}
