package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/labels"
	"github.com/schedlens/schedlens/internal/pgtest"
)

// envelope encodes and decodes one envelope, as the correlator receives it.
func envelope(t *testing.T, kind events.Kind, id string, at time.Time, pod *events.PodRef, node string, exp *events.ExperimentRef, payload any) *events.Envelope {
	t.Helper()
	b, err := events.Encode(&events.Envelope{V: events.Version, ID: id, Kind: kind, Cluster: "lab", Source: "test", OccurredAt: at, ObservedAt: at,
		Pod: pod, Node: node, Experiment: exp, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	e, err := events.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// GET /v1/labels: the node labels the window's pods place on — how (required, preferred), the
// nodes carrying each value and those without, the workload and experiment arm depending on
// them, what the registry documents (the label it lacks: null), and a node whose value changed
// in the window; and the device attribute a DRA claim's selector reads, with its device's value.
func TestLabels(t *testing.T) {
	db := pgtest.DB(t)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	node := func(name string, at time.Time, ls map[string]string) *events.Envelope {
		return envelope(t, events.KindNodeStatus, "node/"+name+"/"+at.Format(time.RFC3339), at, nil, name, nil, &events.NodeStatus{Ready: true, Labels: ls})
	}
	pod := &events.PodRef{Namespace: "ai-lab", Name: "infer-1", UID: "00000000-0000-4000-8000-000000000001"}
	envs := []*events.Envelope{
		node("gpu-1", t0, map[string]string{"accelerator": "nvidia-gpu", "gpu-model": "H100"}),
		node("gpu-2", t0, map[string]string{"gpu-model": "A100"}),
		envelope(t, events.KindPodStatus, "pod/1", t0.Add(time.Minute), pod, "", &events.ExperimentRef{Name: "day20", Arm: "affinity", Run: "1"}, &events.PodStatus{
			Phase: events.PhaseRunning, NodeName: "gpu-1", CreationTimestamp: &t0,
			Labels:    map[string]string{events.LabelExperiment: "day20", events.LabelArm: "affinity", events.LabelRun: "1"},
			Owner:     &events.Owner{Kind: "ReplicaSet", Name: "infer-5d4c7b9f8"},
			Placement: &events.Placement{Required: []string{"accelerator In (nvidia-gpu)"}, Preferred: []string{"50: gpu-model In (H100) && metadata.name In (gpu-1)"}}}),
		node("gpu-2", t0.Add(2*time.Minute), map[string]string{"gpu-model": "A100-80GB"}),
		// A DRA pod whose claim selects on the device's productName.
		envelope(t, events.KindPodStatus, "pod/2", t0.Add(time.Minute), &events.PodRef{Namespace: "ai-lab", Name: "dra-1", UID: "00000000-0000-4000-8000-000000000002"}, "", nil, &events.PodStatus{
			Phase: events.PhaseRunning, NodeName: "gpu-h200-0", CreationTimestamp: &t0,
			Claims: []events.PodClaim{{Name: "gpu", Claim: "dra-1-gpu", Selectors: []string{`device.attributes["gpu.nvidia.com"].productName == "NVIDIA H200"`},
				Devices: []events.ClaimDevice{{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "gpu-h200-0", Device: "gpu-0", Node: "gpu-h200-0",
					Attributes: map[string]string{"gpu.nvidia.com/productName": "NVIDIA H200"}}}}}}),
		envelope(t, events.KindLabelRegistry, "label_registry/platform/node-labels/7", t0, nil, "", nil, &events.LabelRegistry{Namespace: "platform", Name: "node-labels",
			Labels: []events.LabelDoc{{Key: "accelerator", Source: "GPU feature discovery", Owner: "platform-gpu", Use: "hard", Registry: "platform/node-labels"}}}),
	}
	if _, err := db.Append(context.Background(), envs, nil); err != nil {
		t.Fatal(err)
	}
	srv := apitest.Serve(t, db)
	var got api.LabelsAnswer
	apitest.GetJSON(t, srv.URL+"/v1/labels?from=2026-12-01T08:00:00Z&to=2026-12-01T10:00:00Z", &got)
	want := []labels.Label{
		{Key: "accelerator", Kind: labels.KindNodeLabel, Uses: []string{"required"}, Values: []labels.Value{{Value: "nvidia-gpu", Nodes: []string{"gpu-1"}}}, NodesWithout: []string{"gpu-2"},
			Dependents: []labels.Dependent{{Namespace: "ai-lab", Workload: "ReplicaSet/infer-5d4c7b9f8", Experiment: "day20", Arm: "affinity", Uses: []string{"required"}}},
			Documented: &events.LabelDoc{Key: "accelerator", Source: "GPU feature discovery", Owner: "platform-gpu", Use: "hard", Registry: "platform/node-labels"},
			Drift:      []labels.Drift{}},
		{Key: "gpu-model", Kind: labels.KindNodeLabel, Uses: []string{"preferred"}, Values: []labels.Value{{Value: "A100-80GB", Nodes: []string{"gpu-2"}}, {Value: "H100", Nodes: []string{"gpu-1"}}},
			NodesWithout: []string{}, Dependents: []labels.Dependent{{Namespace: "ai-lab", Workload: "ReplicaSet/infer-5d4c7b9f8", Experiment: "day20", Arm: "affinity", Uses: []string{"preferred"}}},
			Drift: []labels.Drift{{Node: "gpu-2", Values: []string{"A100", "A100-80GB"}}}},
		{Key: "gpu.nvidia.com/productName", Kind: labels.KindDeviceAttribute, Uses: []string{"deviceSelector"},
			Values: []labels.Value{{Value: "NVIDIA H200", Nodes: []string{"gpu-h200-0"}}}, NodesWithout: []string{},
			Dependents: []labels.Dependent{{Namespace: "ai-lab", Workload: "Pod/dra-1", Uses: []string{"deviceSelector"}}}, Drift: []labels.Drift{}},
	}
	if diff := cmp.Diff(want, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got.Registries != 1 || len(got.RegistryErrors) != 0 {
		t.Errorf("registries %d, errors %v", got.Registries, got.RegistryErrors)
	}
	// Before the pod lived, no rule uses any label.
	apitest.GetJSON(t, srv.URL+"/v1/labels?from=2026-12-01T07:00:00Z&to=2026-12-01T08:00:00Z", &got)
	if len(got.Labels) != 0 {
		t.Errorf("labels of an empty window: %+v", got.Labels)
	}
}
