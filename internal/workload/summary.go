package workload

import (
	"cmp"
	"slices"
	"time"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
)

// Summaries are the workloads with pods alive in the window, in namespace, kind and name
// order, each with what it wanted and had Ready at the window's end and what the disruptions
// (Detect's, of the same input) cost it.
func Summaries(in Input, ds []report.Disruption) []report.WorkloadSummary {
	v := newView(in)
	out := []report.WorkloadSummary{}
	for _, k := range v.workloads {
		if s, ok := v.summary(k, ds); ok {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b report.WorkloadSummary) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// summary is k's summary; false when none of its pods lived in the window (only in the
// lookback before it). Ready is the count as observation ends: Ready spans of pods still there
// end at To, which is not a loss.
func (v *view) summary(k events.WorkloadRef, ds []report.Disruption) (report.WorkloadSummary, bool) {
	s := report.WorkloadSummary{WorkloadRef: k, Desired: v.desired[k].at(v.in.To), Ready: v.ready[k].at(v.in.To.Add(-time.Nanosecond)), Observed: v.observed[k]}
	revisions := map[string]bool{}
	for _, p := range v.byKey[k] {
		if !p.LivedIn(v.in.From, v.in.To) {
			continue
		}
		s.Pods++
		revisions[p.Revision] = true
	}
	if s.Pods == 0 {
		return s, false
	}
	s.Revisions = len(revisions)
	for _, d := range ds {
		for _, a := range d.Workloads {
			if a.Workload == k {
				s.Disruptions++
				s.InterruptionSeconds += a.Interruption.Seconds
			}
		}
	}
	return s, true
}

// LivedIn reports whether the pod existed at some time in [from, to].
func (p *Pod) LivedIn(from, to time.Time) bool {
	if c := p.Milestones.Created; c != nil && c.After(to) {
		return false
	}
	return p.Milestones.Ended == nil || !p.Milestones.Ended.Before(from)
}

// Window is workload k over the window: its summary, desired and Ready step lines, revisions
// in the order they first ran, the disruptions that touched it (from ds) and its pods that
// lived in the window. The revisions' request and GPU figures are the store's to fill.
func Window(in Input, k events.WorkloadRef, ds []report.Disruption) (report.WorkloadWindow, bool) {
	v := newView(in)
	s, ok := v.summary(k, ds)
	if !ok {
		return report.WorkloadWindow{}, false
	}
	w := report.WorkloadWindow{Workload: s, From: in.From, To: in.To, Revisions: []report.RevisionReport{}, Disruptions: []report.Disruption{}, Pods: []report.WorkloadPod{}}
	w.Desired, _ = Desired(in, k)
	w.Ready = Ready(in, k)
	revs := map[string]*report.RevisionReport{}
	numbers := v.revisionNumbers(k)
	for _, p := range v.byKey[k] {
		if !p.LivedIn(in.From, in.To) {
			continue
		}
		w.Pods = append(w.Pods, report.WorkloadPod{Summary: p.Summary, Revision: p.Revision})
		r := revs[p.Revision]
		if r == nil {
			r = &report.RevisionReport{Revision: report.Revision{Number: numbers[p.Revision], Hash: p.Revision}, FirstCreated: created(p), LatencyMS: map[string]float64{}}
			revs[p.Revision] = r
		}
		r.Pods++
		if c := created(p); c.Before(r.FirstCreated) {
			r.FirstCreated = c
		}
	}
	for _, r := range revs {
		w.Revisions = append(w.Revisions, *r)
	}
	slices.SortFunc(w.Revisions, func(a, b report.RevisionReport) int {
		return cmp.Or(a.FirstCreated.Compare(b.FirstCreated), cmp.Compare(a.Hash, b.Hash))
	})
	for _, d := range ds {
		for _, a := range d.Workloads {
			if a.Workload == k {
				w.Disruptions = append(w.Disruptions, d)
				break
			}
		}
	}
	return w, true
}

// revisionNumbers maps a Deployment's pod-template-hashes to the revision numbers its
// ReplicaSets carry (the latest: a rollback renumbers a revision).
func (v *view) revisionNumbers(d events.WorkloadRef) map[string]string {
	out := map[string]string{}
	if d.Kind != events.WorkloadDeployment {
		return out
	}
	for k, states := range v.states {
		if k.Kind != events.WorkloadReplicaSet || k.Namespace != d.Namespace {
			continue
		}
		for _, s := range states {
			if s.Status.Owner != nil && s.Status.Owner.Name == d.Name && s.Status.TemplateHash != "" && s.Status.Revision != "" {
				out[s.Status.TemplateHash] = s.Status.Revision
			}
		}
	}
	return out
}

// Until is when a disruption's cost to one workload was settled: its recovery, or the
// disruption's end if later, or the end of observation while either lasts. Requests around
// [start − a minute, Until] are what NoSuccessSeconds reads.
func Until(d report.Disruption, a report.Affected, to time.Time) time.Time {
	switch {
	case a.RecoveredAt == nil:
		return to
	case d.End == nil:
		return *a.RecoveredAt
	}
	return maxTime(*a.RecoveredAt, *d.End)
}

// BelowDesired are the workloads of in with fewer pods Ready than they want at in.To, each with
// when that began: the start of its current shortfall, found no earlier than since (a shortfall
// already under way then is given since). Ready spans of pods still there end at To, which is not
// a loss (as in Summaries).
func BelowDesired(in Input, since time.Time) map[events.WorkloadRef]time.Time {
	v := newView(in)
	out := map[events.WorkloadRef]time.Time{}
	for _, k := range v.workloads {
		ws := shortfalls(v.ready[k], v.desired[k], since, in.To, time.Time{})
		if n := len(ws); n > 0 && ws[n-1].open {
			out[k] = ws[n-1].Start
		}
	}
	return out
}
