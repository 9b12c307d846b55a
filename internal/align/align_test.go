package align_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/eventstest"
)

// Pods of the hand-built sequences: x and its re-created namesake y, and the preemptor named
// by a Preempted note.
const (
	uidX         = "9f0c2d4e-5a1b-4c3d-8e7f-0a1b2c3d4e5f"
	uidY         = "1e2d3c4b-5a69-4788-9a0b-1c2d3e4f5a6b"
	uidPreemptor = "6ee92199-b806-4aed-80ba-6687a24a01b2"
)

var (
	podX = events.PodRef{Namespace: "ai-lab", Name: "x", UID: uidX}
	podY = events.PodRef{Namespace: "ai-lab", Name: "x", UID: uidY}
)

// xCreated is pod x's first snapshot: created at 04:32:00, seen live at 00.01; xScheduled is
// the scheduler binding it to gpu-node-1 at 01.3.
var (
	xCreated   = ev{"x/1", podX, "04:32:00.010", "", pending("04:32:00")}
	xScheduled = ev{"sched", podX, "04:32:01.3", "", scheduledEvent("Successfully assigned ai-lab/x to gpu-node-1")}
)

// notReached is the censored list of a pod that never got scheduled.
var notReached = []string{"scheduled", "running", "ready", "first_success"}

// tm reads a time of day on the tests' date, "04:32:01.25", as UTC.
func tm(hms string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, "2026-11-30T"+hms+"Z")
	if err != nil {
		panic(err) // test inputs are literals
	}
	return t
}

func tp(hms string) *time.Time { t := tm(hms); return &t }

// ev describes one envelope: at is a time of day (see tm), data its payload; a zero pod means
// an envelope about no pod.
type ev struct {
	id   string
	pod  events.PodRef
	at   string
	node string
	data any
}

// envelope builds the envelope e describes the way the collector's would arrive: encoded, then
// decoded, so Raw, Data and Payload agree and times are truncated as on the wire.
func envelope(t testing.TB, e ev) *events.Envelope {
	t.Helper()
	at := tm(e.at)
	env := &events.Envelope{
		V: events.Version, ID: e.id, Kind: kindOf(t, e.data), Cluster: "lab", Source: "align-test",
		OccurredAt: at, ObservedAt: at.Add(5 * time.Millisecond), Node: e.node, Payload: e.data,
	}
	if e.pod != (events.PodRef{}) {
		pod := e.pod
		env.Pod = &pod
	}
	return eventstest.RoundTrip(t, env)
}

func envelopes(t testing.TB, es []ev) []*events.Envelope {
	t.Helper()
	out := make([]*events.Envelope, 0, len(es))
	for _, e := range es {
		out = append(out, envelope(t, e))
	}
	return out
}

func kindOf(t testing.TB, payload any) events.Kind {
	switch payload.(type) {
	case *events.K8sEvent:
		return events.KindK8sEvent
	case *events.PodStatus:
		return events.KindPodStatus
	case *events.NodeStatus:
		return events.KindNodeStatus
	case *events.GPUSample:
		return events.KindGPUSample
	case *events.Request:
		return events.KindRequest
	case *events.Inventory:
		return events.KindInventory
	case *events.Heartbeat:
		return events.KindHeartbeat
	}
	t.Fatalf("no kind for payload %T", payload)
	return ""
}

func failedScheduling(eventUID string, count int) *events.K8sEvent {
	return &events.K8sEvent{
		Reason: events.ReasonFailedScheduling, Type: "Warning", Action: "Scheduling",
		ReportingController: "default-scheduler", EventUID: eventUID, Count: count,
		Note: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
	}
}

func scheduledEvent(note string) *events.K8sEvent {
	return &events.K8sEvent{Reason: events.ReasonScheduled, Type: "Normal", Action: "Binding", ReportingController: "default-scheduler", Note: note}
}

func preemptedEvent(note string) *events.K8sEvent {
	return &events.K8sEvent{Reason: events.ReasonPreempted, Type: "Normal", Action: "Preempting", ReportingController: "default-scheduler", Note: note}
}

// cond is a pod condition; an empty ltt leaves last_transition_time out.
func cond(typ, status, ltt string) events.Condition {
	c := events.Condition{Type: typ, Status: status}
	if ltt != "" {
		c.LastTransitionTime = tp(ltt)
	}
	return c
}

// container is a running container; an empty started leaves started_at out.
func container(name string, restarts int, started string) events.ContainerStatus {
	c := events.ContainerStatus{Name: name, RestartCount: restarts, State: "running"}
	if started != "" {
		c.StartedAt = tp(started)
	}
	return c
}

func pending(created string, conds ...events.Condition) *events.PodStatus {
	return &events.PodStatus{Phase: events.PhasePending, CreationTimestamp: tp(created), Conditions: conds}
}

func running(created, node string, containers []events.ContainerStatus, conds ...events.Condition) *events.PodStatus {
	return &events.PodStatus{Phase: events.PhaseRunning, NodeName: node, CreationTimestamp: tp(created), Containers: containers, Conditions: conds}
}

func request(ok bool) *events.Request {
	if ok {
		return &events.Request{Target: "http://127.0.0.1:8000/v2/models/resnet50/infer", Status: 200, OK: true, LatencyMS: 21.5}
	}
	return &events.Request{Target: "http://127.0.0.1:8000/v2/models/resnet50/infer", Status: 503, LatencyMS: 1.2, Error: "http_503"}
}

// view is the readable form of a Summary the tables compare.
type view struct {
	Node          string
	Milestones    map[string]string // reached milestones, RFC 3339 nano; a missing key is nil
	EndedReason   string
	PreemptedBy   string
	Durations     map[string]string // durations whose both ends are known, as time.Duration text
	Counts        align.Counts
	ObservedUntil string
	Censored      []string
}

func viewOf(s align.Summary) view {
	v := view{
		Node:        deref(s.Pod.Node),
		EndedReason: deref(s.EndedReason),
		PreemptedBy: deref(s.PreemptedBy),
		Counts:      s.Counts,
		Censored:    s.Censored,
		Milestones:  map[string]string{},
		Durations:   map[string]string{},
	}
	if s.ObservedUntil != nil {
		v.ObservedUntil = s.ObservedUntil.Format(time.RFC3339Nano)
	}
	m := s.Milestones
	for name, at := range map[string]*time.Time{
		"created": m.Created, "first_unschedulable": m.FirstUnschedulable, "scheduled": m.Scheduled,
		"running": m.Running, "ready": m.Ready, "first_success": m.FirstSuccess, "ended": m.Ended,
	} {
		if at != nil {
			v.Milestones[name] = at.Format(time.RFC3339Nano)
		}
	}
	d := s.Durations
	for name, secs := range map[string]*float64{
		"pending": d.Pending, "start": d.Start, "model_load": d.ModelLoad,
		"ready_to_first_success": d.ReadyToFirstSuccess, "total": d.Total,
	} {
		if secs != nil {
			v.Durations[name] = (time.Duration(math.Round(*secs*1e6)) * time.Microsecond).String()
		}
	}
	return v
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// timeline builds uid's timeline and checks that Build agrees with Derive over FactsOf merged
// per distinct envelope, the path the store takes.
func timeline(t *testing.T, uid string, envs []*events.Envelope) align.Timeline {
	t.Helper()
	tl, ok := align.Build(uid, envs, events.DefaultLabelKeys)
	if !ok {
		t.Fatalf("Build(%s): no event about the pod", uid)
	}
	var f align.Facts
	seen := map[string]bool{}
	for _, env := range envs {
		if env.PodUID() != uid || seen[env.ID] {
			continue
		}
		seen[env.ID] = true
		ef, ok := align.FactsOf(env, events.DefaultLabelKeys)
		if !ok {
			t.Fatalf("FactsOf(%s): not about a pod", env.ID)
		}
		f.Merge(ef)
	}
	f.ApplyInventories(inventories(envs))
	if diff := cmp.Diff(tl.Summary, align.Derive(f)); diff != "" {
		t.Errorf("Build and Derive(merged FactsOf) disagree (-build +derive):\n%s", diff)
	}
	return tl
}

// inventories returns the inventory envelopes among envs.
func inventories(envs []*events.Envelope) []align.Inventory {
	var out []align.Inventory
	for _, env := range envs {
		if inv, ok := align.InventoryOf(env); ok {
			out = append(out, inv)
		}
	}
	return out
}

func watches(envs []*events.Envelope) []align.Watch {
	var out []align.Watch
	for _, env := range envs {
		if w, ok := align.WatchOf(env); ok {
			out = append(out, w)
		}
	}
	return out
}

type viewCase struct {
	name string
	evs  []ev
	want view
}

func runViewCases(t *testing.T, cases []viewCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := viewOf(timeline(t, uidX, envelopes(t, tc.evs)).Summary)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildFailedScheduling(t *testing.T) {
	// Never scheduled; created is seen live at 00.01.
	want := func(firstUnschedulable string, failed int, until string) view {
		return view{
			Milestones:    map[string]string{"created": "2026-11-30T04:32:00.01Z", "first_unschedulable": firstUnschedulable},
			Durations:     map[string]string{},
			Counts:        align.Counts{FailedScheduling: failed},
			ObservedUntil: until,
			Censored:      notReached,
		}
	}
	runViewCases(t, []viewCase{
		{
			name: "one series with counts 1, 2, 3",
			evs: []ev{
				xCreated,
				{"e1/1", podX, "04:32:00.05", "", failedScheduling("e1", 1)},
				{"e1/2", podX, "04:32:01.5", "", failedScheduling("e1", 2)},
				{"e1/3", podX, "04:32:03.5", "", failedScheduling("e1", 3)},
			},
			want: want("2026-11-30T04:32:00.05Z", 3, "2026-11-30T04:32:03.5Z"),
		},
		{
			name: "counts 1 and 4 delivered, 2 and 3 missed",
			evs: []ev{
				xCreated,
				{"e1/1", podX, "04:32:00.05", "", failedScheduling("e1", 1)},
				{"e1/4", podX, "04:32:06", "", failedScheduling("e1", 4)},
			},
			want: want("2026-11-30T04:32:00.05Z", 4, "2026-11-30T04:32:06Z"),
		},
		{
			name: "two series with counts 2 and 1",
			evs: []ev{
				xCreated,
				{"e1/2", podX, "04:32:02", "", failedScheduling("e1", 2)},
				{"e2/1", podX, "04:32:01", "", failedScheduling("e2", 1)},
			},
			want: want("2026-11-30T04:32:01Z", 3, "2026-11-30T04:32:02Z"),
		},
		{
			name: "no event uid and count 0: one per distinct envelope id",
			evs: []ev{
				xCreated,
				{"fs-a", podX, "04:32:01", "", failedScheduling("", 0)},
				{"fs-b", podX, "04:32:02", "", failedScheduling("", 0)},
				{"fs-b", podX, "04:32:02", "", failedScheduling("", 0)},
			},
			want: want("2026-11-30T04:32:01Z", 2, "2026-11-30T04:32:02Z"),
		},
		{
			name: "first_unschedulable is the earliest, whatever the delivery order",
			evs: []ev{
				{"e1/3", podX, "04:32:03.5", "", failedScheduling("e1", 3)},
				{"e1/2", podX, "04:32:01.5", "", failedScheduling("e1", 2)},
				xCreated,
				{"e1/1", podX, "04:32:00.05", "", failedScheduling("e1", 1)},
			},
			want: want("2026-11-30T04:32:00.05Z", 3, "2026-11-30T04:32:03.5Z"),
		},
	})
}

func TestBuildScheduled(t *testing.T) {
	boundTo := func(node, ltt string) *events.PodStatus {
		p := pending("04:32:00", cond("PodScheduled", "True", ltt))
		p.NodeName = node
		return p
	}
	// boundAt is boundTo of a pod created at created instead of 00.
	boundAt := func(node, ltt, created string) *events.PodStatus {
		p := boundTo(node, ltt)
		p.CreationTimestamp = tp(created)
		return p
	}
	// Scheduled, not yet running.
	want := func(node, created, scheduled, pending, until string) view {
		return view{
			Node:          node,
			Milestones:    map[string]string{"created": created, "scheduled": scheduled},
			Durations:     map[string]string{"pending": pending},
			ObservedUntil: until,
			Censored:      []string{"running", "ready", "first_success"},
		}
	}
	// unschedulable adds the one FailedScheduling of a pod first found unschedulable at at.
	unschedulable := func(at string, v view) view {
		v.Milestones["first_unschedulable"] = at
		v.Counts.FailedScheduling = 1
		return v
	}
	runViewCases(t, []viewCase{
		{
			name: "the Scheduled event's µs time is preferred over the condition's second",
			evs: []ev{
				xCreated,
				{"sched", podX, "04:32:01.234567", "", scheduledEvent("Successfully assigned ai-lab/x to gpu-node-4")},
				{"x/2", podX, "04:32:01.240", "gpu-node-4", boundTo("gpu-node-4", "04:32:01")},
			},
			want: want("gpu-node-4", "2026-11-30T04:32:00.01Z", "2026-11-30T04:32:01.234567Z", "1.224567s", "2026-11-30T04:32:01.245Z"),
		},
		{
			name: "without the event the condition time is used",
			evs: []ev{
				xCreated,
				{"x/2", podX, "04:32:02.100", "gpu-node-2", boundTo("gpu-node-2", "04:32:02")},
			},
			want: want("gpu-node-2", "2026-11-30T04:32:00.01Z", "2026-11-30T04:32:02.1Z", "2.09s", "2026-11-30T04:32:02.105Z"),
		},
		{
			name: "the condition seen live inside its second is placed at its first observation",
			evs: []ev{
				{"x/1", podX, "04:32:01.010", "", pending("04:32:00")},
				{"e1/1", podX, "04:32:01.2", "", failedScheduling("e1", 1)},
				{"x/2", podX, "04:32:01.9", "gpu-node-2", boundTo("gpu-node-2", "04:32:01")},
			},
			// The pod, created in second 00, was first seen 10 ms past it: created at 00's last µs.
			want: unschedulable("2026-11-30T04:32:01.2Z",
				want("gpu-node-2", "2026-11-30T04:32:00.999999Z", "2026-11-30T04:32:01.9Z", "900.001ms", "2026-11-30T04:32:01.905Z")),
		},
		{
			name: "the condition not seen live is clamped up to first_unschedulable when that falls inside its second",
			evs: []ev{
				{"x/1", podX, "04:32:01.010", "", pending("04:32:00")},
				{"e1/1", podX, "04:32:01.2", "", failedScheduling("e1", 1)},
				{"x/2", podX, "04:32:02.3", "gpu-node-2", boundTo("gpu-node-2", "04:32:01")},
			},
			want: unschedulable("2026-11-30T04:32:01.2Z",
				want("gpu-node-2", "2026-11-30T04:32:00.999999Z", "2026-11-30T04:32:01.2Z", "200.001ms", "2026-11-30T04:32:02.305Z")),
		},
		{
			name: "created first seen just past its second (under 100 ms): the second's last microsecond",
			evs: []ev{
				{"x/1", podX, "04:32:01.060", "", pending("04:32:00")},
				{"x/2", podX, "04:32:01.090", "gpu-node-2", boundTo("gpu-node-2", "04:32:01")},
			},
			want: want("gpu-node-2", "2026-11-30T04:32:00.999999Z", "2026-11-30T04:32:01.09Z", "90.001ms", "2026-11-30T04:32:01.095Z"),
		},
		{
			name: "created first seen 150 ms past its second: not seen live, stays at its second",
			evs: []ev{
				{"x/1", podX, "04:32:01.150", "", pending("04:32:00")},
				{"x/2", podX, "04:32:01.180", "gpu-node-2", boundTo("gpu-node-2", "04:32:01")},
			},
			want: want("gpu-node-2", "2026-11-30T04:32:00Z", "2026-11-30T04:32:01.18Z", "1.18s", "2026-11-30T04:32:01.185Z"),
		},
		{
			name: "created seen live: its first observation, or a scheduler event inside its second",
			evs: []ev{
				{"x/1", podX, "04:32:00.620", "", pending("04:32:00")},
				{"e1/1", podX, "04:32:00.604", "", failedScheduling("e1", 1)},
				{"sched", podX, "04:32:00.640", "", scheduledEvent("Successfully assigned ai-lab/x to gpu-node-4")},
			},
			want: unschedulable("2026-11-30T04:32:00.604Z",
				want("gpu-node-4", "2026-11-30T04:32:00.604Z", "2026-11-30T04:32:00.64Z", "36ms", "2026-11-30T04:32:00.64Z")),
		},
		{
			name: "created first observed a second or more later (the collector started late) stays at its second",
			evs: []ev{
				{"x/1", podX, "04:32:03.500", "", pending("04:32:00")},
				{"sched", podX, "04:32:00.040", "", scheduledEvent("Successfully assigned ai-lab/x to gpu-node-4")},
			},
			want: want("gpu-node-4", "2026-11-30T04:32:00.04Z", "2026-11-30T04:32:00.04Z", "0s", "2026-11-30T04:32:03.505Z"),
		},
		{
			name: "the condition not seen live is clamped up to created when created falls inside its second",
			evs: []ev{
				{"x/1", podX, "04:32:00.410", "", pending("04:32:00.4")},
				{"x/2", podX, "04:32:01.250", "gpu-node-2", boundAt("gpu-node-2", "04:32:00", "04:32:00.4")},
			},
			want: want("gpu-node-2", "2026-11-30T04:32:00.41Z", "2026-11-30T04:32:00.41Z", "0s", "2026-11-30T04:32:01.255Z"),
		},
		{
			name: "a condition a whole second before created is clock skew, reported as is",
			evs: []ev{
				{"x/1", podX, "04:32:01.410", "gpu-node-2", boundAt("gpu-node-2", "04:32:00", "04:32:01.4")},
			},
			want: want("gpu-node-2", "2026-11-30T04:32:01.41Z", "2026-11-30T04:32:00Z", "-1.41s", "2026-11-30T04:32:01.415Z"),
		},
		{
			name: "the node named by the event note wins over node_name",
			evs: []ev{
				xCreated,
				{"sched", podX, "04:32:01.5", "", scheduledEvent("Successfully assigned ai-lab/x to gpu-node-4")},
				{"x/2", podX, "04:32:01.6", "gpu-node-2", boundTo("gpu-node-2", "04:32:01")},
			},
			want: want("gpu-node-4", "2026-11-30T04:32:00.01Z", "2026-11-30T04:32:01.5Z", "1.49s", "2026-11-30T04:32:01.605Z"),
		},
		{
			name: "a note without a node falls back to the envelope's node",
			evs: []ev{
				xCreated,
				{"sched", podX, "04:32:01.5", "gpu-node-5", scheduledEvent("Bound")},
				{"x/2", podX, "04:32:01.6", "gpu-node-2", boundTo("gpu-node-2", "04:32:01")},
			},
			want: want("gpu-node-5", "2026-11-30T04:32:00.01Z", "2026-11-30T04:32:01.5Z", "1.49s", "2026-11-30T04:32:01.605Z"),
		},
		{
			name: "a note without a node and no envelope node falls back to node_name",
			evs: []ev{
				xCreated,
				{"sched", podX, "04:32:01.5", "", scheduledEvent("Bound")},
				{"x/2", podX, "04:32:01.6", "gpu-node-2", boundTo("gpu-node-2", "04:32:01")},
			},
			want: want("gpu-node-2", "2026-11-30T04:32:00.01Z", "2026-11-30T04:32:01.5Z", "1.49s", "2026-11-30T04:32:01.605Z"),
		},
	})
}

func TestBuildRunning(t *testing.T) {
	// Created at 00, scheduled by the event at 01.3 (µs).
	base := []ev{
		xCreated,
		xScheduled,
	}
	runningAt := func(id, at, started string) ev {
		return ev{id, podX, at, "gpu-node-1", running("04:32:00", "gpu-node-1", []events.ContainerStatus{container("model", 0, started)})}
	}
	// Created is seen live at 00.01; pending 1.29 s.
	want := func(run, start, until string) view {
		return view{
			Node:          "gpu-node-1",
			Milestones:    map[string]string{"created": "2026-11-30T04:32:00.01Z", "scheduled": "2026-11-30T04:32:01.3Z", "running": run},
			Durations:     map[string]string{"pending": "1.29s", "start": start},
			ObservedUntil: until,
			Censored:      []string{"ready", "first_success"},
		}
	}
	runViewCases(t, []viewCase{
		{
			name: "started_at seen live inside its second: the first observation",
			evs:  append(slices.Clone(base), runningAt("x/2", "04:32:02.5", "04:32:02")),
			want: want("2026-11-30T04:32:02.5Z", "1.2s", "2026-11-30T04:32:02.505Z"),
		},
		{
			name: "started_at not seen live whose second holds scheduled: running is scheduled",
			evs:  append(slices.Clone(base), runningAt("x/2", "04:32:02.3", "04:32:01")),
			want: want("2026-11-30T04:32:01.3Z", "0s", "2026-11-30T04:32:02.305Z"),
		},
		{
			name: "started_at not seen live, a full second after scheduled, stays as is",
			evs:  append(slices.Clone(base), runningAt("x/2", "04:32:03.2", "04:32:02")),
			want: want("2026-11-30T04:32:02Z", "700ms", "2026-11-30T04:32:03.205Z"),
		},
		{
			name: "never later than the first observation of phase Running",
			evs:  append(slices.Clone(base), runningAt("x/2", "04:32:02.8", "04:32:03")),
			want: want("2026-11-30T04:32:02.8Z", "1.5s", "2026-11-30T04:32:02.805Z"),
		},
		{
			name: "without started_at the observation is used",
			evs:  append(slices.Clone(base), runningAt("x/2", "04:32:02.2", "")),
			want: want("2026-11-30T04:32:02.2Z", "900ms", "2026-11-30T04:32:02.205Z"),
		},
		{
			name: "a restarted container's later started_at does not move running",
			evs:  append(slices.Clone(base), runningAt("x/3", "04:32:09", "04:32:08"), runningAt("x/2", "04:32:03.2", "04:32:02")),
			want: want("2026-11-30T04:32:02Z", "700ms", "2026-11-30T04:32:09.005Z"),
		},
	})
}

func TestBuildReady(t *testing.T) {
	readyAt := func(id, at, status, ltt string) ev {
		return ev{id, podX, at, "gpu-node-1", running("04:32:00", "gpu-node-1",
			[]events.ContainerStatus{container("model", 0, "04:32:02")}, cond("Ready", status, ltt))}
	}
	// Created at 00, scheduled at 01.3, running from 02.
	base := []ev{
		xCreated,
		xScheduled,
		readyAt("x/2", "04:32:02.5", "False", "04:32:02"),
	}
	want := func(running, ready, start, modelLoad, until string) view {
		return view{
			Node:          "gpu-node-1",
			Milestones:    map[string]string{"created": "2026-11-30T04:32:00.01Z", "scheduled": "2026-11-30T04:32:01.3Z", "running": running, "ready": ready},
			Durations:     map[string]string{"pending": "1.29s", "start": start, "model_load": modelLoad},
			ObservedUntil: until,
			Censored:      []string{"first_success"},
		}
	}
	runViewCases(t, []viewCase{
		{
			name: "readiness flaps True, False, True: ready is the first True",
			evs: append(slices.Clone(base),
				readyAt("x/5", "04:32:16.4", "True", "04:32:16"),
				readyAt("x/4", "04:32:12.1", "False", "04:32:12"),
				readyAt("x/3", "04:32:07.2", "True", "04:32:07"),
			),
			want: want("2026-11-30T04:32:02.5Z", "2026-11-30T04:32:07.2Z", "1.2s", "4.7s", "2026-11-30T04:32:16.405Z"),
		},
		{
			name: "Ready without a transition time: the observation",
			evs:  append(slices.Clone(base), readyAt("x/3", "04:32:07.2", "True", "")),
			want: want("2026-11-30T04:32:02.5Z", "2026-11-30T04:32:07.2Z", "1.2s", "4.7s", "2026-11-30T04:32:07.205Z"),
		},
		{
			name: "Ready inside the second running (µs) falls in: ready is running",
			evs: []ev{
				xCreated,
				xScheduled,
				{"x/2", podX, "04:32:01.9", "gpu-node-1", running("04:32:00", "gpu-node-1",
					[]events.ContainerStatus{container("model", 0, "04:32:01")}, cond("Ready", "True", "04:32:01"))},
			},
			want: want("2026-11-30T04:32:01.9Z", "2026-11-30T04:32:01.9Z", "600ms", "0s", "2026-11-30T04:32:01.905Z"),
		},
	})
}

func TestBuildRestarts(t *testing.T) {
	snap := func(id, at string, model, sidecar int) ev {
		return ev{id, podX, at, "gpu-node-1", running("04:32:00", "gpu-node-1",
			[]events.ContainerStatus{container("model", model, "04:32:02"), container("sidecar", sidecar, "04:32:02")})}
	}
	want := func(restarts int, until string) view {
		return view{
			Node:          "gpu-node-1",
			Milestones:    map[string]string{"created": "2026-11-30T04:32:00Z", "running": "2026-11-30T04:32:02Z"},
			Durations:     map[string]string{},
			Counts:        align.Counts{Restarts: restarts},
			ObservedUntil: until,
			Censored:      []string{"scheduled", "ready", "first_success"},
		}
	}
	runViewCases(t, []viewCase{
		{
			name: "summed over containers: 1 + 2",
			evs:  []ev{snap("x/1", "04:32:05", 1, 2)},
			want: want(3, "2026-11-30T04:32:05.005Z"),
		},
		{
			name: "a later snapshot with lower counts does not reduce it",
			evs:  []ev{snap("x/1", "04:32:05", 1, 2), snap("x/2", "04:32:09", 0, 1)},
			want: want(3, "2026-11-30T04:32:09.005Z"),
		},
		{
			name: "the largest snapshot wins, not the sum over snapshots",
			evs:  []ev{snap("x/1", "04:32:05", 1, 0), snap("x/2", "04:32:09", 1, 1)},
			want: want(2, "2026-11-30T04:32:09.005Z"),
		},
	})
}
