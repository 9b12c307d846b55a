package kube_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

func TestGPUOf(t *testing.T) {
	recorded := recordedPods(t)
	derived := derivedPods(t)
	allNodes := nodes(t)
	useResource := func(name corev1.ResourceName, n string) func(*corev1.Pod, *corev1.Node) {
		return func(p *corev1.Pod, _ *corev1.Node) {
			r := &p.Spec.Containers[0].Resources
			delete(r.Requests, "nvidia.com/gpu")
			delete(r.Limits, "nvidia.com/gpu")
			if name != "" {
				r.Requests[name] = resource.MustParse(n)
				r.Limits[name] = resource.MustParse(n)
			}
		}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		node string // "" for none
		edit func(*corev1.Pod, *corev1.Node)
		want *events.GPU
	}{
		{
			name: "recorded H100 node, exclusive",
			pod:  recorded["day20-control-1"], node: "gpu-node-1",
			want: &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-H100-80GB-HBM3", Sharing: "exclusive"},
		},
		{
			name: "recorded A100 node, exclusive",
			pod:  recorded["day20-background-7"], node: "gpu-node-5",
			want: &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-A100-SXM4-80GB", Sharing: "exclusive"},
		},
		{
			name: "recorded unbound pod: unknown until bound",
			pod:  recorded["day20-oversized-1"],
			want: &events.GPU{Resource: "nvidia.com/gpu", Count: 3, Sharing: "unknown"},
		},
		{
			name: "time-slicing: -SHARED, replicas 4, strategy label",
			pod:  derived["day20-ts-1"], node: "gpu-node-ts",
			want: &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-A100-SXM4-80GB", Sharing: "time-slicing", Replicas: 4},
		},
		{
			name: "time-slicing without a strategy label: -SHARED and replicas 4",
			pod:  derived["day20-sharednostrategy-1"], node: "gpu-node-shared-nostrategy",
			want: &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-A100-SXM4-80GB", Sharing: "time-slicing", Replicas: 4},
		},
		{
			name: "MPS",
			pod:  derived["day20-mps-1"], node: "gpu-node-mps",
			want: &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-H100-80GB-HBM3", Sharing: "mps", Replicas: 4},
		},
		{
			name: "MIG single strategy: -MIG-1g.10gb product",
			pod:  derived["day20-migsingle-1"], node: "gpu-node-mig-single",
			want: &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-A100-SXM4-80GB", Sharing: "mig", MIGProfile: "1g.10gb"},
		},
		{
			name: "MIG mixed strategy: nvidia.com/mig-3g.40gb",
			pod:  derived["day20-migmixed-1"], node: "gpu-node-mig-mixed",
			want: &events.GPU{Resource: "nvidia.com/mig-3g.40gb", Count: 1, Model: "NVIDIA-A100-SXM4-80GB", Sharing: "mig", MIGProfile: "3g.40gb", Replicas: 1},
		},
		{
			name: "MIG mixed strategy, not bound: the resource names the profile",
			pod:  derived["day20-migpending-1"],
			want: &events.GPU{Resource: "nvidia.com/mig-3g.40gb", Count: 2, Sharing: "mig", MIGProfile: "3g.40gb"},
		},
		{
			name: "renamed shared resource on a time-slicing node",
			pod:  derived["day20-ts-1"], node: "gpu-node-ts",
			edit: useResource("nvidia.com/gpu.shared", "2"),
			want: &events.GPU{Resource: "nvidia.com/gpu.shared", Count: 2, Model: "NVIDIA-A100-SXM4-80GB", Sharing: "time-slicing", Replicas: 4},
		},
		{
			name: "MIG single strategy with time-slicing on top: still MIG",
			pod:  derived["day20-migsingle-1"], node: "gpu-node-mig-single",
			edit: func(_ *corev1.Pod, n *corev1.Node) {
				n.Labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-SHARED"
				n.Labels["nvidia.com/gpu.replicas"] = "2"
				n.Labels["nvidia.com/gpu.sharing-strategy"] = "time-slicing"
			},
			want: &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-A100-SXM4-80GB", Sharing: "mig", MIGProfile: "1g.10gb", Replicas: 2},
		},
		{
			name: "a node that is not the pod's is ignored",
			pod:  recorded["day20-control-1"], node: "gpu-node-ts",
			want: &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Sharing: "unknown"},
		},
		{
			name: "bound to a node without feature discovery labels",
			pod:  recorded["day20-control-1"], node: "gpu-node-1",
			edit: func(_ *corev1.Pod, n *corev1.Node) {
				for k := range n.Labels {
					if k != "kubernetes.io/hostname" {
						delete(n.Labels, k)
					}
				}
			},
			want: &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Sharing: "unknown"},
		},
		{
			name: "no nvidia.com resource",
			pod:  recorded["day20-control-1"], node: "gpu-node-1",
			edit: useResource("", ""),
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod.DeepCopy()
			var node *corev1.Node
			if tt.node != "" {
				node = allNodes[tt.node].DeepCopy()
			}
			if tt.edit != nil {
				tt.edit(pod, node)
			}
			if diff := cmp.Diff(tt.want, kube.GPUOf(pod, node)); diff != "" {
				t.Errorf("GPUOf (-want +got):\n%s", diff)
			}
		})
	}
}
