package cluster_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/lab/cluster"
)

// The nodes the lab registers are read by the collector's GPU rules as the sharing mode they
// were built for: the lab advertises sharing the way the NVIDIA device plugin does.
func TestNodesReadBackAsTheirSharingMode(t *testing.T) {
	spec, err := cluster.Parse([]byte(`
pools:
- {name: h100, nodes: 1, gpu: {product: NVIDIA-H100-80GB-HBM3, count: 2}}
- {name: ts, nodes: 1, gpu: {product: NVIDIA-A100-SXM4-80GB, count: 2}, sharing: {mode: time-slicing, replicas: 4}}
- {name: mps, nodes: 1, gpu: {product: NVIDIA-A100-SXM4-80GB, count: 1}, sharing: {mode: mps, replicas: 2}}
- {name: mig, nodes: 1, gpu: {product: NVIDIA-A100-SXM4-80GB, count: 1}, sharing: {mode: mig, profile: 1g.10gb, slices: 7}}
- {name: migmixed, nodes: 1, gpu: {product: NVIDIA-A100-SXM4-80GB, count: 1}, sharing: {mode: mig, profile: 3g.40gb, slices: 2, strategy: mixed}}
`))
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Resource corev1.ResourceName
		Units    int64
		GPU      events.GPU
	}
	want := map[string]view{
		"gpu-h100-1":     {"nvidia.com/gpu", 2, events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-H100-80GB-HBM3", Sharing: "exclusive", Replicas: 1}},
		"gpu-ts-1":       {"nvidia.com/gpu", 8, events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-A100-SXM4-80GB", Sharing: "time-slicing", Replicas: 4}},
		"gpu-mps-1":      {"nvidia.com/gpu", 2, events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-A100-SXM4-80GB", Sharing: "mps", Replicas: 2}},
		"gpu-mig-1":      {"nvidia.com/gpu", 7, events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-A100-SXM4-80GB", Sharing: "mig", MIGProfile: "1g.10gb", Replicas: 1}},
		"gpu-migmixed-1": {"nvidia.com/mig-3g.40gb", 2, events.GPU{Resource: "nvidia.com/mig-3g.40gb", Count: 1, Model: "NVIDIA-A100-SXM4-80GB", Sharing: "mig", MIGProfile: "3g.40gb"}},
	}
	got := map[string]view{}
	for _, n := range spec.Nodes() {
		p, _ := spec.PoolOf(n.Name)
		q := n.Status.Allocatable[p.Resource()]
		pod := &corev1.Pod{Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: "m",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{p.Resource(): resource.MustParse("1")}}}}}}
		g := kube.GPUOf(pod, n)
		if g == nil {
			t.Fatalf("%s: no GPU read back", n.Name)
		}
		got[n.Name] = view{p.Resource(), q.Value(), *g}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nodes read back (-want +got):\n%s", diff)
	}
}

func TestDefaultAndRejects(t *testing.T) {
	if n := len(cluster.Default().Nodes()); n != 8 {
		t.Errorf("default cluster: %d nodes, want 8", n)
	}
	for name, y := range map[string]string{
		"no pools":       "pools: []",
		"bad mode":       "pools: [{name: a, nodes: 1, gpu: {product: X, count: 1}, sharing: {mode: magic}}]",
		"slicing 1":      "pools: [{name: a, nodes: 1, gpu: {product: X, count: 1}, sharing: {mode: time-slicing, replicas: 1}}]",
		"mig no profile": "pools: [{name: a, nodes: 1, gpu: {product: X, count: 1}, sharing: {mode: mig}}]",
		"unknown field":  "pools: [{name: a, nodes: 1, gpus: 3}]",
		"duplicate pool": "pools: [{name: a, nodes: 1}, {name: a, nodes: 1}]",
		"no product":     "pools: [{name: a, nodes: 1, gpu: {count: 1}}]",
		"bad cpu":        "pools: [{name: a, nodes: 1, cpu: lots}]",
	} {
		if _, err := cluster.Parse([]byte(y)); err == nil {
			t.Errorf("%s: parsed; want an error", name)
		}
	}
}
