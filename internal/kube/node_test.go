package kube_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

// fakeGPUNode is the status of a recorded node: 32 CPUs, 128Gi, 2 GPUs, Ready, no taints.
func fakeGPUNode(name, model, product string, accelerator bool) events.NodeStatus {
	labels := map[string]string{
		"gpu-model":                       model,
		"kubernetes.io/arch":              "amd64",
		"kubernetes.io/hostname":          name,
		"kubernetes.io/os":                "linux",
		"nvidia.com/gpu.count":            "2",
		"nvidia.com/gpu.present":          "true",
		"nvidia.com/gpu.product":          product,
		"nvidia.com/gpu.sharing-strategy": "none",
	}
	if accelerator {
		labels["accelerator"] = "nvidia-gpu"
	}
	res := map[string]string{"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "2", "pods": "110"}
	return events.NodeStatus{Labels: labels, Ready: true, Allocatable: res, Capacity: res, KubeletVersion: "v1.37.2-fake"}
}

func TestNodeStatus(t *testing.T) {
	allNodes := nodes(t)
	ts := fakeGPUNode("gpu-node-ts", "A100", "NVIDIA-A100-SXM4-80GB-SHARED", true)
	ts.Labels["nvidia.com/gpu.replicas"] = "4"
	ts.Labels["nvidia.com/gpu.sharing-strategy"] = "time-slicing"
	ts.Taints = []events.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: "NoSchedule"}}
	ts.Allocatable = map[string]string{"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "8", "pods": "110"}
	ts.Capacity = ts.Allocatable
	cordoned := fakeGPUNode("gpu-node-cordoned", "A100", "NVIDIA-A100-SXM4-80GB", false)
	cordoned.Unschedulable = true
	cordoned.Ready = false
	cordoned.Taints = []events.Taint{
		{Key: "node.kubernetes.io/unschedulable", Effect: "NoSchedule"},
		{Key: "node.kubernetes.io/unreachable", Effect: "NoExecute"},
	}
	tests := map[string]events.NodeStatus{
		"gpu-node-1": {
			Labels: map[string]string{
				"accelerator":                     "nvidia-gpu",
				"gpu-model":                       "H100",
				"kubernetes.io/arch":              "amd64",
				"kubernetes.io/hostname":          "gpu-node-1",
				"kubernetes.io/os":                "linux",
				"nvidia.com/gpu.count":            "2",
				"nvidia.com/gpu.present":          "true",
				"nvidia.com/gpu.product":          "NVIDIA-H100-80GB-HBM3",
				"nvidia.com/gpu.sharing-strategy": "none",
			},
			Ready:          true,
			Allocatable:    map[string]string{"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "2", "pods": "110"},
			Capacity:       map[string]string{"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "2", "pods": "110"},
			KubeletVersion: "v1.37.2-fake",
		},
		"gpu-node-2": fakeGPUNode("gpu-node-2", "H100", h100, true),
		"gpu-node-3": fakeGPUNode("gpu-node-3", "H100", h100, true),
		"gpu-node-4": fakeGPUNode("gpu-node-4", "H100", h100, true),
		"gpu-node-5": fakeGPUNode("gpu-node-5", "A100", a100, true),
		// The one node without accelerator=nvidia-gpu: the affinity pods cannot land here.
		"gpu-node-6":        fakeGPUNode("gpu-node-6", "A100", a100, false),
		"gpu-node-ts":       ts,
		"gpu-node-cordoned": cordoned,
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(want, kube.NodeStatus(allNodes[name])); diff != "" {
				t.Errorf("NodeStatus (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeEnvelope(t *testing.T) {
	allNodes := nodes(t)
	for name, node := range allNodes {
		for _, deleted := range []bool{false, true} {
			env, err := kube.NodeEnvelope(node, deleted, meta)
			if err != nil {
				t.Fatal(err)
			}
			want := head{
				ID:         "node_status/" + name + "/" + node.ResourceVersion,
				Kind:       "node_status",
				Node:       name,
				OccurredAt: "2026-11-30T04:35:00.123456Z",
				ObservedAt: "2026-11-30T04:35:00.123456Z",
			}
			wantData := kube.NodeStatus(node)
			if deleted {
				want.ID += "/deleted"
				wantData.Deleted = true
			}
			if diff := cmp.Diff(want, headOf(env)); diff != "" {
				t.Errorf("%s: envelope (-want +got):\n%s", name, diff)
			}
			if diff := cmp.Diff(&wantData, env.Payload); diff != "" {
				t.Errorf("%s: payload (-want +got):\n%s", name, diff)
			}
			checkRoundTrip(t, env)
		}
	}
}

// A node name may be 253 bytes long, which would make the id longer than the codec allows.
func TestNodeEnvelopeLongName(t *testing.T) {
	node := nodes(t)["gpu-node-1"].DeepCopy()
	node.Name = strings.Repeat("gpu-node-with-a-very-long-name.", 8) + "examp" // 253 bytes
	env, err := kube.NodeEnvelope(node, true, meta)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(env.ID, "node_status/sha256/") || len(env.ID) != len("node_status/sha256/")+64 {
		t.Errorf("id = %q, want node_status/sha256/<64 hex>", env.ID)
	}
	again, err := kube.NodeEnvelope(node, true, meta)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != env.ID {
		t.Errorf("ids differ: %q, %q", env.ID, again.ID)
	}
	checkRoundTrip(t, env)
}
