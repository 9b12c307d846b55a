package labels_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/labels"
)

// The keys of a placement as the collector writes it: nodeSelector keys, each expression's key
// of every required term and of every weighted preferred term; fields and empty terms are not
// labels.
func TestKeysOf(t *testing.T) {
	got := labels.KeysOf(&events.Placement{
		NodeSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
		Required:     []string{"accelerator In (nvidia-gpu) && topology.kubernetes.io/zone NotIn (a,b)", "(empty term)", "metadata.name In (gpu-1)"},
		Preferred:    []string{"50: gpu-model In (H100)", "10: accelerator Exists"},
	})
	want := map[string]map[string]bool{
		"nvidia.com/gpu.product":      {labels.UseNodeSelector: true},
		"accelerator":                 {labels.UseRequired: true, labels.UsePreferred: true},
		"topology.kubernetes.io/zone": {labels.UseRequired: true},
		"gpu-model":                   {labels.UsePreferred: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if len(labels.KeysOf(nil)) != 0 {
		t.Error("a pod without placement uses labels")
	}
}

// The first registry (by namespace and name) documents a key; the others' entries for it are
// not taken; registries' unreadable entries are listed.
func TestBuildRegistries(t *testing.T) {
	pods := []labels.Pod{{Namespace: "a", WorkloadKind: "Deployment", WorkloadName: "x", Placement: &events.Placement{NodeSelector: map[string]string{"k": "v"}}}}
	regs := []events.LabelRegistry{
		{Namespace: "a", Name: "r1", Labels: []events.LabelDoc{{Key: "k", Source: "s1", Owner: "o1", Registry: "a/r1"}}, Errors: []string{"bad"}},
		{Namespace: "b", Name: "r2", Labels: []events.LabelDoc{{Key: "k", Source: "s2", Owner: "o2", Registry: "b/r2"}}},
	}
	a := labels.Build(pods, []labels.Node{{Name: "n", Labels: map[string]string{"k": "v"}}}, regs)
	if len(a.Labels) != 1 || a.Labels[0].Documented == nil || a.Labels[0].Documented.Registry != "a/r1" || a.Registries != 2 || len(a.RegistryErrors) != 1 {
		t.Errorf("answer %+v", a)
	}
}

// An experiment arm's bare pods depend on a label as their arm, once; a Deployment's pods as it.
func TestDependents(t *testing.T) {
	sel := &events.Placement{NodeSelector: map[string]string{"k": "v"}}
	pods := []labels.Pod{
		{Namespace: "lab", WorkloadKind: "Pod", WorkloadName: "day20-mig-r1-1", Experiment: "day20", Arm: "mig", Placement: sel},
		{Namespace: "lab", WorkloadKind: "Pod", WorkloadName: "day20-mig-r2-1", Experiment: "day20", Arm: "mig", Placement: sel},
		{Namespace: "prod", WorkloadKind: "Deployment", WorkloadName: "infer", Placement: sel},
		{Namespace: "prod", WorkloadKind: "Pod", WorkloadName: "debug", Placement: sel},
	}
	got := labels.Build(pods, nil, nil).Labels[0].Dependents
	want := []labels.Dependent{
		{Namespace: "lab", Experiment: "day20", Arm: "mig", Uses: []string{"nodeSelector"}},
		{Namespace: "prod", Workload: "Deployment/infer", Uses: []string{"nodeSelector"}},
		{Namespace: "prod", Workload: "Pod/debug", Uses: []string{"nodeSelector"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dependents (-want +got):\n%s", diff)
	}
}

// A DRA claim's selectors put the device attributes they read beside the node labels: values
// from the devices allocated to the pods, with those devices' nodes; documented by a registry
// like a label.
func TestDeviceAttributes(t *testing.T) {
	claim := func(node, profile string) []events.PodClaim {
		return []events.PodClaim{{Name: "mig", Selectors: []string{`device.attributes["gpu.nvidia.com"].profile == "1g.10gb" || device.attributes["gpu.nvidia.com"].profile == "2g.20gb"`},
			Devices: []events.ClaimDevice{{Node: node, Attributes: map[string]string{"gpu.nvidia.com/profile": profile}}}}}
	}
	pods := []labels.Pod{
		{Namespace: "prod", WorkloadKind: "Deployment", WorkloadName: "infer", Claims: claim("mig-1", "1g.10gb"),
			Placement: &events.Placement{NodeSelector: map[string]string{"pool": "mig"}}},
		{Namespace: "prod", WorkloadKind: "Deployment", WorkloadName: "infer", Claims: claim("mig-2", "1g.10gb")},
		{Namespace: "prod", WorkloadKind: "Deployment", WorkloadName: "batch", Claims: claim("mig-2", "2g.20gb")},
		{Namespace: "prod", WorkloadKind: "Deployment", WorkloadName: "waiting", Claims: []events.PodClaim{{Name: "mig", Selectors: claim("", "")[0].Selectors}}},
	}
	regs := []events.LabelRegistry{{Namespace: "a", Name: "r", Labels: []events.LabelDoc{{Key: "gpu.nvidia.com/profile", Source: "gpu.nvidia.com driver", Owner: "gpu-team"}}}}
	a := labels.Build(pods, []labels.Node{{Name: "mig-1", Labels: map[string]string{"pool": "mig"}}}, regs)
	if len(a.Labels) != 2 || a.Labels[0].Key != "pool" || a.Labels[0].Kind != labels.KindNodeLabel {
		t.Fatalf("labels %+v, want pool then gpu.nvidia.com/profile", a.Labels)
	}
	got := a.Labels[1]
	want := labels.Label{Key: "gpu.nvidia.com/profile", Kind: labels.KindDeviceAttribute, Uses: []string{labels.UseDeviceSelector},
		Values:       []labels.Value{{Value: "1g.10gb", Nodes: []string{"mig-1", "mig-2"}}, {Value: "2g.20gb", Nodes: []string{"mig-2"}}},
		NodesWithout: []string{}, Drift: []labels.Drift{},
		Dependents: []labels.Dependent{
			{Namespace: "prod", Workload: "Deployment/batch", Uses: []string{labels.UseDeviceSelector}},
			{Namespace: "prod", Workload: "Deployment/infer", Uses: []string{labels.UseDeviceSelector}},
			{Namespace: "prod", Workload: "Deployment/waiting", Uses: []string{labels.UseDeviceSelector}},
		},
		Documented: &regs[0].Labels[0]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("device attribute (-want +got):\n%s", diff)
	}
}
