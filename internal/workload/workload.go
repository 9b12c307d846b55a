// Package workload is the domain of workloads over time: the pods a workload had and when they
// were Ready, the replicas it wanted, the revisions it ran, and what happened to it — rollouts,
// drains, node failures, preemptions and scale changes — found from observed data alone (no
// schedlens label), with what each cost the workloads it touched. It is pure: facts in,
// reports out; the store gathers the facts.
package workload

import (
	"cmp"
	"slices"
	"time"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
)

// DisruptionTarget reasons: why Kubernetes is about to take a pod away.
const (
	TargetEviction   = "EvictionByEvictionAPI"
	TargetTaint      = "DeletionByTaintManager"
	TargetPreemption = "PreemptionByScheduler"
)

// Pod is what detection knows of one pod.
type Pod struct {
	align.Summary
	Workload events.WorkloadRef
	// Revision is the workload revision the pod belongs to (events.WorkloadOf).
	Revision string
	// Ready are the times the pod was Ready (align.ReadySpans).
	Ready []align.Span
	// Target is the pod's DisruptionTarget condition, when it had one: why it was taken away.
	Target *Target
	// FailedScheduling are the scheduler's notes while it waited, in time order.
	FailedScheduling []report.SchedulingFailure
	// Successes are the send times of the requests it served successfully.
	Successes []time.Time
}

// Target is a DisruptionTarget condition: its reason, and when it was first seen.
type Target struct {
	Reason string
	At     time.Time
}

// State is one observed state of a workload controller.
type State struct {
	At     time.Time
	Status events.WorkloadStatus
}

// Input is everything detection reads about a set of workloads.
type Input struct {
	// Pods of the workloads looked at, alive at some time from a lookback before From to To.
	Pods []Pod
	// States of their controllers (Deployments, ReplicaSets, StatefulSets), any order.
	States []State
	// Nodes are the cordons, uncordons, NotReady and Ready again of the nodes, any order.
	Nodes []report.NodeChange
	// From and To bound the window: disruptions that overlap it are reported. To is also the
	// end of observation: what has not ended by then is open.
	From, To time.Time
	// MinGap is the longest gap between successful requests that is no interruption
	// (align.DefaultMinGap when zero).
	MinGap time.Duration
}

// view is an Input indexed for detection.
type view struct {
	in        Input
	byKey     map[events.WorkloadRef][]*Pod
	byUID     map[string]*Pod
	states    map[events.WorkloadRef][]State // each controller's states in time order
	ready     map[events.WorkloadRef]series
	desired   map[events.WorkloadRef]series
	observed  map[events.WorkloadRef]bool        // the controller's own states were seen
	workloads []events.WorkloadRef               // in a stable order
	successes map[events.WorkloadRef][]time.Time // its pods' successes merged in time order, once asked
}

func newView(in Input) *view {
	if in.MinGap <= 0 {
		in.MinGap = align.DefaultMinGap
	}
	v := &view{in: in, byKey: map[events.WorkloadRef][]*Pod{}, byUID: map[string]*Pod{}, states: map[events.WorkloadRef][]State{},
		ready: map[events.WorkloadRef]series{}, desired: map[events.WorkloadRef]series{}, observed: map[events.WorkloadRef]bool{},
		successes: map[events.WorkloadRef][]time.Time{}}
	for i := range in.Pods {
		p := &in.Pods[i]
		if _, ok := v.byKey[p.Workload]; !ok {
			v.workloads = append(v.workloads, p.Workload)
		}
		v.byKey[p.Workload] = append(v.byKey[p.Workload], p)
		v.byUID[p.Pod.UID] = p
	}
	for _, s := range in.States {
		k := events.WorkloadRef{Namespace: s.Status.Namespace, Kind: s.Status.Kind, Name: s.Status.Name}
		v.states[k] = append(v.states[k], s)
	}
	for k := range v.states {
		slices.SortStableFunc(v.states[k], func(a, b State) int { return a.At.Compare(b.At) })
	}
	slices.SortFunc(v.workloads, func(a, b events.WorkloadRef) int { return cmp.Compare(a.String(), b.String()) })
	for _, k := range v.workloads {
		var spans [][]align.Span
		for _, p := range v.byKey[k] {
			spans = append(spans, p.Ready)
		}
		r := readySeries(spans)
		v.ready[k] = r
		if states := v.states[k]; len(states) > 0 && k.Kind != events.WorkloadReplicaSet || len(states) > 0 && ownerless(states) {
			v.desired[k], v.observed[k] = desiredSeries(states), true
		} else {
			v.desired[k] = series{init: inferredDesired(r, in.To)}
		}
	}
	return v
}

// ownerless reports whether a ReplicaSet's states name no owning Deployment: then it is a
// workload of its own.
func ownerless(states []State) bool {
	for _, s := range states {
		if s.Status.Owner != nil {
			return false
		}
	}
	return true
}

// desiredSeries is a controller's desired replicas over time; before its first observed state it
// wanted what that state says.
func desiredSeries(states []State) series {
	out := series{init: states[0].Status.Desired()}
	for _, s := range states {
		out.steps = append(out.steps, step{s.At, s.Status.Desired()})
	}
	return out
}

// Desired is the workload's desired replicas over time, as (time, count) changes from its first
// observation, with whether the controller's own states said so (false: inferred from the most
// pods it kept Ready).
func Desired(in Input, k events.WorkloadRef) (changes []report.CountPoint, observed bool) {
	v := newView(in)
	d := v.desired[k]
	changes = []report.CountPoint{{At: in.From, Count: d.at(in.From)}}
	for _, st := range d.steps {
		if st.at.After(in.From) && !st.at.After(in.To) && st.v != changes[len(changes)-1].Count {
			changes = append(changes, report.CountPoint{At: st.at, Count: st.v})
		}
	}
	return changes, v.observed[k]
}

// Ready is how many of the workload's pods were Ready over time, as changes in [From, To].
func Ready(in Input, k events.WorkloadRef) []report.CountPoint {
	v := newView(in)
	r := v.ready[k]
	out := []report.CountPoint{{At: in.From, Count: r.at(in.From)}}
	for _, st := range r.steps {
		if st.at.After(in.From) && st.at.Before(in.To) && st.v != out[len(out)-1].Count { // spans of pods still there end at To
			out = append(out, report.CountPoint{At: st.at, Count: st.v})
		}
	}
	return out
}

// alive reports whether the pod existed at t: created (or first seen) by then and not ended.
func (p *Pod) alive(t time.Time) bool {
	if c := p.Milestones.Created; c != nil && c.After(t) {
		return false
	}
	return p.Milestones.Ended == nil || p.Milestones.Ended.After(t)
}

// node is where the pod ran ("" when it never got a node).
func (p *Pod) node() string {
	if p.Pod.Node == nil {
		return ""
	}
	return *p.Pod.Node
}

// endReason is the pod's end reason ("" while it lives).
func (p *Pod) endReason() string {
	if p.EndedReason == nil {
		return ""
	}
	return *p.EndedReason
}

// overlaps reports whether [start, end] (end nil: still going) overlaps [from, to].
func overlaps(start time.Time, end *time.Time, from, to time.Time) bool {
	return !start.After(to) && (end == nil || !end.Before(from))
}

func timePtr(t time.Time) *time.Time { return &t }

func floatPtr(f float64) *float64 { return &f }
