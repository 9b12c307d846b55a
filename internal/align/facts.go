// Package align turns the events about a pod into its timeline: milestones, durations, counts and
// the ordered event list, by the milestone table of docs/contracts.md. It is pure: events in,
// timeline out, no I/O and no clock.
//
// The work is split in two so that Postgres can do the same incrementally:
//   - FactsOf reads one event and says what it contributes to its pod (Facts). Facts merge
//     commutatively, associatively and idempotently per distinct event (earliest time, largest
//     count, sum of per-event increments), so any order and any batching give the same result.
//   - Derive turns merged Facts into a Timeline (precision rules, fallbacks, durations).
//
// Build is the reference. The store keeps Facts in the pods table (merged with LEAST/GREATEST/+
// in SQL, mergePods) and derives the timeline in the pod_timeline view (with clamp_up and
// seen_live mirroring clampUp and seenLive, and the end causes read from EndReasons, which the
// store writes into the database); its tests feed the same events to both and compare every field.
package align

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/events"
)

// End causes, in rising precedence: when several are seen the strongest names the end
// (a preempted pod is also deleted, an evicted one also fails).
const (
	EndDeletedUnobserved = "deleted_unobserved"
	EndDeleted           = "deleted"
	EndSucceeded         = "succeeded"
	EndFailed            = "failed"
	EndEvicted           = "evicted"
	EndPreempted         = "preempted"
)

// EndReasons lists the end causes by rank (index = rank); rank 0 means no end.
var EndReasons = []string{"", EndDeletedUnobserved, EndDeleted, EndSucceeded, EndFailed, EndEvicted, EndPreempted}

func endRank(reason string) int {
	for i, r := range EndReasons {
		if r == reason {
			return i
		}
	}
	return 0
}

// Facts is what a set of events says about one pod. Zero values mean "not seen".
type Facts struct {
	UID, Namespace, Name, Cluster string
	Experiment                    events.ExperimentRef
	// Workload is the workload that controls the pod and Revision the revision of it the pod
	// belongs to (events.WorkloadOf): from any snapshot, since neither changes.
	Workload events.WorkloadRef
	Revision string

	FirstSeen, LastSeen time.Time

	// ScopeKey is the collector scope the pod was seen in (events.Scope.Key); AliveAt the last
	// time it was known to exist: a snapshot's observation, or an inventory that listed it.
	// UnobservedEnd is set by ApplyInventories, never merged.
	ScopeKey      string
	AliveAt       time.Time
	UnobservedEnd time.Time
	// LiveUntil is the latest heartbeat of a watch of the pod's scope that started no later
	// than AliveAt: the pod, not seen to end, was still there then. Set by ApplyWatches, never
	// merged.
	LiveUntil time.Time

	Created            time.Time // creation_timestamp, to the second
	CreatedObserved    time.Time // earliest observation of a snapshot of the pod, µs
	FirstUnschedulable time.Time // earliest FailedScheduling
	ScheduledEvent     time.Time // the scheduler's Scheduled event, µs
	ScheduledEventNode string    // node named by that event's note
	ScheduledCond      time.Time // PodScheduled=True transition, to the second
	ScheduledObserved  time.Time // earliest observation of PodScheduled=True, µs
	StatusNode         string    // spec.nodeName from a snapshot
	RunningStarted     time.Time // earliest container started_at while Running, to the second
	RunningObserved    time.Time // earliest observation of phase Running, µs
	ReadyCond          time.Time // earliest Ready=True transition, to the second
	ReadyObserved      time.Time // earliest observation of Ready=True, µs
	FirstSuccess       time.Time // earliest ok request served by the pod

	// GatedSeen is the latest observation of the pod still held by a scheduling gate and
	// UngatedObserved the earliest observation of it without one (gates can only be removed, so
	// every gated snapshot comes before every ungated one).
	GatedSeen       time.Time
	UngatedObserved time.Time
	// ClaimsAllocated is when every DRA claim of the pod was allocated, by the claims'
	// allocationTimestamp (to the second), and ClaimsAllocatedObserved by the collector's first
	// observation of each allocation (µs).
	ClaimsAllocated         time.Time
	ClaimsAllocatedObserved time.Time

	EndedAt     time.Time
	EndRank     int    // index into EndReasons; the highest seen wins
	PreemptedBy string // preemptor UID from the Preempted note

	Restarts      int // largest sum of container restart counts in one snapshot
	Requests      int // requests served (one per distinct request event)
	RequestErrors int
	// PreReadyRequests and PreReadyErrors count the requests (and failed ones) sent while the
	// pod was not Ready: they shape time to first success, not the served error rate.
	PreReadyRequests int
	PreReadyErrors   int
	// Latency is the histogram of successful requests' latencies (see LatencyBucket).
	Latency map[int32]int64
	// GPUUtil holds GPU seconds at each whole utilisation percent; GPUFBSeconds the framebuffer
	// used integrated over time (MiB·s) and GPUFBMax its peak (see SummarizeGPU).
	GPUUtil      map[int32]float64
	GPUFBSeconds float64
	GPUFBMax     float64

	// Series holds event series seen in this set, keyed by series; see Series.
	Series map[SeriesKey]int
}

// SeriesKey names one Kubernetes event series about a pod. Each increase of its count is one
// more occurrence, so occurrences = the largest count seen, whatever arrived in between.
type SeriesKey struct {
	Reason string
	Key    string // the Event's UID, or the envelope id when the event carries none
}

var (
	// kube-scheduler and Volcano: "Successfully assigned ns/name to node"; KAI-Scheduler:
	// "Successfully assigned pod ns/name to node N at node-pool P".
	scheduledNote = regexp.MustCompile(`^Successfully assigned (?:pod )?\S+ to (?:node )?(\S+)(?: at node-pool \S+)?$`)
	preemptedNote = regexp.MustCompile(`^Preempted by pod ([0-9a-fA-F-]{36}) on node (\S+)`)
)

// FactsOf returns what one envelope contributes to its pod's timeline, and false when it is not
// about a pod. Only the envelope's own fields are read: no other event is needed.
func FactsOf(env *events.Envelope, keys events.LabelKeys) (Facts, bool) {
	if env.Pod == nil || env.Pod.UID == "" {
		return Facts{}, false
	}
	f := Facts{
		UID:        env.Pod.UID,
		Namespace:  env.Pod.Namespace,
		Name:       env.Pod.Name,
		Cluster:    env.Cluster,
		Experiment: env.ExperimentOf(keys),
		FirstSeen:  env.OccurredAt,
		LastSeen:   env.OccurredAt,
	}
	switch p := env.Payload.(type) {
	case *events.K8sEvent:
		f.addK8sEvent(env, p)
	case *events.PodStatus:
		f.addPodStatus(env, p)
	case *events.Request:
		f.Requests = 1
		served := p.Served()
		if !served {
			f.PreReadyRequests = 1
		}
		if p.OK {
			f.FirstSuccess = env.OccurredAt
			f.Latency = map[int32]int64{LatencyBucket(p.LatencyMS): 1}
		} else {
			f.RequestErrors = 1
			if !served {
				f.PreReadyErrors = 1
			}
		}
	case *events.GPUSample:
		f.addGPUSample(p)
	}
	return f, true
}

func (f *Facts) addK8sEvent(env *events.Envelope, e *events.K8sEvent) {
	at := env.OccurredAt
	key := e.EventUID
	if key == "" {
		key = env.ID
	}
	switch e.Reason {
	case events.ReasonFailedScheduling, events.ReasonUnschedulable:
		// KAI-Scheduler says Unschedulable where kube-scheduler and Volcano say
		// FailedScheduling: the same fact, counted under one name.
		f.FirstUnschedulable = at
		f.Series = map[SeriesKey]int{{Reason: events.ReasonFailedScheduling, Key: key}: max(e.Count, 1)}
	case events.ReasonFailedPrepareDynamicResources:
		f.Series = map[SeriesKey]int{{Reason: e.Reason, Key: key}: max(e.Count, 1)}
	case events.ReasonScheduled:
		f.ScheduledEvent = at
		if m := scheduledNote.FindStringSubmatch(strings.TrimSpace(e.Note)); m != nil {
			f.ScheduledEventNode = m[1]
		} else {
			f.ScheduledEventNode = env.Node
		}
	case events.ReasonPreempted:
		f.EndedAt, f.EndRank = at, endRank(EndPreempted)
		if m := preemptedNote.FindStringSubmatch(e.Note); m != nil {
			f.PreemptedBy = strings.ToLower(m[1])
		}
	case events.ReasonEvicted:
		f.EndedAt, f.EndRank = at, endRank(EndEvicted)
	}
}

func (f *Facts) addPodStatus(env *events.Envelope, p *events.PodStatus) {
	at := env.OccurredAt
	f.AliveAt = env.ObservedAt
	if env.Pod != nil {
		f.Workload, f.Revision = events.WorkloadOf(env.Pod.Namespace, env.Pod.Name, p)
	}
	if p.Scope != nil {
		f.ScopeKey = p.Scope.Key()
	}
	if p.CreationTimestamp != nil {
		f.Created = us(*p.CreationTimestamp)
		f.CreatedObserved = at
	}
	f.StatusNode = p.NodeName
	if len(p.SchedulingGates) > 0 {
		f.GatedSeen = at
	} else {
		f.UngatedObserved = at
	}
	f.ClaimsAllocated, f.ClaimsAllocatedObserved = claimsAllocated(p.Claims, at)
	if c := p.Condition("PodScheduled"); c != nil && c.Status == "True" && c.LastTransitionTime != nil {
		f.ScheduledCond = us(*c.LastTransitionTime)
		f.ScheduledObserved = at
	}
	if p.Phase == events.PhaseRunning {
		f.RunningObserved = at
		for _, c := range p.Containers {
			if c.StartedAt != nil {
				f.RunningStarted = minTime(f.RunningStarted, us(*c.StartedAt))
			}
		}
	}
	if c := p.Condition("Ready"); c != nil && c.Status == "True" {
		f.ReadyObserved = at
		if c.LastTransitionTime != nil {
			f.ReadyCond = us(*c.LastTransitionTime)
		}
	}
	for _, c := range p.Containers {
		f.Restarts += c.RestartCount
	}
	// DisruptionTarget says why a pod is about to go; it names the end but does not end it, and
	// it counts only in a snapshot of the pod's end (the condition is cleared when the
	// disruption does not happen).
	ending := p.Deleted || p.Phase == events.PhaseFailed || p.Phase == events.PhaseSucceeded
	if c := p.Condition("DisruptionTarget"); ending && c != nil && c.Status == "True" {
		switch c.Reason {
		case "PreemptionByScheduler":
			f.EndRank = endRank(EndPreempted)
		case "EvictionByEvictionAPI", "DeletionByTaintManager", "DeletionByDeviceTaintManager", "TerminationByKubelet":
			f.EndRank = endRank(EndEvicted)
		}
	}
	switch {
	case p.Phase == events.PhaseFailed:
		f.EndedAt, f.EndRank = at, max(f.EndRank, endRank(EndFailed))
	case p.Phase == events.PhaseSucceeded:
		f.EndedAt, f.EndRank = at, max(f.EndRank, endRank(EndSucceeded))
	}
	if p.Deleted {
		f.EndedAt, f.EndRank = at, max(f.EndRank, endRank(EndDeleted))
	}
}

// claimsAllocated is when the last of a snapshot's claims was allocated, by the claims' own
// timestamps and by the collector's observations (the snapshot's, for a claim whose
// observation it does not carry); zero while any claim is not.
func claimsAllocated(claims []events.PodClaim, at time.Time) (cond, observed time.Time) {
	if len(claims) == 0 {
		return time.Time{}, time.Time{}
	}
	stamped := true // every claim carries allocationTimestamp (a feature-gated field)
	for _, c := range claims {
		if len(c.Devices) == 0 && c.AllocatedAt == nil && c.AllocationObserved == nil {
			return time.Time{}, time.Time{}
		}
		if c.AllocatedAt == nil {
			stamped = false
		} else {
			cond = maxTime(cond, us(*c.AllocatedAt))
		}
		o := at
		if c.AllocationObserved != nil {
			o = us(*c.AllocationObserved)
		}
		observed = maxTime(observed, o)
	}
	if !stamped {
		cond = time.Time{}
	}
	return cond, observed
}

// Merge folds o into f. It is commutative and associative, so facts can be merged in any order
// and grouping: Postgres applies the same rules column by column.
func (f *Facts) Merge(o Facts) {
	if f.UID == "" {
		f.UID = o.UID
	}
	f.Namespace = minString(f.Namespace, o.Namespace)
	f.Name = minString(f.Name, o.Name)
	f.Cluster = minString(f.Cluster, o.Cluster)
	f.Experiment.Name = minString(f.Experiment.Name, o.Experiment.Name)
	f.Experiment.Arm = minString(f.Experiment.Arm, o.Experiment.Arm)
	f.Experiment.Run = minString(f.Experiment.Run, o.Experiment.Run)
	if f.Workload == (events.WorkloadRef{}) || o.Workload != (events.WorkloadRef{}) && o.Workload.String() < f.Workload.String() {
		f.Workload = o.Workload
	}
	f.Revision = minString(f.Revision, o.Revision)
	f.FirstSeen = minTime(f.FirstSeen, o.FirstSeen)
	f.LastSeen = maxTime(f.LastSeen, o.LastSeen)
	f.ScopeKey = minString(f.ScopeKey, o.ScopeKey)
	f.AliveAt = maxTime(f.AliveAt, o.AliveAt)
	f.Created = minTime(f.Created, o.Created)
	f.CreatedObserved = minTime(f.CreatedObserved, o.CreatedObserved)
	f.FirstUnschedulable = minTime(f.FirstUnschedulable, o.FirstUnschedulable)
	if earlierNode(o.ScheduledEvent, o.ScheduledEventNode, f.ScheduledEvent, f.ScheduledEventNode) {
		f.ScheduledEvent, f.ScheduledEventNode = o.ScheduledEvent, o.ScheduledEventNode
	}
	f.ScheduledCond = minTime(f.ScheduledCond, o.ScheduledCond)
	f.ScheduledObserved = minTime(f.ScheduledObserved, o.ScheduledObserved)
	f.StatusNode = minString(f.StatusNode, o.StatusNode)
	f.RunningStarted = minTime(f.RunningStarted, o.RunningStarted)
	f.RunningObserved = minTime(f.RunningObserved, o.RunningObserved)
	f.ReadyCond = minTime(f.ReadyCond, o.ReadyCond)
	f.ReadyObserved = minTime(f.ReadyObserved, o.ReadyObserved)
	f.FirstSuccess = minTime(f.FirstSuccess, o.FirstSuccess)
	f.GatedSeen = maxTime(f.GatedSeen, o.GatedSeen)
	f.UngatedObserved = minTime(f.UngatedObserved, o.UngatedObserved)
	f.ClaimsAllocated = minTime(f.ClaimsAllocated, o.ClaimsAllocated)
	f.ClaimsAllocatedObserved = minTime(f.ClaimsAllocatedObserved, o.ClaimsAllocatedObserved)
	f.EndedAt = minTime(f.EndedAt, o.EndedAt)
	f.EndRank = max(f.EndRank, o.EndRank)
	f.PreemptedBy = minString(f.PreemptedBy, o.PreemptedBy)
	f.Restarts = max(f.Restarts, o.Restarts)
	f.Requests += o.Requests
	f.RequestErrors += o.RequestErrors
	f.PreReadyRequests += o.PreReadyRequests
	f.PreReadyErrors += o.PreReadyErrors
	for b, n := range o.Latency {
		if f.Latency == nil {
			f.Latency = map[int32]int64{}
		}
		f.Latency[b] += n
	}
	for u, sec := range o.GPUUtil {
		if f.GPUUtil == nil {
			f.GPUUtil = map[int32]float64{}
		}
		f.GPUUtil[u] += sec
	}
	f.GPUFBSeconds += o.GPUFBSeconds
	f.GPUFBMax = max(f.GPUFBMax, o.GPUFBMax)
	for k, n := range o.Series {
		if f.Series == nil {
			f.Series = map[SeriesKey]int{}
		}
		f.Series[k] = max(f.Series[k], n)
	}
}

// Inventory is a full list of the pods in one collector scope (an inventory envelope), or one
// part of it (Parts > 0): see WholeInventories.
type Inventory struct {
	Cluster, ScopeKey string
	ListedAt          time.Time // when the list was started
	UIDs              map[string]bool
	Part, Parts       int // 1..Parts for a part of a chunked inventory; 0, 0 for a whole one
}

// InventoryOf reads an inventory envelope (a whole inventory or one part); false for other
// kinds.
func InventoryOf(env *events.Envelope) (Inventory, bool) {
	p, ok := env.Payload.(*events.Inventory)
	if !ok {
		return Inventory{}, false
	}
	inv := Inventory{Cluster: env.Cluster, ScopeKey: p.Scope.Key(), ListedAt: env.OccurredAt, UIDs: make(map[string]bool, len(p.PodUIDs)),
		Part: p.Part, Parts: p.Parts}
	for _, uid := range p.PodUIDs {
		inv.UIDs[strings.ToLower(uid)] = true
	}
	return inv, true
}

// PartsKey names the chunked inventory a part belongs to: its cluster, scope, list time and
// number of parts.
func (inv Inventory) PartsKey() string {
	return inv.Cluster + "\x1f" + inv.ScopeKey + "\x1f" + inv.ListedAt.UTC().Format(time.RFC3339Nano) + "\x1f" + strconv.Itoa(inv.Parts)
}

// WholeInventories returns the whole inventories among invs: each whole one as it is, and the
// union of each chunked inventory's parts once all of them are there. The parts of an
// incomplete one are left out — a part alone does not list the pods of the other parts, so
// applying it would end them — until the missing parts arrive.
func WholeInventories(invs []Inventory) []Inventory {
	var out []Inventory
	parts := map[string]map[int]Inventory{}
	var order []string
	for _, inv := range invs {
		if inv.Parts == 0 {
			out = append(out, inv)
			continue
		}
		k := inv.PartsKey()
		if parts[k] == nil {
			parts[k] = map[int]Inventory{}
			order = append(order, k)
		}
		parts[k][inv.Part] = inv
	}
	for _, k := range order {
		if u, ok := Union(parts[k]); ok {
			out = append(out, u)
		}
	}
	return out
}

// Union is the whole inventory of a chunked inventory's parts (by part number); false while a
// part is missing.
func Union(parts map[int]Inventory) (Inventory, bool) {
	var whole Inventory
	for _, p := range parts {
		whole = Inventory{Cluster: p.Cluster, ScopeKey: p.ScopeKey, ListedAt: p.ListedAt, UIDs: map[string]bool{}}
		if len(parts) != p.Parts {
			return Inventory{}, false
		}
		break
	}
	for i := 1; i <= len(parts); i++ {
		p, ok := parts[i]
		if !ok {
			return Inventory{}, false
		}
		for uid := range p.UIDs {
			whole.UIDs[uid] = true
		}
	}
	return whole, len(parts) > 0
}

// ApplyInventories ends a pod that was deleted while no collector watched: an inventory of the
// pod's cluster and scope that was listed after the pod was last known alive, and does not list
// it, proves it gone by then. Inventories that list the pod prove it alive, so the rule is
// order-free: AliveAt = latest of its snapshots and listing inventories; UnobservedEnd = earliest
// non-listing inventory after AliveAt. The end is bounded below by AliveAt and above by
// UnobservedEnd. Pods seen in no scope (replayed files) are never ended this way.
func (f *Facts) ApplyInventories(invs []Inventory) {
	f.UnobservedEnd = time.Time{}
	if f.ScopeKey == "" {
		return
	}
	uid := strings.ToLower(f.UID)
	for _, inv := range invs {
		if inv.Cluster == f.Cluster && inv.ScopeKey == f.ScopeKey && inv.UIDs[uid] {
			f.AliveAt = maxTime(f.AliveAt, inv.ListedAt)
		}
	}
	for _, inv := range invs {
		if inv.Cluster == f.Cluster && inv.ScopeKey == f.ScopeKey && !inv.UIDs[uid] && inv.ListedAt.After(f.AliveAt) {
			f.UnobservedEnd = minTime(f.UnobservedEnd, inv.ListedAt)
		}
	}
}

// Watch is a heartbeat of a collector's watch of one scope: live from Since to Until.
type Watch struct {
	Cluster, ScopeKey string
	Since, Until      time.Time
}

// WatchOf reads a heartbeat envelope; false for other kinds.
func WatchOf(env *events.Envelope) (Watch, bool) {
	p, ok := env.Payload.(*events.Heartbeat)
	if !ok {
		return Watch{}, false
	}
	return Watch{Cluster: env.Cluster, ScopeKey: p.Scope.Key(), Since: us(p.Since), Until: us(env.OccurredAt)}, true
}

// ApplyWatches extends what is known of a pod that has not ended: a watch of its cluster and
// scope that was live from Since (at most AliveAt: the pod was known alive within the watch) to
// Until would have seen it end, so it was still there at Until. It must follow ApplyInventories,
// which settles AliveAt. The rule reads only the heartbeats, so it does not depend on their order.
func (f *Facts) ApplyWatches(ws []Watch) {
	f.LiveUntil = time.Time{}
	if f.ScopeKey == "" || !f.EndedAt.IsZero() || f.AliveAt.IsZero() {
		return
	}
	for _, w := range ws {
		if w.Cluster == f.Cluster && w.ScopeKey == f.ScopeKey && !w.Since.After(f.AliveAt) {
			f.LiveUntil = maxTime(f.LiveUntil, w.Until)
		}
	}
}

// Occurrences returns how often events of the given reason happened: the sum, over series,
// of each series' largest count.
func (f *Facts) Occurrences(reason string) int {
	n := 0
	for k, c := range f.Series {
		if k.Reason == reason {
			n += c
		}
	}
	return n
}

// earlierNode orders (time, node) pairs with unset times last, so the node of the earliest
// Scheduled event wins and equal times are broken by node name.
func earlierNode(t time.Time, node string, than time.Time, thanNode string) bool {
	switch {
	case t.IsZero():
		return false
	case than.IsZero():
		return true
	case !t.Equal(than):
		return t.Before(than)
	default:
		return node < thanNode
	}
}

// minString returns the smaller non-empty string: an order-free choice where sources disagree.
func minString(a, b string) string {
	if a == "" || (b != "" && b < a) {
		return b
	}
	return a
}

func minTime(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if a.IsZero() || b.After(a) {
		return b
	}
	return a
}

// us truncates a time to the microsecond (the precision Postgres keeps) in UTC.
func us(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }
