package kube_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

func reason(text string, nodes int) events.ReasonCount {
	return events.ReasonCount{Reason: text, Nodes: nodes}
}

// notHelpful is the preemption clause of a note when preempting frees none of the n nodes.
func notHelpful(n int) *events.PreemptionAttempt {
	return &events.PreemptionAttempt{
		Outcome: "not_helpful",
		Reasons: []events.ReasonCount{reason("Preemption is not helpful for scheduling", n)},
		Note:    fmt.Sprintf("preemption: 0/%d nodes are available: %d Preemption is not helpful for scheduling.", n, n),
	}
}

// victimsFound is the preemption clause of a note when preempting one pod on node makes room.
func victimsFound(node string) *events.PreemptionAttempt {
	return &events.PreemptionAttempt{
		Outcome: "victims_found", Node: node, Victims: 1,
		Note: "preemption: found a potential placement for pod on node " + node + ", preempting 1 victims",
	}
}

func TestParseFailedScheduling(t *testing.T) {
	tests := []struct {
		name string
		note string
		want *events.SchedulingFailure
	}{
		{
			name: "recorded: pinned preemptor finds a victim",
			note: "0/6 nodes are available: 1 Insufficient nvidia.com/gpu, 5 node(s) didn't match Pod's node affinity/selector. preemption: found a potential placement for pod on node gpu-node-3, preempting 1 victims",
			want: &events.SchedulingFailure{
				Available: 0, Total: 6,
				Reasons:    []events.ReasonCount{reason("Insufficient nvidia.com/gpu", 1), reason("node(s) didn't match Pod's node affinity/selector", 5)},
				Preemption: victimsFound("gpu-node-3"),
			},
		},
		{
			name: "recorded: oversized pod, preemption not helpful",
			note: "0/6 nodes are available: 6 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.",
			want: &events.SchedulingFailure{
				Total:      6,
				Reasons:    []events.ReasonCount{reason("Insufficient nvidia.com/gpu", 6)},
				Preemption: notHelpful(6),
			},
		},
		{
			name: "LAB.md: three nodes, victim on gpu-node-2",
			note: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: found a potential placement for pod on node gpu-node-2, preempting 1 victims",
			want: &events.SchedulingFailure{
				Total:      3,
				Reasons:    []events.ReasonCount{reason("Insufficient nvidia.com/gpu", 3)},
				Preemption: victimsFound("gpu-node-2"),
			},
		},
		{
			name: "older taint text with braces, some victims not found",
			note: "0/6 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, 2 node(s) were unschedulable, 3 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 1 No preemption victims found for incoming pod, 5 Preemption is not helpful for scheduling.",
			want: &events.SchedulingFailure{
				Total: 6,
				Reasons: []events.ReasonCount{
					reason("node(s) had untolerated taint {nvidia.com/gpu: present}", 1),
					reason("node(s) were unschedulable", 2),
					reason("Insufficient nvidia.com/gpu", 3),
				},
				Preemption: &events.PreemptionAttempt{
					Outcome: "no_placement",
					Reasons: []events.ReasonCount{reason("No preemption victims found for incoming pod", 1), reason("Preemption is not helpful for scheduling", 5)},
					Note:    "preemption: 0/6 nodes are available: 1 No preemption victims found for incoming pod, 5 Preemption is not helpful for scheduling.",
				},
			},
		},
		{
			name: "v1.37 taint text and pod anti-affinity",
			note: "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) didn't match pod anti-affinity rules. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.",
			want: &events.SchedulingFailure{
				Total:      4,
				Reasons:    []events.ReasonCount{reason("node(s) had untolerated taint(s)", 1), reason("node(s) didn't match pod anti-affinity rules", 3)},
				Preemption: notHelpful(4),
			},
		},
		{
			name: "no preemption clause (preemption disabled)",
			note: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
			want: &events.SchedulingFailure{Total: 3, Reasons: []events.ReasonCount{reason("node(s) didn't match Pod's node affinity/selector", 3)}},
		},
		{
			name: "comma inside braces does not split",
			note: "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: inference, training}.",
			want: &events.SchedulingFailure{Total: 2, Reasons: []events.ReasonCount{
				reason("Insufficient cpu", 1),
				reason("node(s) had untolerated taint {dedicated: inference, training}", 1),
			}},
		},
		{
			name: "old taint text with a comma outside braces",
			note: "0/3 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate, 2 Insufficient memory.",
			want: &events.SchedulingFailure{Total: 3, Reasons: []events.ReasonCount{
				reason("node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate", 1),
				reason("Insufficient memory", 2),
			}},
		},
		{
			name: "PreFilter message applies to every node",
			note: "0/6 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.",
			want: &events.SchedulingFailure{
				Total:      6,
				Reasons:    []events.ReasonCount{reason("pod has unbound immediate PersistentVolumeClaims", 6)},
				Preemption: notHelpful(6),
			},
		},
		{
			name: "preemptionPolicy Never",
			note: "0/6 nodes are available: 6 Insufficient nvidia.com/gpu. preemption: not eligible due to preemptionPolicy=Never.",
			want: &events.SchedulingFailure{
				Total:   6,
				Reasons: []events.ReasonCount{reason("Insufficient nvidia.com/gpu", 6)},
				Preemption: &events.PreemptionAttempt{
					Outcome: "no_placement",
					Note:    "preemption: not eligible due to preemptionPolicy=Never.",
				},
			},
		},
		{
			name: "pod group preemption",
			note: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. pod group preemption: found a potential placement for pod on node gpu-node-1, preempting 2 victims",
			want: &events.SchedulingFailure{
				Total:   4,
				Reasons: []events.ReasonCount{reason("Insufficient nvidia.com/gpu", 4)},
				Preemption: &events.PreemptionAttempt{
					Outcome: "victims_found", Node: "gpu-node-1", Victims: 2,
					Note: "pod group preemption: found a potential placement for pod on node gpu-node-1, preempting 2 victims",
				},
			},
		},
		{
			name: "no nodes at all",
			note: "no nodes available to schedule pods",
			want: &events.SchedulingFailure{Reasons: []events.ReasonCount{reason("no nodes available to schedule pods", 0)}},
		},
		{
			name: "nothing after the head",
			note: "0/0 nodes are available:",
			want: &events.SchedulingFailure{},
		},
		{name: "empty", note: "", want: nil},
		{name: "a Scheduled note", note: "Successfully assigned ai-lab/day20-control-1 to gpu-node-1", want: nil},
		{name: "a bind error", note: `running PreBind plugin "VolumeBinding": binding volumes: timed out waiting for the condition`, want: nil},
		{name: "no counts in the head", note: "nodes are available: 3 Insufficient cpu.", want: nil},
		{name: "not a number", note: "0/six nodes are available: 6 Insufficient cpu.", want: nil},
		{name: "head glued to text", note: "0/6 nodes are availableish", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, kube.ParseFailedScheduling(tt.note)); diff != "" {
				t.Errorf("ParseFailedScheduling(%q) (-want +got):\n%s", tt.note, diff)
			}
		})
	}
}

// Each note's class is the filter the nodes that came closest failed, from the scheduler's own
// texts.
func TestReasonClass(t *testing.T) {
	for _, c := range []struct{ note, want string }{
		{"", kube.ClassNone},
		{"no nodes available to schedule pods", kube.ClassNoNodes},
		{"0/6 nodes are available: 6 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.", kube.ClassInsufficientGPU},
		{"0/6 nodes are available: 1 Insufficient nvidia.com/gpu, 5 node(s) didn't match Pod's node affinity/selector.", kube.ClassInsufficientGPU},
		{"0/6 nodes are available: 2 Insufficient cpu, 2 Insufficient nvidia.com/mig-1g.10gb, 2 node(s) had untolerated taint {dedicated: gpu}.", kube.ClassInsufficientGPU},
		{"0/3 nodes are available: 3 Insufficient memory.", kube.ClassInsufficientResources},
		{"0/3 nodes are available: 3 Too many pods.", kube.ClassInsufficientResources},
		{"0/4 nodes are available: 1 node(s) were unschedulable, 3 node(s) had untolerated taint {nvidia.com/gpu: present}.", kube.ClassTaint},
		{"0/4 nodes are available: 4 node(s) had taint {a: b}, that the pod didn't tolerate.", kube.ClassTaint},
		{"0/4 nodes are available: 4 node(s) were unschedulable.", kube.ClassNodeUnschedulable},
		{"0/6 nodes are available: 6 node(s) didn't match Pod's node affinity/selector.", kube.ClassNodeAffinity},
		{"0/2 nodes are available: 2 node(s) didn't match the requested node name.", kube.ClassNodeAffinity},
		{"0/5 nodes are available: 2 node(s) had volume node affinity conflict, 3 node(s) didn't match Pod's node affinity/selector.", kube.ClassVolume},
		{"0/5 nodes are available: pod has unbound immediate PersistentVolumeClaims.", kube.ClassVolume},
		{"0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 4 node(s) didn't match pod topology spread constraints.", kube.ClassTopologySpread},
		{"0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 4 node(s) didn't match pod anti-affinity rules.", kube.ClassPodAffinity},
		{"0/5 nodes are available: 5 node(s) didn't satisfy existing pods anti-affinity rules.", kube.ClassPodAffinity},
		{"0/5 nodes are available: 5 node(s) didn't have free ports for the requested pod ports.", kube.ClassOther},
		// kube-scheduler's DynamicResources plugin (the integration tests' exact note, and the
		// PreFilter form, which names no node count).
		{"0/8 nodes are available: 8 cannot allocate all claims. still not schedulable, preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling.", kube.ClassDynamicResources},
		{"0/4 nodes are available: resourceclaim in use. no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.", kube.ClassDynamicResources},
		{"0/4 nodes are available: 2 Insufficient nvidia.com/gpu, 2 resourceclaim not available on the node.", kube.ClassDynamicResources},
		{"0/3 nodes are available: 3 timed out trying to allocate devices.", kube.ClassDynamicResources},
		{"0/5 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 4 node(s) were unschedulable.", kube.ClassNodeUnschedulable},
	} {
		var sf *events.SchedulingFailure
		if c.note != "" {
			if sf = kube.ParseFailedScheduling(c.note); sf == nil {
				t.Fatalf("%q does not parse", c.note)
			}
		}
		if got := kube.ReasonClass(sf); got != c.want {
			t.Errorf("%q: class %s, want %s", c.note, got, c.want)
		}
	}
}

// KAI-Scheduler's Unschedulable notes, written from its format strings (NVIDIA/KAI-Scheduler
// pkg/scheduler/api/common_info/pod_errors.go, job_errors.go, unschedule_info.go; commit
// 72de64fc): per-node counts read as a FailedScheduling note's, job-level messages as a failure
// with no per-node reasons.
func TestParseKAIUnschedulable(t *testing.T) {
	for _, c := range []struct {
		note  string
		want  *events.SchedulingFailure
		class string
	}{
		{"no nodes with enough resources were found: 1 node(s) didn't have enough resources: GPUs. \n5 node(s) didn't match Pod's node affinity/selector.",
			&events.SchedulingFailure{Total: 6, Reasons: []events.ReasonCount{{Reason: "node(s) didn't have enough resources: GPUs", Nodes: 1},
				{Reason: "node(s) didn't match Pod's node affinity/selector", Nodes: 5}}}, kube.ClassInsufficientGPU},
		{"Node-Pool 'h200': no nodes with enough resources were found: 4 node(s) didn't have enough of mig profile: 1g.10gb.",
			&events.SchedulingFailure{Total: 4, Reasons: []events.ReasonCount{{Reason: "node(s) didn't have enough of mig profile: 1g.10gb", Nodes: 4}}}, kube.ClassInsufficientGPU},
		{"no nodes with enough resources were found: 3 cannot allocate all claims.",
			&events.SchedulingFailure{Total: 3, Reasons: []events.ReasonCount{{Reason: "cannot allocate all claims", Nodes: 3}}}, kube.ClassDynamicResources},
		{"OverLimit: team-a quota has reached the allowable limit of GPUs. Limit is 2 GPUs, currently 2 GPUs allocated and workload requested 1 GPUs.",
			&events.SchedulingFailure{Reasons: []events.ReasonCount{{Reason: "OverLimit: team-a quota has reached the allowable limit of GPUs. Limit is 2 GPUs, currently 2 GPUs allocated and workload requested 1 GPUs."}}}, kube.ClassOther},
		{"", nil, kube.ClassNone},
	} {
		got := kube.ParseKAIUnschedulable(c.note)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", c.note, diff)
		}
		if class := kube.ReasonClass(got); class != c.class {
			t.Errorf("%q: class %s, want %s", c.note, class, c.class)
		}
	}
}

// Volcano's FailedScheduling notes, written from its format strings (volcano-sh/volcano
// pkg/scheduler/api/unschedule_info.go FitErrors, job_info.go FitError; commit ed72c7c8): the
// node counts read as kube-scheduler's, through the gang wrapper.
func TestParseVolcanoFailedScheduling(t *testing.T) {
	want := &events.SchedulingFailure{Total: 3, Reasons: []events.ReasonCount{
		{Reason: "node(s) pod number exceeded", Nodes: 1}, {Reason: "Insufficient nvidia.com/gpu", Nodes: 2}}}
	for _, note := range []string{
		"0/3 nodes are unavailable: 1 node(s) pod number exceeded, 2 Insufficient nvidia.com/gpu.",
		"pod group is not ready, 6 Pending, 6 minAvailable; Pending: 3 Schedulable, 3 Unschedulable. Origin reason is task-6: 0/3 nodes are unavailable: 1 node(s) pod number exceeded, 2 Insufficient nvidia.com/gpu.",
	} {
		got := kube.ParseFailedScheduling(note)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", note, diff)
		}
		if class := kube.ReasonClass(got); class != kube.ClassInsufficientGPU {
			t.Errorf("%q: class %s, want %s", note, class, kube.ClassInsufficientGPU)
		}
	}
}
