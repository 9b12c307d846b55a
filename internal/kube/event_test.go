package kube_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

type eventCase struct {
	head head
	data *events.K8sEvent // nil when EventEnvelope must return ok=false
}

func pod(name, uid string) *events.PodRef {
	return &events.PodRef{Namespace: "ai-lab", Name: name, UID: uid}
}

// scheduled is the envelope of the scheduler's Scheduled event for a pod.
func scheduled(eventUID, at, podName, podUID, node string) eventCase {
	return eventCase{
		head: head{
			ID: "k8s_event/" + eventUID + "/1", Kind: "k8s_event", Pod: pod(podName, podUID), Node: node,
			OccurredAt: at, ObservedAt: observed.Format(time.RFC3339Nano),
		},
		data: &events.K8sEvent{
			Reason: "Scheduled", Type: "Normal", Note: "Successfully assigned ai-lab/" + podName + " to " + node,
			ReportingController: "default-scheduler", Action: "Binding", EventUID: eventUID, Count: 1,
		},
	}
}

func TestEventEnvelope(t *testing.T) {
	obs := observed.Format(time.RFC3339Nano)
	priorityNote := "0/6 nodes are available: 1 Insufficient nvidia.com/gpu, 5 node(s) didn't match Pod's node affinity/selector. preemption: found a potential placement for pod on node gpu-node-3, preempting 1 victims"
	oversizedNote := "0/6 nodes are available: 6 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."
	// oversizedFailed is the oversized pod's FailedScheduling event, its count-th occurrence at at.
	oversizedFailed := func(count int, at string) eventCase {
		return eventCase{
			head: head{
				ID: "k8s_event/c528e4f7-d3a4-4f62-a2f0-05fe23a0b9e4/" + strconv.Itoa(count), Kind: "k8s_event",
				Pod:        pod("day20-oversized-1", "448e7f19-ce23-45d7-88f7-62be84ed6b52"),
				OccurredAt: at, ObservedAt: obs,
			},
			data: &events.K8sEvent{
				Reason: "FailedScheduling", Type: "Warning", Note: oversizedNote,
				ReportingController: "default-scheduler", Action: "Scheduling",
				EventUID: "c528e4f7-d3a4-4f62-a2f0-05fe23a0b9e4", Count: count,
				Scheduling: &events.SchedulingFailure{
					Total: 6, Reasons: []events.ReasonCount{reason("Insufficient nvidia.com/gpu", 6)}, Preemption: notHelpful(6),
				},
			},
		}
	}
	// preempted is the victim's Preempted event; related is the preemptor where the event names it.
	preempted := func(eventUID string, related *events.PodRef) eventCase {
		return eventCase{
			head: head{
				ID: "k8s_event/" + eventUID + "/1", Kind: "k8s_event", Pod: pod("day20-background-5", "e7ec26c1-98f6-4bc1-9426-b372d3295dd8"),
				Node: "gpu-node-3", OccurredAt: "2026-11-30T04:32:22.52671Z", ObservedAt: obs,
			},
			data: &events.K8sEvent{
				Reason: "Preempted", Type: "Normal", Note: "Preempted by pod 6ee92199-b806-4aed-80ba-6687a24a01b2 on node gpu-node-3",
				ReportingController: "default-scheduler", Action: "Preempting",
				EventUID: eventUID, Count: 1, Related: related,
			},
		}
	}

	// In the order of events.watch.jsonl, then events.derived.jsonl.
	want := []eventCase{
		scheduled("c3ea933f-544a-4670-a206-c68c20d22e55", "2026-11-30T04:32:22.205208Z", "day20-control-1", "8cf05df4-0368-4bb3-96b1-a018597cdeb0", "gpu-node-1"),
		scheduled("2306f758-81b5-49c0-92f6-7b30123bff74", "2026-11-30T04:32:22.210814Z", "day20-control-2", "7e3f0371-0c75-4622-8452-24e3d1004cd3", "gpu-node-2"),
		scheduled("28531e45-2bd8-401d-b8a7-7da5dfff2eb8", "2026-11-30T04:32:22.214618Z", "day20-affinity-1", "f5f34b45-149d-4f6e-b4cc-c816a06e80d3", "gpu-node-4"),
		scheduled("278126e2-de61-4b85-988c-8b1ba6e2b267", "2026-11-30T04:32:22.222553Z", "day20-affinity-2", "f4c1a56b-3fdb-4005-87d7-d308a5de534b", "gpu-node-5"),
		scheduled("4ade9c8d-8b5d-408c-b836-555a6ece8b6a", "2026-11-30T04:32:22.33793Z", "day20-background-1", "36de4a47-53de-4b49-acb0-2c6682025a00", "gpu-node-3"),
		scheduled("54148da6-282c-40b7-a6e9-5872ce41998f", "2026-11-30T04:32:22.346031Z", "day20-background-2", "d7bd0260-c9be-44ad-9773-e24fa3798ab1", "gpu-node-6"),
		scheduled("7d6b7c55-aadd-4d7c-9aa9-e566f6fcdcd2", "2026-11-30T04:32:22.352441Z", "day20-background-3", "27c08d72-0f36-4a29-b452-2cd95154cfd5", "gpu-node-1"),
		scheduled("6d9bcf1e-ef72-4810-88db-991ff4a5187f", "2026-11-30T04:32:22.364799Z", "day20-background-4", "86d48a5e-36d8-47cf-a53f-189646994e7a", "gpu-node-2"),
		scheduled("89bf032a-650d-40dc-9937-dcb32a4706cf", "2026-11-30T04:32:22.375008Z", "day20-background-5", "e7ec26c1-98f6-4bc1-9426-b372d3295dd8", "gpu-node-3"),
		scheduled("41fd68e6-52c0-4c57-a870-ce2a2b5832d0", "2026-11-30T04:32:22.389128Z", "day20-background-6", "ad0d8ea6-2497-4235-8af4-24ff23cc181f", "gpu-node-4"),
		scheduled("012d537b-b142-49c3-86c8-a3e935622cfd", "2026-11-30T04:32:22.393646Z", "day20-background-7", "2d9be9b7-b860-476f-aba0-1897b5056825", "gpu-node-5"),
		scheduled("1cd7e7c8-f909-45cc-908b-57ccb6b00aba", "2026-11-30T04:32:22.404245Z", "day20-background-8", "a9443f32-e509-4c68-8249-a842d389003b", "gpu-node-6"),
		{ // The preemptor: no fit, a victim found on gpu-node-3 (its nominated node, not its node yet).
			head: head{
				ID: "k8s_event/c4169fcb-9024-41e0-a150-68c366e71678/1", Kind: "k8s_event",
				Pod:        pod("day20-priority-1", "6ee92199-b806-4aed-80ba-6687a24a01b2"),
				OccurredAt: "2026-11-30T04:32:22.499261Z", ObservedAt: obs,
			},
			data: &events.K8sEvent{
				Reason: "FailedScheduling", Type: "Warning", Note: priorityNote,
				ReportingController: "default-scheduler", Action: "Scheduling",
				EventUID: "c4169fcb-9024-41e0-a150-68c366e71678", Count: 1,
				Scheduling: &events.SchedulingFailure{
					Total: 6,
					Reasons: []events.ReasonCount{
						reason("Insufficient nvidia.com/gpu", 1),
						reason("node(s) didn't match Pod's node affinity/selector", 5),
					},
					Preemption: victimsFound("gpu-node-3"),
				},
			},
		},
		// The victim: the node it was preempted on comes from the note; related is empty.
		preempted("f3a1c18a-3fa0-48b4-ac96-c6fd0fb38935", nil),
		scheduled("65493100-e9e9-450a-9d1c-a3d0e454cf03", "2026-11-30T04:32:23.538873Z", "day20-priority-1", "6ee92199-b806-4aed-80ba-6687a24a01b2", "gpu-node-3"),
		oversizedFailed(1, "2026-11-30T04:32:23.58492Z"),
		// Derived: the same event repeated, series count 3: a new occurrence at lastObservedTime.
		oversizedFailed(3, "2026-11-30T04:32:53.601234Z"),
		// Derived: an event about a node.
		{
			head: head{
				ID: "k8s_event/8e7d6c5b-4a39-4281-9706-f5e4d3c2b1a0/1", Kind: "k8s_event", Node: "gpu-node-cordoned",
				OccurredAt: "2026-11-30T04:40:05.123456Z", ObservedAt: obs,
			},
			data: &events.K8sEvent{
				Reason: "NodeNotReady", Type: "Normal", Note: "Node gpu-node-cordoned status is now: NodeNotReady",
				ReportingController: "node-controller", Action: "NodeNotReady",
				EventUID: "8e7d6c5b-4a39-4281-9706-f5e4d3c2b1a0", Count: 1,
			},
		},
		// Derived: about a Deployment, not ours.
		{},
		// Derived: written through core/v1 by an old kubelet: deprecated count, timestamps and source.
		{
			head: head{
				ID: "k8s_event/0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d/2", Kind: "k8s_event",
				Pod:        pod("day20-control-1", "8cf05df4-0368-4bb3-96b1-a018597cdeb0"),
				OccurredAt: "2026-11-30T04:33:40Z", ObservedAt: obs,
			},
			data: &events.K8sEvent{
				Reason: "BackOff", Type: "Warning",
				Note:                "Back-off restarting failed container model in pod day20-control-1_ai-lab(8cf05df4-0368-4bb3-96b1-a018597cdeb0)",
				ReportingController: "kubelet", EventUID: "0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d", Count: 2,
			},
		},
		// Derived: Preempted with related set to the preemptor.
		preempted("1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e", pod("day20-priority-1", "6ee92199-b806-4aed-80ba-6687a24a01b2")),
	}

	all := allEvents(t)
	if len(all) != len(want) {
		t.Fatalf("%d events in testdata, %d cases", len(all), len(want))
	}
	for i, ev := range all {
		tt := want[i]
		t.Run(ev.Object.Name+"/"+ev.Type, func(t *testing.T) {
			env, ok, err := kube.EventEnvelope(ev.Object, meta)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tt.data != nil) {
				t.Fatalf("ok = %v, want %v", ok, tt.data != nil)
			}
			if !ok {
				if env != nil {
					t.Errorf("envelope %s for an event that is not ours", env.ID)
				}
				return
			}
			if diff := cmp.Diff(tt.head, headOf(env)); diff != "" {
				t.Errorf("envelope (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.data, env.Payload); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			checkRoundTrip(t, env)
		})
	}
}

func TestEventCount(t *testing.T) {
	tests := []struct {
		name string
		want int
	}{
		{"day20-oversized-1.18ecb8703b4fdd93/ADDED", 1},    // recorded: no series, no deprecatedCount
		{"day20-oversized-1.18ecb8703b4fdd93/MODIFIED", 3}, // derived: series.count 3
		{"day20-control-1.18ecb8712a3b4c5d/ADDED", 2},      // derived: deprecatedCount 2
	}
	byKey := map[string]int{}
	for _, ev := range allEvents(t) {
		byKey[ev.Object.Name+"/"+ev.Type] = kube.EventCount(ev.Object)
	}
	for _, tt := range tests {
		if got, ok := byKey[tt.name]; !ok || got != tt.want {
			t.Errorf("EventCount(%s) = %d (found %v), want %d", tt.name, got, ok, tt.want)
		}
	}
}

// An event about a pod whose UID the codec rejects is an error, not a silent drop.
func TestEventEnvelopeInvalidPodUID(t *testing.T) {
	ev := allEvents(t)[0].Object.DeepCopy()
	ev.Regarding.UID = ""
	if _, ok, err := kube.EventEnvelope(ev, meta); err == nil || !ok {
		t.Errorf("ok, err = %v, %v; want true and an error", ok, err)
	}
}
