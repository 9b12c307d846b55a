package align_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
)

func TestBuildEnded(t *testing.T) {
	const note = "Preempted by pod 6ee92199-b806-4aed-80ba-6687a24a01b2 on node gpu-node-3"
	containers := []events.ContainerStatus{container("model", 0, "04:32:02")}
	alive := ev{"x/1", podX, "04:32:02.5", "gpu-node-3", running("04:32:00", "gpu-node-3", containers)}
	disruption := func() *events.PodStatus {
		p := running("04:32:00", "gpu-node-3", containers, cond("DisruptionTarget", "True", "04:32:10"))
		p.Conditions[0].Reason = "PreemptionByScheduler"
		p.DeletionTimestamp = tp("04:32:10")
		return p
	}
	deleted := func() *events.PodStatus {
		p := running("04:32:00", "gpu-node-3", containers)
		p.DeletionTimestamp, p.Deleted = tp("04:32:10"), true
		return p
	}
	// As the API server sends it: the final snapshot of a disrupted pod still carries the condition.
	disruptedDeleted := func() *events.PodStatus {
		p := disruption()
		p.Deleted = true
		return p
	}
	cleared := func() *events.PodStatus {
		p := disruption()
		p.Conditions[0].Status, p.DeletionTimestamp = "False", nil
		return p
	}
	phase := func(ph string) *events.PodStatus {
		p := running("04:32:00", "gpu-node-3", nil)
		p.Phase = ph
		return p
	}
	ended := func(reason, by, at, until string) view {
		return view{
			Node:          "gpu-node-3",
			Milestones:    map[string]string{"created": "2026-11-30T04:32:00Z", "running": "2026-11-30T04:32:02.5Z", "ended": at},
			EndedReason:   reason,
			PreemptedBy:   by,
			Durations:     map[string]string{},
			ObservedUntil: until,
			Censored:      []string{"scheduled", "ready", "first_success"},
		}
	}
	runViewCases(t, []viewCase{
		{
			name: "preemption victim: ended at the Preempted event although deleted later",
			evs: []ev{
				alive,
				{"pre", podX, "04:32:10", "", preemptedEvent(note)},
				{"x/2", podX, "04:32:10.02", "gpu-node-3", disruption()},
				{"x/3", podX, "04:32:10.5", "gpu-node-3", deleted()},
			},
			want: ended("preempted", uidPreemptor, "2026-11-30T04:32:10Z", "2026-11-30T04:32:10Z"),
		},
		{
			name: "preemption victim: the deleted snapshot delivered first ranks below preempted",
			evs: []ev{
				{"x/3", podX, "04:32:10.5", "gpu-node-3", deleted()},
				alive,
				{"pre", podX, "04:32:10", "", preemptedEvent(note)},
			},
			want: ended("preempted", uidPreemptor, "2026-11-30T04:32:10Z", "2026-11-30T04:32:10Z"),
		},
		{
			name: "preemptor UID is lower-cased",
			evs: []ev{
				alive,
				{"pre", podX, "04:32:10", "", preemptedEvent("Preempted by pod 6EE92199-B806-4AED-80BA-6687A24A01B2 on node gpu-node-3")},
			},
			want: ended("preempted", uidPreemptor, "2026-11-30T04:32:10Z", "2026-11-30T04:32:10Z"),
		},
		{
			name: "DisruptionTarget PreemptionByScheduler without a deletion does not end the pod",
			evs:  []ev{alive, {"x/2", podX, "04:32:10.02", "gpu-node-3", disruption()}},
			want: view{
				Node:          "gpu-node-3",
				Milestones:    map[string]string{"created": "2026-11-30T04:32:00Z", "running": "2026-11-30T04:32:02.5Z"},
				Durations:     map[string]string{},
				ObservedUntil: "2026-11-30T04:32:10.025Z",
				Censored:      []string{"scheduled", "ready", "first_success"},
			},
		},
		{
			name: "DisruptionTarget then deletion without the Preempted event: preempted at the deletion",
			evs: []ev{
				alive,
				{"x/2", podX, "04:32:10.02", "gpu-node-3", disruption()},
				{"x/3", podX, "04:32:10.5", "gpu-node-3", disruptedDeleted()},
			},
			want: ended("preempted", "", "2026-11-30T04:32:10.5Z", "2026-11-30T04:32:10.5Z"),
		},
		{
			name: "DisruptionTarget cleared, then the pod succeeds: succeeded",
			evs: []ev{
				alive,
				{"x/2", podX, "04:32:10.02", "gpu-node-3", disruption()},
				{"x/3", podX, "04:34:10.02", "gpu-node-3", cleared()},
				{"x/4", podX, "04:40:00", "gpu-node-3", phase(events.PhaseSucceeded)},
			},
			want: ended("succeeded", "", "2026-11-30T04:40:00Z", "2026-11-30T04:40:00Z"),
		},
		{
			name: "deleted",
			evs:  []ev{alive, {"x/3", podX, "04:32:10.5", "gpu-node-3", deleted()}},
			want: ended("deleted", "", "2026-11-30T04:32:10.5Z", "2026-11-30T04:32:10.5Z"),
		},
		{
			name: "failed, then deleted: failed, at the failure",
			evs: []ev{
				alive,
				{"x/2", podX, "04:32:08", "gpu-node-3", phase(events.PhaseFailed)},
				{"x/3", podX, "04:32:10.5", "gpu-node-3", deleted()},
			},
			want: ended("failed", "", "2026-11-30T04:32:08Z", "2026-11-30T04:32:08Z"),
		},
		{
			name: "succeeded",
			evs:  []ev{alive, {"x/2", podX, "04:32:08", "gpu-node-3", phase(events.PhaseSucceeded)}},
			want: ended("succeeded", "", "2026-11-30T04:32:08Z", "2026-11-30T04:32:08Z"),
		},
		{
			name: "evicted, then failed: evicted",
			evs: []ev{
				alive,
				{"evict", podX, "04:32:07", "", &events.K8sEvent{Reason: events.ReasonEvicted, Type: "Warning", Note: "The node was low on resource: memory."}},
				{"x/2", podX, "04:32:08", "gpu-node-3", phase(events.PhaseFailed)},
			},
			want: ended("evicted", "", "2026-11-30T04:32:07Z", "2026-11-30T04:32:07Z"),
		},
	})
}

func TestBuildNeverScheduled(t *testing.T) {
	envs := envelopes(t, []ev{
		xCreated,
		{"e1/1", podX, "04:32:00.05", "", failedScheduling("e1", 1)},
		{"x/2", podX, "04:32:00.06", "", pending("04:32:00", events.Condition{Type: "PodScheduled", Status: "False", Reason: "Unschedulable", LastTransitionTime: tp("04:32:00")})},
		{"e1/2", podX, "04:32:05.05", "", failedScheduling("e1", 2)},
	})
	tl, ok := align.Build(uidX, envs, events.DefaultLabelKeys)
	if !ok {
		t.Fatal("Build: ok = false for a pod that never scheduled; want the pod kept")
	}
	want := view{
		Milestones:    map[string]string{"created": "2026-11-30T04:32:00.01Z", "first_unschedulable": "2026-11-30T04:32:00.05Z"},
		Durations:     map[string]string{},
		Counts:        align.Counts{FailedScheduling: 2},
		ObservedUntil: "2026-11-30T04:32:05.05Z",
		Censored:      notReached,
	}
	if diff := cmp.Diff(want, viewOf(tl.Summary)); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if tl.Durations.Pending != nil {
		t.Errorf("pending = %v, want nil", *tl.Durations.Pending)
	}
}

func TestBuildUnknownPod(t *testing.T) {
	envs := envelopes(t, []ev{xCreated})
	if tl, ok := align.Build(uidY, envs, events.DefaultLabelKeys); ok {
		t.Errorf("Build(%s) = %+v, true; want false for a pod no event is about", uidY, tl.Summary)
	}
	// Envelopes about no pod (node_status, experiment) have no UID: they make no timeline.
	if tl, ok := align.Build("", envs, events.DefaultLabelKeys); ok {
		t.Errorf(`Build("") = %+v, true; want false`, tl.Summary)
	}
}

func TestBuildRecreatedPod(t *testing.T) {
	envs := envelopes(t, []ev{
		xCreated,
		{"sched-x", podX, "04:32:01.3", "", scheduledEvent("Successfully assigned ai-lab/x to gpu-node-1")},
		{"x/2", podX, "04:32:02.5", "gpu-node-1", running("04:32:00", "gpu-node-1", []events.ContainerStatus{container("model", 4, "04:32:02")})},
		{"x/3", podX, "04:33:00", "gpu-node-1", func() *events.PodStatus {
			p := running("04:32:00", "gpu-node-1", nil)
			p.Deleted = true
			return p
		}()},
		// The ReplicaSet's replacement: same namespace and name, new UID, from 04:33:00.
		{"y/1", podY, "04:33:00.020", "", pending("04:33:00")},
		{"e9/1", podY, "04:33:00.05", "", failedScheduling("e9", 1)},
		{"sched-y", podY, "04:33:02.5", "", scheduledEvent("Successfully assigned ai-lab/x to gpu-node-2")},
		{"y/2", podY, "04:33:04.5", "gpu-node-2", running("04:33:00", "gpu-node-2", []events.ContainerStatus{container("model", 0, "04:33:04")})},
	})
	type got struct {
		View view
		IDs  []string
	}
	for _, tc := range []struct {
		uid  string
		want got
	}{
		{uidX, got{
			View: view{
				Node: "gpu-node-1",
				Milestones: map[string]string{
					"created": "2026-11-30T04:32:00.01Z", "scheduled": "2026-11-30T04:32:01.3Z",
					"running": "2026-11-30T04:32:02.5Z", "ended": "2026-11-30T04:33:00Z",
				},
				EndedReason:   "deleted",
				Durations:     map[string]string{"pending": "1.29s", "start": "1.2s"},
				Counts:        align.Counts{Restarts: 4},
				ObservedUntil: "2026-11-30T04:33:00Z",
				Censored:      []string{"ready", "first_success"},
			},
			IDs: []string{"x/1", "sched-x", "x/2", "x/3"},
		}},
		{uidY, got{
			View: view{
				Node: "gpu-node-2",
				Milestones: map[string]string{
					"created": "2026-11-30T04:33:00.02Z", "first_unschedulable": "2026-11-30T04:33:00.05Z",
					"scheduled": "2026-11-30T04:33:02.5Z", "running": "2026-11-30T04:33:04.5Z",
				},
				Durations:     map[string]string{"pending": "2.48s", "start": "2s"},
				Counts:        align.Counts{FailedScheduling: 1},
				ObservedUntil: "2026-11-30T04:33:04.505Z",
				Censored:      []string{"ready", "first_success"},
			},
			IDs: []string{"y/1", "e9/1", "sched-y", "y/2"},
		}},
	} {
		t.Run(tc.uid, func(t *testing.T) {
			tl := timeline(t, tc.uid, envs)
			g := got{View: viewOf(tl.Summary)}
			for _, e := range tl.Events {
				g.IDs = append(g.IDs, e.ID)
			}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("timeline (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildRequests(t *testing.T) {
	// Created at 00 (seen live at 00.01), scheduled at 01.3, running from 02, ready from 07
	// (seen live at 07.2).
	base := []ev{
		xCreated,
		xScheduled,
		{"x/2", podX, "04:32:07.2", "gpu-node-1", running("04:32:00", "gpu-node-1",
			[]events.ContainerStatus{container("model", 0, "04:32:02")}, cond("Ready", "True", "04:32:07"))},
	}
	sent := func(ok, ready bool) *events.Request {
		r := request(ok)
		r.PodReady = &ready
		return r
	}
	// Ready from 07.2 with no request served yet; served adds the first ok one.
	want := func(counts align.Counts, until string) view {
		return view{
			Node:          "gpu-node-1",
			Milestones:    map[string]string{"created": "2026-11-30T04:32:00.01Z", "scheduled": "2026-11-30T04:32:01.3Z", "running": "2026-11-30T04:32:02Z", "ready": "2026-11-30T04:32:07.2Z"},
			Durations:     map[string]string{"pending": "1.29s", "start": "700ms", "model_load": "5.2s"},
			Counts:        counts,
			ObservedUntil: until,
			Censored:      []string{"first_success"},
		}
	}
	served := func(firstSuccess, readyToFirstSuccess, total string, v view) view {
		v.Milestones["first_success"] = firstSuccess
		v.Durations["ready_to_first_success"] = readyToFirstSuccess
		v.Durations["total"] = total
		v.Censored = []string{}
		return v
	}
	runViewCases(t, []viewCase{
		{
			name: "requests the prober sent before Ready count apart from the served ones",
			evs: append(slices.Clone(base),
				ev{"probe/1", podX, "04:32:03", "", sent(false, false)},
				ev{"probe/2", podX, "04:32:05", "", sent(false, false)},
				ev{"probe/3", podX, "04:32:06.9", "", sent(true, false)},
				ev{"probe/4", podX, "04:32:07.5", "", sent(true, true)},
				ev{"probe/5", podX, "04:32:08", "", sent(false, true)},
			),
			want: served("2026-11-30T04:32:06.9Z", "-300ms", "6.89s",
				want(align.Counts{Requests: 5, RequestErrors: 3, PreReadyRequests: 3, PreReadyErrors: 2}, "2026-11-30T04:32:08Z")),
		},
		{
			name: "first_success is the earliest ok request, delivered last; duplicates count once",
			evs: append(slices.Clone(base),
				ev{"probe/1", podX, "04:32:03", "", request(false)},
				ev{"probe/3", podX, "04:32:08", "", request(true)},
				ev{"probe/3", podX, "04:32:08", "", request(true)},
				ev{"probe/4", podX, "04:32:09", "", request(false)},
				ev{"probe/2", podX, "04:32:07.5", "", request(true)},
			),
			want: served("2026-11-30T04:32:07.5Z", "300ms", "7.49s",
				want(align.Counts{Requests: 4, RequestErrors: 2}, "2026-11-30T04:32:09Z")),
		},
		{
			name: "only errors: first_success censored",
			evs: append(slices.Clone(base),
				ev{"probe/1", podX, "04:32:03", "", request(false)},
				ev{"probe/2", podX, "04:32:08", "", request(false)},
			),
			want: want(align.Counts{Requests: 2, RequestErrors: 2}, "2026-11-30T04:32:08Z"),
		},
	})
}

func mapWith(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestBuildEventList(t *testing.T) {
	envs := envelopes(t, []ev{
		{"b", podX, "04:32:01", "", pending("04:32:00")},
		{"probe/1", podX, "04:32:00.5", "", request(true)},
		{"a", podX, "04:32:01", "", failedScheduling("e1", 2)},
		{"dcgm/1", podX, "04:32:00.7", "gpu-node-1", &events.GPUSample{GPU: "0", UUID: "GPU-0", Metrics: map[string]float64{"DCGM_FI_DEV_GPU_UTIL": 97}}},
		{"c", podX, "04:32:00.2", "", failedScheduling("e1", 1)},
		{"node/1", events.PodRef{}, "04:32:00.1", "gpu-node-1", &events.NodeStatus{Ready: true}},
		{"other", podY, "04:32:00.3", "", pending("04:32:00")},
		{"c", podX, "04:32:00.2", "", failedScheduling("e1", 1)},
	})
	tl := timeline(t, uidX, envs)
	var got []string
	for _, e := range tl.Events {
		got = append(got, fmt.Sprintf("%s %s %s", e.OccurredAt.Format(time.RFC3339Nano), e.Kind, e.ID))
	}
	want := []string{
		"2026-11-30T04:32:00.2Z k8s_event c",
		"2026-11-30T04:32:01Z k8s_event a",
		"2026-11-30T04:32:01Z pod_status b",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event list (-want +got):\n%s", diff)
	}
	if got, want := string(tl.Events[0].Data), string(envs[4].Data); got != want {
		t.Errorf("event c data = %s, want the envelope's data %s", got, want)
	}
}

// generated returns eventgen's default experiment and the UIDs of its pods, in first-seen order.
func generated(t *testing.T) ([]*events.Envelope, []string) {
	t.Helper()
	envs := eventgen.Generate(eventgen.Default())
	var uids []string
	seen := map[string]bool{}
	for _, env := range envs {
		if uid := env.PodUID(); uid != "" && !seen[uid] {
			seen[uid] = true
			uids = append(uids, uid)
		}
	}
	if len(uids) < 10 {
		t.Fatalf("eventgen generated %d pods, want a realistic set", len(uids))
	}
	return envs, uids
}

func TestBuildOrderIndependentAndIdempotent(t *testing.T) {
	envs, uids := generated(t)

	reversed := slices.Clone(envs)
	slices.Reverse(reversed)
	shuffled := slices.Clone(envs)
	rand.New(rand.NewPCG(7, 11)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	// Redelivery: every envelope twice, the copy decoded again from its bytes.
	duplicated := slices.Clone(shuffled)
	for _, env := range envs {
		again, err := events.Decode(env.Raw)
		if err != nil {
			t.Fatalf("decode %s: %v", env.ID, err)
		}
		duplicated = append(duplicated, again)
	}
	variants := []struct {
		name string
		envs []*events.Envelope
	}{{"reversed", reversed}, {"shuffled", shuffled}, {"duplicated", duplicated}}

	// The set must exercise what order could break.
	var preempted, censored, restarted, unschedulable, served, unobserved, interrupted bool
	for _, uid := range uids {
		want := timeline(t, uid, envs)
		preempted = preempted || deref(want.EndedReason) == align.EndPreempted
		censored = censored || want.Milestones.Scheduled == nil
		restarted = restarted || want.Counts.Restarts > 0
		unschedulable = unschedulable || want.Counts.FailedScheduling > 1
		served = served || want.Milestones.FirstSuccess != nil
		unobserved = unobserved || deref(want.EndedReason) == align.EndDeletedUnobserved
		interrupted = interrupted || len(want.Interruptions) > 0
		for _, v := range variants {
			got, ok := align.Build(uid, v.envs, events.DefaultLabelKeys)
			if !ok {
				t.Fatalf("%s: Build(%s): ok = false", v.name, uid)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: Build(%s) differs from in-order (-in order +%s):\n%s", v.name, uid, v.name, diff)
			}
		}
	}
	if !preempted || !censored || !restarted || !unschedulable || !served || !unobserved || !interrupted {
		t.Errorf("generated set lacks a case: preempted %v, censored %v, restarted %v, unschedulable %v, served %v, deleted unobserved %v, interrupted %v",
			preempted, censored, restarted, unschedulable, served, unobserved, interrupted)
	}
}

// Two gates removed one after the other: each reads its own removal; a gate never removed
// reads nil.
func TestGateWaits(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	snap := func(s float64, gates ...string) align.Event {
		b, _ := json.Marshal(events.PodStatus{Phase: events.PhasePending, SchedulingGates: gates})
		return align.Event{Kind: events.KindPodStatus, OccurredAt: at.Add(time.Duration(s * float64(time.Second))), Data: b}
	}
	sec := func(s float64) *time.Time { t := at.Add(time.Duration(s * float64(time.Second))); return &t }
	got := align.GateWaits([]align.Event{
		snap(0, "kueue.x-k8s.io/admission", "example.com/quota"),
		snap(1, "kueue.x-k8s.io/admission", "example.com/quota"),
		{Kind: events.KindK8sEvent, OccurredAt: at.Add(1500 * time.Millisecond), Data: []byte(`{"reason":"Scheduled"}`)},
		snap(2, "kueue.x-k8s.io/admission"),
		snap(3.5),
		snap(4),
	})
	want := []align.GateWait{
		{Name: "example.com/quota", FirstSeen: at, Removed: sec(2)},
		{Name: "kueue.x-k8s.io/admission", FirstSeen: at, Removed: sec(3.5)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	held := align.GateWaits([]align.Event{snap(0, "a"), snap(1, "a")})
	if len(held) != 1 || held[0].Removed != nil {
		t.Errorf("a gate still there: %+v, want removed nil", held)
	}
}
