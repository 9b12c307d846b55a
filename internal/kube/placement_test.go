package kube_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

// richPlacement is the placement of the derived day20-rich-1 pod.
var richPlacement = &events.Placement{
	NodeSelector: map[string]string{"gpu-model": "H100", "kubernetes.io/os": "linux"},
	Required: []string{
		"accelerator In (nvidia-gpu,nvidia-gpu-v2) && nvidia.com/gpu.count Gt 1",
		"metadata.name In (gpu-node-1)",
	},
	Preferred: []string{
		"80: gpu-model In (H100)",
		"20: nvidia.com/mig.strategy DoesNotExist",
	},
	PodAffinity:      1,
	PodAntiAffinity:  2,
	PriorityClass:    "batch-no-preempt",
	Priority:         ptr(int32(500)),
	PreemptionPolicy: "Never",
	// Sorted; the two default tolerations are left out, the shortened unreachable one is not.
	Tolerations: []string{
		"dedicated Equal inference:NoSchedule",
		"node.kubernetes.io/unreachable Exists:NoExecute for 60s",
		"nvidia.com/gpu Exists:NoSchedule",
	},
}

func TestPlacementOf(t *testing.T) {
	recorded := recordedPods(t)
	derived := derivedPods(t)
	tests := []struct {
		name string
		pod  *corev1.Pod
		edit func(*corev1.Pod) // for cases built from a recorded pod in the test itself
		want *events.Placement
	}{
		{name: "control: nothing worth naming", pod: recorded["day20-control-1"], want: nil},
		{name: "oversized: nothing worth naming", pod: recorded["day20-oversized-1"], want: nil},
		{
			name: "affinity: required node affinity",
			pod:  recorded["day20-affinity-1"],
			want: &events.Placement{Required: []string{"accelerator In (nvidia-gpu)"}},
		},
		{
			name: "background: low priority class",
			pod:  recorded["day20-background-1"],
			want: &events.Placement{PriorityClass: "low-priority", Priority: ptr(int32(100))},
		},
		{
			name: "priority: pinned preemptor",
			pod:  recorded["day20-priority-1"],
			want: &events.Placement{
				Required:      []string{"kubernetes.io/hostname In (gpu-node-3)"},
				PriorityClass: "high-priority",
				Priority:      ptr(int32(1000000)),
			},
		},
		{name: "derived rich: every rule", pod: derived["day20-rich-1"], want: richPlacement},
		{
			name: "toleration only (ExtendedResourceToleration admission)",
			pod:  recorded["day20-control-1"],
			edit: func(p *corev1.Pod) {
				p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
			},
			want: &events.Placement{Tolerations: []string{"nvidia.com/gpu Exists:NoSchedule"}},
		},
		{
			name: "tolerate everything, value without operator",
			pod:  recorded["day20-control-1"],
			edit: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{
					{Operator: corev1.TolerationOpExists},
					{Key: "dedicated", Value: "inference"},
				}
			},
			want: &events.Placement{Tolerations: []string{"* Exists", "dedicated Equal inference"}},
		},
		{
			name: "preferred only, Lt and NotIn",
			pod:  recorded["day20-control-1"],
			edit: func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
						Weight: 50,
						Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
							{Key: "gpu-model", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"T4", "A10"}},
							{Key: "nvidia.com/gpu.memory", Operator: corev1.NodeSelectorOpLt, Values: []string{"81920"}},
						}},
					}},
				}}
			},
			want: &events.Placement{Preferred: []string{"50: gpu-model NotIn (T4,A10) && nvidia.com/gpu.memory Lt 81920"}},
		},
		{
			name: "priority without a class, PreemptLowerPriority not named",
			pod:  recorded["day20-control-1"],
			edit: func(p *corev1.Pod) { p.Spec.Priority = ptr(int32(-5)) },
			want: &events.Placement{Priority: ptr(int32(-5))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod
			if tt.edit != nil {
				pod = pod.DeepCopy()
				tt.edit(pod)
			}
			if diff := cmp.Diff(tt.want, kube.PlacementOf(pod)); diff != "" {
				t.Errorf("PlacementOf (-want +got):\n%s", diff)
			}
		})
	}
}
