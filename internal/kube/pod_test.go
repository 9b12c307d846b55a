package kube_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

const (
	h100 = "NVIDIA-H100-80GB-HBM3"
	a100 = "NVIDIA-A100-SXM4-80GB"
)

func day20Labels(arm string) map[string]string {
	return map[string]string{"app": "day20", "schedlens.io/arm": arm, "schedlens.io/experiment": "day20", "schedlens.io/run": "1"}
}

// ready is the five conditions the simulated kubelet sets on a started pod, all at the same second.
func ready(at string) []events.Condition {
	var out []events.Condition
	for _, typ := range []string{"PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"} {
		out = append(out, events.Condition{Type: typ, Status: "True", LastTransitionTime: ts(at)})
	}
	return out
}

// running is the snapshot of a recorded day20 pod that runs one "model" container on one GPU,
// created, scheduled and started at 04:32:22.
func running(arm, rv, node, ip, model string, placement *events.Placement) events.PodStatus {
	return events.PodStatus{
		Phase: "Running", NodeName: node, PodIP: ip, HostIP: "127.0.0.1",
		Labels:   day20Labels(arm),
		Priority: ptr(int32(0)),
		Resources: &events.Resources{
			Requests: map[string]string{"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
			Limits:   map[string]string{"nvidia.com/gpu": "1"},
		},
		Conditions:        ready("2026-11-30T04:32:22Z"),
		Containers:        []events.ContainerStatus{{Name: "model", Ready: true, State: "running", StartedAt: ts("2026-11-30T04:32:22Z")}},
		CreationTimestamp: ts("2026-11-30T04:32:22Z"),
		ResourceVersion:   rv,
		GPU:               &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: model, Sharing: "exclusive"},
		Placement:         placement,
	}
}

// background is running for a low-priority background pod.
func background(rv, node, ip, model string) events.PodStatus {
	ps := running("background", rv, node, ip, model, &events.Placement{PriorityClass: "low-priority", Priority: ptr(int32(100))})
	ps.PriorityClass = "low-priority"
	ps.Priority = ptr(int32(100))
	return ps
}

func TestPodStatusRecorded(t *testing.T) {
	pods := recordedPods(t)
	allNodes := nodes(t)
	tests := map[string]events.PodStatus{
		// No selector, affinity, class or toleration beyond the two defaults: nothing to name.
		"day20-control-1":    running("control", "75", "gpu-node-1", "10.244.0.17", h100, nil),
		"day20-control-2":    running("control", "78", "gpu-node-2", "10.244.0.17", h100, nil),
		"day20-affinity-1":   running("affinity", "80", "gpu-node-4", "10.244.0.18", h100, &events.Placement{Required: []string{"accelerator In (nvidia-gpu)"}}),
		"day20-affinity-2":   running("affinity", "81", "gpu-node-5", "10.244.0.18", a100, &events.Placement{Required: []string{"accelerator In (nvidia-gpu)"}}),
		"day20-background-1": background("86", "gpu-node-3", "10.244.0.20", h100),
		"day20-background-2": background("94", "gpu-node-6", "10.244.0.20", a100),
		"day20-background-3": background("96", "gpu-node-1", "10.244.0.20", h100),
		"day20-background-4": background("101", "gpu-node-2", "10.244.0.20", h100),
		"day20-background-6": background("110", "gpu-node-4", "10.244.0.20", h100),
		"day20-background-7": background("111", "gpu-node-5", "10.244.0.20", a100),
		"day20-background-8": background("113", "gpu-node-6", "10.244.0.20", a100),
		"day20-priority-1": func() events.PodStatus {
			ps := running("priority", "123", "gpu-node-3", "10.244.0.18", h100, &events.Placement{
				Required:      []string{"kubernetes.io/hostname In (gpu-node-3)"},
				PriorityClass: "high-priority",
				Priority:      ptr(int32(1000000)),
			})
			ps.PriorityClass, ps.Priority = "high-priority", ptr(int32(1000000))
			// Created at :22, nominated, waited for its victim, bound and started at :23.
			ps.Conditions = ready("2026-11-30T04:32:23Z")
			ps.Containers[0].StartedAt = ts("2026-11-30T04:32:23Z")
			return ps
		}(),
		"day20-oversized-1": {
			Phase:    "Pending",
			Labels:   day20Labels("oversized"),
			Priority: ptr(int32(0)),
			Resources: &events.Resources{
				Requests: map[string]string{"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "3"},
				Limits:   map[string]string{"nvidia.com/gpu": "3"},
			},
			Conditions:        []events.Condition{{Type: "PodScheduled", Status: "False", Reason: "Unschedulable", LastTransitionTime: ts("2026-11-30T04:32:23Z")}},
			CreationTimestamp: ts("2026-11-30T04:32:23Z"),
			ResourceVersion:   "127",
			// Not bound: the mode of a plain nvidia.com/gpu depends on the node it lands on.
			GPU: &events.GPU{Resource: "nvidia.com/gpu", Count: 3, Sharing: "unknown"},
		},
	}
	if len(tests) != len(pods) {
		t.Errorf("%d cases for %d recorded pods", len(tests), len(pods))
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			pod := pods[name]
			if pod == nil {
				t.Fatalf("no pod %s in pods.list.json", name)
			}
			got := kube.PodStatus(pod, nodeOf(pod, allNodes))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("PodStatus (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodStatusVictim converts the preemption victim from its last two states in the watch stream:
// marked DisruptionTarget and deleted with grace 0 (rv 120), then the DELETED event (rv 121).
func TestPodStatusVictim(t *testing.T) {
	last := map[string]watchEvent[*corev1.Pod]{}
	for _, ev := range readWatch[*corev1.Pod](t, "pods.watch.jsonl") {
		if ev.Object.Name == "day20-background-5" {
			last[ev.Type] = ev
		}
	}
	victim := func(rv string) events.PodStatus {
		ps := background(rv, "gpu-node-3", "10.244.0.20", h100)
		ps.Conditions = append(ps.Conditions, events.Condition{
			Type: "DisruptionTarget", Status: "True", Reason: "PreemptionByScheduler", LastTransitionTime: ts("2026-11-30T04:32:22Z"),
		})
		// The second, grace-0 delete moved deletionTimestamp back from :52 to :23.
		ps.DeletionTimestamp = ts("2026-11-30T04:32:23Z")
		return ps
	}
	allNodes := nodes(t)
	tests := []struct {
		event   string
		deleted bool
		want    events.PodStatus
		wantID  string
	}{
		{"MODIFIED", false, victim("120"), "pod_status/e7ec26c1-98f6-4bc1-9426-b372d3295dd8/120"},
		{"DELETED", true, victim("121"), "pod_status/e7ec26c1-98f6-4bc1-9426-b372d3295dd8/121/deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			pod := last[tt.event].Object
			if diff := cmp.Diff(tt.want, kube.PodStatus(pod, nodeOf(pod, allNodes))); diff != "" {
				t.Errorf("PodStatus (-want +got):\n%s", diff)
			}
			env, err := kube.PodEnvelope(pod, nodeOf(pod, allNodes), tt.deleted, meta)
			if err != nil {
				t.Fatal(err)
			}
			if env.ID != tt.wantID {
				t.Errorf("id = %q, want %q", env.ID, tt.wantID)
			}
			if got := env.Payload.(*events.PodStatus).Deleted; got != tt.deleted {
				t.Errorf("deleted = %v, want %v", got, tt.deleted)
			}
			checkRoundTrip(t, env)
		})
	}
}

func TestPodStatusDerived(t *testing.T) {
	pods := derivedPods(t)
	allNodes := nodes(t)
	// day20-rich-1: two containers, a sidecar and a big init container, three container states.
	want := events.PodStatus{
		Phase: "Running", NodeName: "gpu-node-1", PodIP: "10.244.0.17", HostIP: "127.0.0.1",
		Labels:        day20Labels("rich"),
		PriorityClass: "batch-no-preempt",
		Priority:      ptr(int32(500)),
		Resources: &events.Resources{
			// cpu: max(1 + 250m + 100m sidecar, 4 init + 100m sidecar started before it) = 4100m;
			// memory: max(1Gi + 64Mi + 32Mi, 512Mi + 32Mi) = 1120Mi.
			Requests: map[string]string{"cpu": "4100m", "memory": "1120Mi", "nvidia.com/gpu": "1"},
			// memory limit: max(128Mi, 2Gi init) = 2Gi.
			Limits: map[string]string{"memory": "2Gi", "nvidia.com/gpu": "1"},
		},
		Conditions: []events.Condition{
			{Type: "PodScheduled", Status: "True", LastTransitionTime: ts("2026-11-30T04:32:22Z")},
			{Type: "PodReadyToStartContainers", Status: "True", LastTransitionTime: ts("2026-11-30T04:32:22Z")},
			{Type: "Initialized", Status: "True", LastTransitionTime: ts("2026-11-30T04:32:22Z")},
			{Type: "ContainersReady", Status: "False", Reason: "ContainersNotReady", LastTransitionTime: ts("2026-11-30T04:32:40Z")},
			{Type: "Ready", Status: "False", Reason: "ContainersNotReady", LastTransitionTime: ts("2026-11-30T04:32:40Z")},
		},
		Containers: []events.ContainerStatus{
			{Name: "exporter", RestartCount: 3, State: "terminated", Reason: "OOMKilled", StartedAt: ts("2026-11-30T04:32:30Z"), ExitCode: ptr(137)},
			{Name: "model", RestartCount: 1, State: "waiting", Reason: "CrashLoopBackOff"},
		},
		CreationTimestamp: ts("2026-11-30T04:32:22Z"),
		Owner:             &events.Owner{Kind: "ReplicaSet", Name: "day20-rich-5d8f9c7b6"},
		ResourceVersion:   "307",
		GPU:               &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: h100, Sharing: "exclusive"},
		Placement:         richPlacement,
	}
	pod := pods["day20-rich-1"]
	if diff := cmp.Diff(want, kube.PodStatus(pod, nodeOf(pod, allNodes))); diff != "" {
		t.Errorf("PodStatus (-want +got):\n%s", diff)
	}
}

// TestPodEnvelope checks the envelope of every recorded and derived pod: id, pod ref, node, times,
// experiment, payload, and that it encodes and decodes to itself.
func TestPodEnvelope(t *testing.T) {
	allNodes := nodes(t)
	pods := recordedPods(t)
	for name, pod := range derivedPods(t) {
		pods[name] = pod
	}
	for name, pod := range pods {
		t.Run(name, func(t *testing.T) {
			env, err := kube.PodEnvelope(pod, nodeOf(pod, allNodes), false, meta)
			if err != nil {
				t.Fatal(err)
			}
			want := head{
				ID:         "pod_status/" + string(pod.UID) + "/" + pod.ResourceVersion,
				Kind:       "pod_status",
				Pod:        &events.PodRef{Namespace: "ai-lab", Name: name, UID: string(pod.UID)},
				Node:       pod.Spec.NodeName,
				Experiment: &events.ExperimentRef{Name: "day20", Arm: pod.Labels["schedlens.io/arm"], Run: "1"},
				OccurredAt: "2026-11-30T04:35:00.123456Z",
				ObservedAt: "2026-11-30T04:35:00.123456Z",
			}
			if diff := cmp.Diff(want, headOf(env)); diff != "" {
				t.Errorf("envelope (-want +got):\n%s", diff)
			}
			wantData := kube.PodStatus(pod, nodeOf(pod, allNodes))
			wantData.Scope = &events.Scope{Namespaces: []string{"ai-lab"}, Selector: "schedlens.io/experiment"}
			if diff := cmp.Diff(&wantData, env.Payload); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
			checkRoundTrip(t, env)
		})
	}
}

func TestPodEnvelopeWithoutExperiment(t *testing.T) {
	pod := recordedPods(t)["day20-control-1"].DeepCopy()
	delete(pod.Labels, "schedlens.io/experiment")
	env, err := kube.PodEnvelope(pod, nil, false, meta)
	if err != nil {
		t.Fatal(err)
	}
	if env.Experiment != nil {
		t.Errorf("experiment = %+v, want nil for a pod without the experiment label", env.Experiment)
	}
	checkRoundTrip(t, env)
}

func TestPodEnvelopeInvalidUID(t *testing.T) {
	pod := recordedPods(t)["day20-control-1"].DeepCopy()
	pod.UID = "not-a-uid"
	if _, err := kube.PodEnvelope(pod, nil, false, meta); err == nil {
		t.Error("PodEnvelope accepted a pod whose UID the codec rejects")
	}
}

// TestPodEnvelopeWatch converts every state of the recorded watch stream: one distinct id per
// state, the DELETED one marked, each encoding and decoding to itself.
func TestPodEnvelopeWatch(t *testing.T) {
	allNodes := nodes(t)
	seen := map[string]bool{}
	var deletedIDs []string
	for _, ev := range readWatch[*corev1.Pod](t, "pods.watch.jsonl") {
		pod := ev.Object
		env, err := kube.PodEnvelope(pod, nodeOf(pod, allNodes), ev.Type == "DELETED", meta)
		if err != nil {
			t.Fatalf("%s %s rv %s: %v", ev.Type, pod.Name, pod.ResourceVersion, err)
		}
		if seen[env.ID] {
			t.Errorf("id %s twice", env.ID)
		}
		seen[env.ID] = true
		if env.Payload.(*events.PodStatus).Deleted {
			deletedIDs = append(deletedIDs, env.ID)
		}
		checkRoundTrip(t, env)
	}
	if diff := cmp.Diff([]string{"pod_status/e7ec26c1-98f6-4bc1-9426-b372d3295dd8/121/deleted"}, deletedIDs); diff != "" {
		t.Errorf("deleted snapshots (-want +got):\n%s", diff)
	}
	if len(seen) != 46 {
		t.Errorf("%d envelopes, want one per watch event (46)", len(seen))
	}
}
