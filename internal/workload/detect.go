package workload

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
)

// scaleDownGrace is how long after a rollout's end its old pods still count as replaced by it.
const scaleDownGrace = 30 * time.Second

// ConditionStalled is the reason a Deployment's Progressing condition gives when its rollout
// made no progress within progressDeadlineSeconds.
const ConditionStalled = "ProgressDeadlineExceeded"

// Detect finds the disruptions that overlap the window, newest first (then by ID, descending), each with what it cost
// every workload it touched:
//   - rollout: a workload's pods of a new revision begin replacing the others — from the
//     controller's revision change (a Deployment's revision number, a StatefulSet's update
//     revision), or, where the controller was not observed, from the first pod of a revision
//     created while pods of another lived; it ends when as many pods of the new revision are
//     Ready as the workload wants, or stalls (ProgressDeadlineExceeded);
//   - drain: a node cordoned, and pods evicted from it through the Eviction API while it was
//     (their DisruptionTarget condition, or their end as evicted) — until uncordoned;
//   - node_failure: a node NotReady while pods ran on it, until Ready again;
//   - preemption: the pods the scheduler preempted for one preemptor;
//   - scale: a controller's desired replicas changed; it ends when as many pods are Ready.
//
// A cordon without evictions, a NotReady node without pods, a first revision and a first
// observed replica count are not disruptions.
func Detect(in Input) []report.Disruption {
	v := newView(in)
	var out []report.Disruption
	out = append(out, v.drains()...)
	out = append(out, v.nodeFailures()...)
	out = append(out, v.preemptions()...)
	out = append(out, v.scales()...)
	out = append(out, v.rollouts()...)
	out = slices.DeleteFunc(out, func(d report.Disruption) bool { return !overlaps(d.Start, d.End, in.From, in.To) })
	for i := range out {
		v.cost(&out[i])
	}
	slices.SortStableFunc(out, func(a, b report.Disruption) int {
		if c := b.Start.Compare(a.Start); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out
}

// disruptionID is stable for the same facts: kind, subject (node or workload) and start.
func disruptionID(kind, subject string, start time.Time) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + subject + "\x00" + start.UTC().Format(time.RFC3339Nano)))
	return kind + "-" + hex.EncodeToString(sum[:6])
}

// episode is a time a node was in a state: from a change until the change back (open: zero end).
type episode struct {
	node       string
	start, end time.Time
}

// episodes pairs each of a node's `on` changes with its next `off` change.
func (v *view) episodes(on, off string) []episode {
	changes := slices.Clone(v.in.Nodes)
	slices.SortStableFunc(changes, func(a, b report.NodeChange) int { return a.At.Compare(b.At) })
	open := map[string]*episode{}
	var out []episode
	for _, c := range changes {
		switch c.Change {
		case on:
			if open[c.Node] == nil {
				open[c.Node] = &episode{node: c.Node, start: c.At}
			}
		case off:
			if e := open[c.Node]; e != nil {
				e.end = c.At
				out = append(out, *e)
				delete(open, c.Node)
			}
		}
	}
	for _, e := range open {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b episode) int {
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.node, b.node)
	})
	return out
}

// within reports whether t is in the episode.
func (e episode) within(t time.Time) bool {
	return !t.Before(e.start) && (e.end.IsZero() || t.Before(e.end))
}

func (e episode) endPtr() *time.Time {
	if e.end.IsZero() {
		return nil
	}
	return timePtr(e.end)
}

// evictedAt is when the pod was evicted through the Eviction API, if it was.
func (p *Pod) evictedAt() (time.Time, bool) {
	if p.Target != nil {
		return p.Target.At, p.Target.Reason == TargetEviction
	}
	if p.endReason() == align.EndEvicted && p.Milestones.Ended != nil {
		return *p.Milestones.Ended, true
	}
	return time.Time{}, false
}

func (v *view) drains() []report.Disruption {
	var out []report.Disruption
	for _, e := range v.episodes(report.NodeCordoned, report.NodeUncordoned) {
		var pods []string
		for _, p := range v.in.Pods {
			if at, ok := p.evictedAt(); ok && p.node() == e.node && e.within(at) {
				pods = append(pods, p.Pod.UID)
			}
		}
		if len(pods) == 0 {
			continue // a cordon alone moves nothing
		}
		out = append(out, report.Disruption{ID: disruptionID(report.DisruptionDrain, e.node, e.start), Kind: report.DisruptionDrain,
			Start: e.start, End: e.endPtr(), Node: e.node, Pods: pods})
	}
	return out
}

func (v *view) nodeFailures() []report.Disruption {
	var out []report.Disruption
	for _, e := range v.episodes(report.NodeNotReady, report.NodeReady) {
		var pods []string
		for _, p := range v.in.Pods {
			if p.node() == e.node && p.alive(e.start) && p.Milestones.Scheduled != nil && !p.Milestones.Scheduled.After(e.start) {
				pods = append(pods, p.Pod.UID)
			}
		}
		if len(pods) == 0 {
			continue // no pod of ours ran there
		}
		out = append(out, report.Disruption{ID: disruptionID(report.DisruptionNodeFailure, e.node, e.start), Kind: report.DisruptionNodeFailure,
			Start: e.start, End: e.endPtr(), Node: e.node, Pods: pods})
	}
	return out
}

func (v *view) preemptions() []report.Disruption {
	type group struct {
		start time.Time
		end   *time.Time
		node  string
		pods  []string
	}
	groups := map[string]*group{}
	var order []string
	for _, p := range v.in.Pods {
		preempted := p.endReason() == align.EndPreempted || p.Target != nil && p.Target.Reason == TargetPreemption
		if !preempted {
			continue
		}
		at := p.Milestones.Ended
		if p.Target != nil {
			at = &p.Target.At
		}
		if at == nil {
			continue
		}
		by := ""
		if p.PreemptedBy != nil {
			by = *p.PreemptedBy
		}
		g := groups[by]
		if g == nil {
			g = &group{start: *at, node: p.node()}
			groups[by] = g
			order = append(order, by)
		}
		if at.Before(g.start) {
			g.start = *at
		}
		g.pods = append(g.pods, p.Pod.UID)
	}
	var out []report.Disruption
	for _, by := range order {
		g := groups[by]
		var end *time.Time
		for _, uid := range g.pods {
			e := v.byUID[uid].Milestones.Ended
			if e == nil {
				end = nil
				break
			}
			if end == nil || e.After(*end) {
				end = timePtr(*e)
			}
		}
		d := report.Disruption{ID: disruptionID(report.DisruptionPreemption, by, g.start), Kind: report.DisruptionPreemption,
			Start: g.start, End: end, Node: g.node, Pods: g.pods}
		if by != "" {
			d.Preemptor = &report.PodName{UID: by}
			if p := v.byUID[by]; p != nil {
				w := p.Workload
				d.Preemptor = &report.PodName{Namespace: p.Pod.Namespace, Name: p.Pod.Name, UID: by, Workload: &w}
			}
		}
		out = append(out, d)
	}
	return out
}

// controllers are the observed controllers that are workloads of their own (a ReplicaSet a
// Deployment owns is part of that Deployment).
func (v *view) controllers() []events.WorkloadRef {
	var out []events.WorkloadRef
	for k, states := range v.states {
		if k.Kind == events.WorkloadReplicaSet && !ownerless(states) {
			continue
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b events.WorkloadRef) int { return cmp.Compare(a.String(), b.String()) })
	return out
}

func (v *view) scales() []report.Disruption {
	var out []report.Disruption
	for _, k := range v.controllers() {
		prev := -1
		for _, s := range v.states[k] {
			if s.Status.Deleted {
				break // a deletion takes the workload away; it does not scale it
			}
			n := s.Status.Desired()
			if prev >= 0 && n != prev {
				from, to := prev, n
				d := report.Disruption{ID: disruptionID(report.DisruptionScale, k.String(), s.At), Kind: report.DisruptionScale,
					Start: s.At, Replicas: &to, FromReplicas: &from, Workloads: []report.Affected{{Workload: k}}}
				d.End = v.reached(k, s.At, func(ready int) bool { return to >= from && ready >= to || to < from && ready <= to })
				out = append(out, d)
			}
			prev = n
		}
	}
	return out
}

// reached is the first time from start on at which done(ready count) holds, nil when it never
// does by the end of observation.
func (v *view) reached(k events.WorkloadRef, start time.Time, done func(ready int) bool) *time.Time {
	r := v.ready[k]
	if done(r.at(start)) {
		return timePtr(start)
	}
	for _, st := range r.steps {
		if st.at.After(start) && !st.at.After(v.in.To) && done(st.v) {
			return timePtr(st.at)
		}
	}
	return nil
}

// revisionChange is a controller's move to a new revision.
type revisionChange struct {
	at       time.Time
	from, to report.Revision
}

// stateRollouts are the revision changes the controller's own states show.
func (v *view) stateRollouts(k events.WorkloadRef) []revisionChange {
	var out []revisionChange
	var cur report.Revision
	for _, s := range v.states[k] {
		if s.Status.Deleted {
			break
		}
		var rev report.Revision
		switch k.Kind {
		case events.WorkloadDeployment:
			if s.Status.Revision == "" {
				continue
			}
			rev = report.Revision{Number: s.Status.Revision, Hash: v.hashOf(k, s.Status.Revision)}
		case events.WorkloadStatefulSet:
			if s.Status.Revision == "" {
				continue
			}
			rev = report.Revision{Hash: s.Status.Revision}
		default:
			continue
		}
		switch {
		case cur == (report.Revision{}):
		case rev.Number != cur.Number || rev.Hash != cur.Hash && rev.Number == "":
			out = append(out, revisionChange{at: s.At, from: cur, to: rev})
		}
		cur = rev
	}
	return out
}

// hashOf is the pod-template-hash of a Deployment's revision number, from its ReplicaSets'
// states ("" when none was seen with that number).
func (v *view) hashOf(d events.WorkloadRef, number string) string {
	hash := ""
	for k, states := range v.states {
		if k.Kind != events.WorkloadReplicaSet || k.Namespace != d.Namespace {
			continue
		}
		for _, s := range states {
			if s.Status.Owner != nil && s.Status.Owner.Kind == d.Kind && s.Status.Owner.Name == d.Name && s.Status.Revision == number && s.Status.TemplateHash != "" {
				hash = s.Status.TemplateHash
			}
		}
	}
	return hash
}

// podRollouts are the revision changes the pods show, for a workload whose controller was not
// observed: a pod created with a revision no living pod has, while pods of another live.
func (v *view) podRollouts(k events.WorkloadRef) []revisionChange {
	pods := slices.Clone(v.byKey[k])
	slices.SortStableFunc(pods, func(a, b *Pod) int { return created(a).Compare(created(b)) })
	var out []revisionChange
	for _, p := range pods {
		if p.Revision == "" || p.Milestones.Created == nil {
			continue
		}
		at := *p.Milestones.Created
		same, other := false, ""
		for _, q := range pods {
			if q == p || !q.alive(at) || q.Revision == "" || !created(q).Before(at) {
				continue
			}
			if q.Revision == p.Revision {
				same = true
			} else {
				other = q.Revision
			}
		}
		if !same && other != "" {
			out = append(out, revisionChange{at: at, from: report.Revision{Hash: other}, to: report.Revision{Hash: p.Revision}})
		}
	}
	return out
}

func created(p *Pod) time.Time {
	if p.Milestones.Created != nil {
		return *p.Milestones.Created
	}
	return time.Time{}
}

func (v *view) rollouts() []report.Disruption {
	var out []report.Disruption
	for _, k := range v.workloads {
		changes := v.stateRollouts(k)
		if !v.observed[k] {
			changes = v.podRollouts(k)
		}
		for i, c := range changes {
			if c.from.Hash == "" { // the old ReplicaSet was not seen: its living pods name it
				c.from.Hash = v.livingRevision(k, c.at, c.to.Hash)
			}
			if c.to.Hash == "" { // the new ReplicaSet was not seen: its pods name the revision
				c.to.Hash = v.firstRevisionAfter(k, c.at, c.from.Hash)
			}
			to, from := c.to, c.from
			d := report.Disruption{ID: disruptionID(report.DisruptionRollout, k.String(), c.at), Kind: report.DisruptionRollout,
				Start: c.at, Revision: &to, From: &from, Workloads: []report.Affected{{Workload: k}}}
			next := v.in.To
			if i+1 < len(changes) {
				next = changes[i+1].at // a newer rollout takes over
			}
			d.End = v.rolledOut(k, c.to.Hash, c.at, next)
			if d.End == nil {
				if at, ok := v.stalled(k, c.at); ok {
					d.End, d.Stalled = timePtr(at), true
				} else if i+1 < len(changes) {
					d.End = timePtr(next)
				}
			}
			for _, p := range v.byKey[k] {
				ended := p.Milestones.Ended
				// The old pods go once the new ones are Ready: the controller scales them
				// down moments after the end.
				replaced := p.Revision != c.to.Hash && created(p).Before(c.at) && ended != nil && !ended.Before(c.at) &&
					!ended.After(next) && (d.End == nil || !ended.After(d.End.Add(scaleDownGrace)))
				added := p.Revision == c.to.Hash && !created(p).Before(c.at) && (d.End == nil || !created(p).After(*d.End))
				if replaced || added {
					d.Pods = append(d.Pods, p.Pod.UID)
				}
			}
			out = append(out, d)
		}
	}
	return out
}

// livingRevision is the revision other than not that most of k's pods living just before t had.
func (v *view) livingRevision(k events.WorkloadRef, t time.Time, not string) string {
	count := map[string]int{}
	best := ""
	for _, p := range v.byKey[k] {
		ended := p.Milestones.Ended
		if p.Revision == "" || p.Revision == not || !created(p).Before(t) || ended != nil && ended.Before(t) {
			continue
		}
		count[p.Revision]++
		if n := count[p.Revision]; n > count[best] || n == count[best] && p.Revision < best {
			best = p.Revision
		}
	}
	return best
}

// firstRevisionAfter is the revision of the first pod of k created at or after t with another
// revision than old.
func (v *view) firstRevisionAfter(k events.WorkloadRef, t time.Time, old string) string {
	best, hash := time.Time{}, ""
	for _, p := range v.byKey[k] {
		c := created(p)
		if p.Revision != "" && p.Revision != old && !c.Before(t) && (hash == "" || c.Before(best)) {
			best, hash = c, p.Revision
		}
	}
	return hash
}

// rolledOut is when, from start until next, as many pods of revision hash were Ready as k
// wanted; nil when that did not happen.
func (v *view) rolledOut(k events.WorkloadRef, hash string, start, next time.Time) *time.Time {
	if hash == "" {
		return nil
	}
	var spans [][]align.Span
	for _, p := range v.byKey[k] {
		if p.Revision == hash {
			spans = append(spans, p.Ready)
		}
	}
	r, d := readySeries(spans), v.desired[k]
	times := []time.Time{start}
	for _, st := range r.steps {
		if st.at.After(start) && !st.at.After(next) {
			times = append(times, st.at)
		}
	}
	for _, st := range d.steps {
		if st.at.After(start) && !st.at.After(next) {
			times = append(times, st.at)
		}
	}
	slices.SortFunc(times, time.Time.Compare)
	for _, t := range times {
		if want := d.at(t); want > 0 && r.at(t) >= want {
			return timePtr(t)
		}
	}
	return nil
}

// stalled is when k's Deployment first reported ProgressDeadlineExceeded after start.
func (v *view) stalled(k events.WorkloadRef, start time.Time) (time.Time, bool) {
	for _, s := range v.states[k] {
		if s.At.Before(start) {
			continue
		}
		for _, c := range s.Status.Conditions {
			if c.Type == "Progressing" && c.Status == "False" && c.Reason == ConditionStalled {
				return s.At, true
			}
		}
	}
	return time.Time{}, false
}

// cost fills in what the disruption cost each workload it touched: the workloads of its pods
// (a rollout's and a scale's own workload besides).
func (v *view) cost(d *report.Disruption) {
	touched := map[events.WorkloadRef][]string{}
	var order []events.WorkloadRef
	for _, a := range d.Workloads {
		touched[a.Workload] = nil
		order = append(order, a.Workload)
	}
	for _, uid := range d.Pods {
		p := v.byUID[uid]
		if p == nil {
			continue
		}
		if _, ok := touched[p.Workload]; !ok {
			order = append(order, p.Workload)
		}
		touched[p.Workload] = append(touched[p.Workload], uid)
	}
	d.Workloads = nil
	for _, k := range order {
		d.Workloads = append(d.Workloads, v.affected(d, k, touched[k]))
	}
	if d.Pods == nil {
		d.Pods = []string{}
	}
}

// affected is what d cost workload k: its shortfall of Ready pods from d's start (a shortfall
// already under way is counted from there) through every shortfall that began before d ended,
// the gaps between its successful requests over the same time, and the pods created meanwhile.
func (v *view) affected(d *report.Disruption, k events.WorkloadRef, pods []string) report.Affected {
	a := report.Affected{Workload: k, Desired: v.desired[k].at(d.Start), Pods: pods, Replacements: []report.Replacement{}}
	if a.Pods == nil {
		a.Pods = []string{}
	}
	horizon := v.in.To
	var stop time.Time // a shortfall that begins after the disruption is someone else's
	if d.End != nil {
		stop = *d.End
	}
	windows := shortfalls(v.ready[k], v.desired[k], d.Start, horizon, stop)
	a.Interruption.Windows = []align.Window{}
	a.Interruption.FewestReady = a.Desired
	recovered := timePtr(d.Start)
	for _, w := range windows {
		a.Interruption.Seconds += w.Seconds
		a.Interruption.FewestReady = min(a.Interruption.FewestReady, *w.Ready)
		a.Interruption.Windows = append(a.Interruption.Windows, w.Window)
		if w.open {
			recovered = nil
		} else {
			recovered = timePtr(w.End)
		}
	}
	a.RecoveredAt = recovered
	if recovered != nil {
		a.RecoverySeconds = floatPtr(recovered.Sub(d.Start).Seconds())
	}
	until := Until(*d, a, horizon)
	a.Interruption.NoSuccessSeconds = v.noSuccess(k, d.Start, until)
	acted := map[string]bool{}
	for _, uid := range d.Pods {
		acted[uid] = true
	}
	for _, p := range v.byKey[k] {
		c := created(p)
		if acted[p.Pod.UID] && d.Kind != report.DisruptionRollout && d.Kind != report.DisruptionScale || c.Before(d.Start) || c.After(until) {
			continue
		}
		a.Replacements = append(a.Replacements, replacement(p))
	}
	slices.SortFunc(a.Replacements, func(x, y report.Replacement) int {
		if c := x.Created.Compare(y.Created); c != 0 {
			return c
		}
		return cmp.Compare(x.UID, y.UID)
	})
	return a
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// noSuccess is the time in [from, to] inside gaps longer than MinGap between the workload's
// successful requests; nil when none of its requests succeeded from a minute before from to the
// end of observation (nothing to tell).
func (v *view) noSuccess(k events.WorkloadRef, from, to time.Time) *float64 {
	ok := v.successesOf(k)
	lead := from.Add(-time.Minute)
	i, _ := slices.BinarySearchFunc(ok, lead, time.Time.Compare)
	ok = ok[i:]
	if len(ok) == 0 {
		return nil
	}
	total := 0.0
	for j := 1; j < len(ok) && ok[j-1].Before(to); j++ {
		if ok[j].Sub(ok[j-1]) <= v.in.MinGap {
			continue
		}
		s, e := maxTime(ok[j-1], from), ok[j]
		if e.After(to) {
			e = to
		}
		if e.After(s) {
			total += e.Sub(s).Seconds()
		}
	}
	return &total
}

// successesOf is every success of the workload's pods in time order, merged once per view (a
// workload with many disruptions asks for it for each).
func (v *view) successesOf(k events.WorkloadRef) []time.Time {
	if ok, done := v.successes[k]; done {
		return ok
	}
	var ok []time.Time
	for _, p := range v.byKey[k] {
		ok = append(ok, p.Successes...)
	}
	slices.SortFunc(ok, time.Time.Compare)
	v.successes[k] = ok
	return ok
}

func replacement(p *Pod) report.Replacement {
	r := report.Replacement{UID: p.Pod.UID, Name: p.Pod.Name, Node: p.Pod.Node, Created: created(p),
		PendingSeconds: p.Durations.Pending, ModelLoadSeconds: p.Durations.ModelLoad, FirstSuccessSeconds: p.Durations.ReadyToFirstSuccess,
		FailedScheduling: p.FailedScheduling, Censored: p.Censored}
	if r.FailedScheduling == nil {
		r.FailedScheduling = []report.SchedulingFailure{}
	}
	if r.Censored == nil {
		r.Censored = []string{}
	}
	return r
}
