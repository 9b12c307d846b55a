package align

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/events"
)

// Timeline is one pod's life as the API serves it: its summary and its events in time order.
type Timeline struct {
	Summary
	// Interruptions are the service interruptions of the pod's experiment arm and run that
	// overlap its life (see Interruptions; DefaultMinGap).
	Interruptions []Window `json:"interruptions"`
	// Gates are the pod's scheduling gates, each with when it was removed (GateWaits).
	Gates  []GateWait `json:"gates"`
	Events []Event    `json:"events"`
}

// GateWait is one scheduling gate of a pod: its name, when it was first seen on the pod and
// when it was removed (the first snapshot without it; nil while it is still there).
type GateWait struct {
	Name      string     `json:"name"`
	FirstSeen time.Time  `json:"first_seen"`
	Removed   *time.Time `json:"removed"`
}

// GateWaits reads a pod's scheduling gates from the pod_status events of its (time-ordered)
// event list: gates can only be removed, so each one's removal is the first snapshot after
// one that held it that does not. Gates in the order first seen, then by name.
func GateWaits(list []Event) []GateWait {
	out := []GateWait{}
	index := map[string]int{}
	var held []string // the previous snapshot's gates
	for _, e := range list {
		if e.Kind != events.KindPodStatus {
			continue
		}
		var p struct {
			Gates []string `json:"scheduling_gates"`
		}
		if json.Unmarshal(e.Data, &p) != nil {
			continue
		}
		for _, g := range held {
			if i := index[g]; !slices.Contains(p.Gates, g) && out[i].Removed == nil {
				at := e.OccurredAt
				out[i].Removed = &at
			}
		}
		fresh := slices.Clone(p.Gates)
		slices.Sort(fresh)
		for _, g := range fresh {
			if _, ok := index[g]; !ok {
				index[g] = len(out)
				out = append(out, GateWait{Name: g, FirstSeen: e.OccurredAt})
			}
		}
		held = p.Gates
	}
	return out
}

// Summary is a pod's identity, milestones, durations and counts. Times are UTC with sub-seconds
// kept, nil when the pod never reached the milestone; durations are seconds, nil when either end
// is missing.
type Summary struct {
	Pod         PodInfo        `json:"pod"`
	Experiment  ExperimentInfo `json:"experiment"`
	Milestones  Milestones     `json:"milestones"`
	EndedReason *string        `json:"ended_reason"`
	PreemptedBy *string        `json:"preempted_by"`
	Durations   Durations      `json:"durations"`
	Counts      Counts         `json:"counts"`
	// ObservedUntil is when observation of the pod ends: its end; else the last time it was known
	// to exist — its last event, an inventory that listed it, or a heartbeat of a live watch of
	// its scope. Milestones not reached by then are listed in Censored (the pod is kept, not
	// dropped).
	ObservedUntil *time.Time `json:"observed_until"`
	Censored      []string   `json:"censored"`
	// Requests and GPU summarise the requests the pod served and its GPU samples; nil without.
	Requests *RequestSummary `json:"requests"`
	GPU      *GPUSummary     `json:"gpu"`
}

// PodInfo identifies the pod and where it ran.
type PodInfo struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	UID       string  `json:"uid"`
	Node      *string `json:"node"`
}

// ExperimentInfo attributes a pod to an experiment arm and run; nil where unknown.
type ExperimentInfo struct {
	Name *string `json:"name"`
	Arm  *string `json:"arm"`
	Run  *string `json:"run"`
}

// NewExperimentInfo converts an ExperimentRef, mapping empty fields to nil.
func NewExperimentInfo(e events.ExperimentRef) ExperimentInfo {
	return ExperimentInfo{Name: strPtr(e.Name), Arm: strPtr(e.Arm), Run: strPtr(e.Run)}
}

// Milestones of a pod's life, in order.
type Milestones struct {
	Created *time.Time `json:"created"`
	// Gated is when the pod's last scheduling gate was removed (nil for a pod never seen gated):
	// until then no scheduler looked at it.
	Gated              *time.Time `json:"gated"`
	FirstUnschedulable *time.Time `json:"first_unschedulable"`
	// ClaimAllocated is when the last of the pod's DRA claims was allocated (nil without claims).
	ClaimAllocated *time.Time `json:"claim_allocated"`
	Scheduled      *time.Time `json:"scheduled"`
	Running        *time.Time `json:"running"`
	Ready          *time.Time `json:"ready"`
	FirstSuccess   *time.Time `json:"first_success"`
	Ended          *time.Time `json:"ended"`
}

// Durations between milestones, in seconds.
type Durations struct {
	Pending *float64 `json:"pending"`
	// Gated and SchedulableWait split Pending: created → gates removed, then → scheduled (the
	// whole of Pending for a pod never gated).
	Gated               *float64 `json:"gated"`
	SchedulableWait     *float64 `json:"schedulable_wait"`
	Start               *float64 `json:"start"`
	ModelLoad           *float64 `json:"model_load"`
	ReadyToFirstSuccess *float64 `json:"ready_to_first_success"`
	Total               *float64 `json:"total"`
}

// Counts of distinct occurrences.
type Counts struct {
	FailedScheduling int `json:"failed_scheduling"`
	Restarts         int `json:"restarts"`
	Requests         int `json:"requests"`
	RequestErrors    int `json:"request_errors"`
	// PreReadyRequests and PreReadyErrors are the requests (and failed ones) among Requests
	// sent while the pod was not Ready.
	PreReadyRequests int `json:"pre_ready_requests"`
	PreReadyErrors   int `json:"pre_ready_errors"`
	// FailedPrepare counts the kubelet's FailedPrepareDynamicResources events: claims it could
	// not prepare after the pod was scheduled.
	FailedPrepare int `json:"failed_prepare"`
}

// Event is one entry of a timeline's event list.
type Event struct {
	ID         string          `json:"id"`
	Kind       events.Kind     `json:"kind"`
	OccurredAt time.Time       `json:"occurred_at"`
	Source     string          `json:"source"`
	Data       json.RawMessage `json:"data"`
}

// Listed reports whether events of kind appear in a timeline's event list. Requests and GPU
// samples are summarised in counts instead: a pod serves thousands of them.
func Listed(kind events.Kind) bool {
	return kind != events.KindRequest && kind != events.KindGPUSample
}

// Build computes a pod's timeline from all events about it, in any order, duplicates allowed.
// Events about other pods are ignored; inventories among envs may end the pod (ApplyInventories)
// and heartbeats extend its observation (ApplyWatches). ok is false when no event is about uid.
func Build(uid string, envs []*events.Envelope, keys events.LabelKeys) (tl Timeline, ok bool) {
	if uid == "" {
		return Timeline{}, false
	}
	var f Facts
	seen := map[string]bool{}
	var list []Event
	var invs []Inventory
	var watches []Watch
	for _, env := range envs {
		if inv, ok := InventoryOf(env); ok {
			invs = append(invs, inv)
			continue
		}
		if w, ok := WatchOf(env); ok {
			watches = append(watches, w)
			continue
		}
		if env.PodUID() != uid || seen[env.ID] {
			continue
		}
		seen[env.ID] = true
		ef, _ := FactsOf(env, keys)
		f.Merge(ef)
		if Listed(env.Kind) {
			list = append(list, Event{ID: env.ID, Kind: env.Kind, OccurredAt: env.OccurredAt, Source: env.Source, Data: env.Data})
		}
	}
	if len(seen) == 0 {
		return Timeline{}, false
	}
	f.ApplyInventories(WholeInventories(invs))
	f.ApplyWatches(watches)
	SortEvents(list)
	tl = Timeline{Summary: Derive(f), Interruptions: []Window{}, Gates: GateWaits(list), Events: list}
	if f.Experiment.Name != "" && f.Experiment.Run != "" {
		from := f.FirstSeen
		if tl.Milestones.Created != nil {
			from = minTime(from, *tl.Milestones.Created)
		}
		tl.Interruptions = Overlapping(ServiceInterruptions(envs, keys, f.Experiment, DefaultMinGap), from, *tl.ObservedUntil)
	}
	return tl, true
}

// SortEvents orders an event list by time, then id, so equal times list the same way everywhere.
func SortEvents(list []Event) {
	slices.SortFunc(list, func(a, b Event) int {
		if c := a.OccurredAt.Compare(b.OccurredAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Derive turns merged facts into milestones, durations and counts.
//
// Precision: Kubernetes keeps condition transitions, container start times and creation
// timestamps to the second, while events and observations carry microseconds. A second-precision
// time t means "somewhere in [t, t+1s)". When the collector saw the change live — its first
// observation falls inside that second — the milestone is placed at the first observation (the
// watch delivers changes within milliseconds). Otherwise, when the milestone before it (µs) falls
// inside the second, it is placed at that earlier milestone — the earliest instant consistent with
// both — so durations never turn negative from truncation; else it stays at t. A milestone also
// never lies after the moment it was first observed. Larger disagreements (clock skew) are
// reported as they are.
func Derive(f Facts) Summary {
	tl := Summary{
		Pod:         PodInfo{Namespace: f.Namespace, Name: f.Name, UID: f.UID},
		Experiment:  NewExperimentInfo(f.Experiment),
		PreemptedBy: strPtr(f.PreemptedBy),
		Counts: Counts{
			FailedScheduling: f.Occurrences(events.ReasonFailedScheduling),
			Restarts:         f.Restarts,
			Requests:         f.Requests,
			RequestErrors:    f.RequestErrors,
			PreReadyRequests: f.PreReadyRequests,
			PreReadyErrors:   f.PreReadyErrors,
			FailedPrepare:    f.Occurrences(events.ReasonFailedPrepareDynamicResources),
		},
	}
	// The scheduler's events about the pod are observations of it too.
	created := createdAt(f.Created, minTime(minTime(f.CreatedObserved, f.ScheduledEvent), f.FirstUnschedulable))
	scheduled := f.ScheduledEvent
	if scheduled.IsZero() {
		scheduled = clampUp(seenLive(f.ScheduledCond, f.ScheduledObserved), maxTime(created, f.FirstUnschedulable))
	}
	// The first snapshot without gates, seen live, is when they went; never before creation
	// nor after the binding.
	var gated time.Time
	if !f.GatedSeen.IsZero() && f.UngatedObserved.After(f.GatedSeen) {
		gated = maxTime(f.UngatedObserved, created)
		if !scheduled.IsZero() && scheduled.Before(gated) {
			gated = scheduled
		}
	}
	// A pod that joins a claim allocated before it existed (a shared claim) waited for nothing:
	// its claims were allocated when it was created.
	claimAllocated := coarseOrObserved(f.ClaimsAllocated, f.ClaimsAllocatedObserved, maxTime(created, gated))
	if !claimAllocated.IsZero() && claimAllocated.Before(created) {
		claimAllocated = created
	}
	running := coarseOrObserved(f.RunningStarted, f.RunningObserved, maxTime(created, scheduled))
	ready := coarseOrObserved(f.ReadyCond, f.ReadyObserved, maxTime(maxTime(created, scheduled), running))

	node := f.ScheduledEventNode
	if node == "" {
		node = f.StatusNode
	}
	tl.Pod.Node = strPtr(node)

	m := &tl.Milestones
	m.Created = timePtr(created)
	m.Gated = timePtr(gated)
	m.FirstUnschedulable = timePtr(f.FirstUnschedulable)
	m.ClaimAllocated = timePtr(claimAllocated)
	m.Scheduled = timePtr(scheduled)
	m.Running = timePtr(running)
	m.Ready = timePtr(ready)
	m.FirstSuccess = timePtr(f.FirstSuccess)
	// A pod that has not ended was there at its last event, at the last inventory that listed it
	// and at the last heartbeat of a live watch of its scope. One that ended unobserved keeps the
	// last of these before the inventory that missed it: its end lies in (observed_until, ended].
	live := f.LiveUntil
	until := f.EndedAt
	switch {
	case !f.EndedAt.IsZero():
		m.Ended = timePtr(f.EndedAt)
		tl.EndedReason = strPtr(EndReasons[f.EndRank])
	case !f.UnobservedEnd.IsZero():
		m.Ended = timePtr(f.UnobservedEnd)
		tl.EndedReason = strPtr(EndDeletedUnobserved)
		if !live.Before(f.UnobservedEnd) {
			live = time.Time{}
		}
		until = maxTime(maxTime(f.LastSeen, f.AliveAt), live)
	default:
		until = maxTime(maxTime(f.LastSeen, f.AliveAt), live)
	}

	tl.Durations = DurationsOf(tl.Milestones)
	tl.Requests = SummarizeRequests(tl.Counts, f.Latency)
	tl.GPU = SummarizeGPU(f.GPUUtil, f.GPUFBSeconds, f.GPUFBMax, IdleUtilThreshold)

	tl.ObservedUntil = timePtr(until)
	tl.Censored = Censored(tl.Milestones, !f.GatedSeen.IsZero() && gated.IsZero())
	return tl
}

// Censored lists the milestones a pod had not reached when its observation ended: "gated" first
// when it was still held by a scheduling gate (gateHeld), then those of Milestones.
func Censored(m Milestones, gateHeld bool) []string {
	out := []string{}
	if gateHeld {
		out = append(out, "gated")
	}
	for _, c := range []struct {
		name string
		at   *time.Time
	}{{"scheduled", m.Scheduled}, {"running", m.Running}, {"ready", m.Ready}, {"first_success", m.FirstSuccess}} {
		if c.at == nil {
			out = append(out, c.name)
		}
	}
	return out
}

// coarseOrObserved combines a second-precision time with the µs observation that bounds it from
// above, placing it no earlier than prev when prev falls inside its second.
func coarseOrObserved(coarse, observed, prev time.Time) time.Time {
	if coarse.IsZero() {
		return observed
	}
	return minTime(clampUp(seenLive(coarse, observed), prev), observed)
}

// seenLive places a second-precision time t at o, its first observation, when o falls inside t's
// second: the collector saw the change live.
func seenLive(t, o time.Time) time.Time {
	if !t.IsZero() && !o.IsZero() && !o.Before(t) && o.Before(t.Add(time.Second)) {
		return o
	}
	return t
}

// justPast is how soon after the end of a pod's creation second a first observation still
// counts as seeing the creation live (docs/timeline.md#precision).
const justPast = 100 * time.Millisecond

// createdAt places the creation timestamp t (second precision) as seenLive does, and, when the
// first observation o falls just past t's second (less than justPast after it), at the second's
// last microsecond: a pod created in the last milliseconds of its second reaches the collector
// after the boundary, and nothing earlier bounds its creation. The error is then no larger than
// the observation's delay, where t would be off by nearly a second.
func createdAt(t, o time.Time) time.Time {
	if !t.IsZero() && !o.IsZero() && !o.Before(t.Add(time.Second)) && o.Before(t.Add(time.Second+justPast)) {
		return t.Add(time.Second - time.Microsecond)
	}
	return seenLive(t, o)
}

// clampUp moves a second-precision time t up to prev when prev lies within t's second.
func clampUp(t, prev time.Time) time.Time {
	if !t.IsZero() && !prev.IsZero() && t.Before(prev) && prev.Before(t.Add(time.Second)) {
		return prev
	}
	return t
}

// DurationsOf computes the durations between milestones.
func DurationsOf(m Milestones) Durations {
	schedulable := m.Created
	if m.Gated != nil && (schedulable == nil || m.Gated.After(*schedulable)) {
		schedulable = m.Gated
	}
	return Durations{
		Pending:             seconds(m.Created, m.Scheduled),
		Gated:               seconds(m.Created, m.Gated),
		SchedulableWait:     seconds(schedulable, m.Scheduled),
		Start:               seconds(m.Scheduled, m.Running),
		ModelLoad:           seconds(m.Running, m.Ready),
		ReadyToFirstSuccess: seconds(m.Ready, m.FirstSuccess),
		Total:               seconds(m.Created, m.FirstSuccess),
	}
}

func seconds(from, to *time.Time) *float64 {
	if from == nil || to == nil {
		return nil
	}
	s := to.Sub(*from).Seconds()
	return &s
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
