package simulate_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/experiment"
	"github.com/schedlens/schedlens/lab/preflight"
	"github.com/schedlens/schedlens/lab/preflight/simulate"
)

// One control plane per process: every test's dry runs share it (Run resets it).
var sim *simulate.Simulator

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "schedlens-simulate-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sim, err = simulate.Start(context.Background(), dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	sim.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

func load(t *testing.T, name string, b []byte) *preflight.Input {
	t.Helper()
	in := preflight.Load(nil, nil, "default")
	in.Parse(name, b, "default")
	if len(in.Errors) > 0 {
		t.Fatal(in.Errors)
	}
	return in
}

// summary renders a group as "pod status pool model sharing" lines, sorted, and its victims.
func summary(g preflight.SimGroup) []string {
	var out []string
	for _, p := range g.Pods {
		out = append(out, fmt.Sprintf("%s %s %s %s %s", p.Name, p.Status, p.Pool, p.GPUModel, p.Sharing))
	}
	slices.Sort(out)
	for _, v := range g.Preempted {
		out = append(out, fmt.Sprintf("victim %s existing=%t by=%t", v.Name, v.Existing, v.PreemptedBy != ""))
	}
	return out
}

// The day20 arms on the lab's cluster, placed by the real scheduler arm by arm: the affinity
// arm on H100s, the priority arm preempting three of its four background pods, the sharing arm
// on the time-sliced A100; the control arm anywhere untainted.
func TestDay20(t *testing.T) {
	b, err := preflight.ExperimentManifests(experiment.Day20(), "ai-lab", 1)
	if err != nil {
		t.Fatal(err)
	}
	in := load(t, "day20", b)
	c := preflight.FromSpec(cluster.Default(), "test")
	start := time.Now()
	res, err := sim.Run(context.Background(), preflight.SimulationOf(in, c), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("day20 arm set: %d groups in %.2fs (control plane start %.2fs before)", len(res.Groups), time.Since(start).Seconds(), res.StartupSeconds)
	var names []string
	for _, g := range res.Groups {
		names = append(names, g.Name)
	}
	if diff := cmp.Diff([]string{"control", "affinity", "priority", "sharing"}, names); diff != "" {
		t.Fatalf("groups (-want +got):\n%s", diff)
	}
	h100 := "h100 NVIDIA-H100-80GB-HBM3 exclusive"
	want := map[string][]string{
		"affinity": {"day20-affinity-r1-1 scheduled " + h100, "day20-affinity-r1-2 scheduled " + h100, "day20-affinity-r1-3 scheduled " + h100},
		"sharing": {"day20-sharing-r1-1 scheduled a100-shared NVIDIA-A100-SXM4-80GB time-slicing", "day20-sharing-r1-2 scheduled a100-shared NVIDIA-A100-SXM4-80GB time-slicing",
			"day20-sharing-r1-3 scheduled a100-shared NVIDIA-A100-SXM4-80GB time-slicing"},
	}
	for _, g := range res.Groups {
		got := summary(g)
		switch g.Name {
		case "control":
			for _, p := range g.Pods {
				if p.Status != preflight.PodScheduled || !slices.Contains([]string{"h100", "a100", "t4"}, p.Pool) || p.Sharing != "exclusive" {
					t.Errorf("control pod %+v: want scheduled on an untainted exclusive pool", p)
				}
			}
		case "priority":
			var preempted, scheduled, victims int
			for _, p := range g.Pods {
				if strings.Contains(p.Name, "-bg-") && p.Status == preflight.PodPreempted {
					preempted++
				}
				if !strings.Contains(p.Name, "-bg-") && p.Status == preflight.PodScheduled && p.Pool == "h100" {
					scheduled++
					if !strings.Contains(p.Message, "preempting") {
						t.Errorf("%s: FailedScheduling %q, want the preemption", p.Name, p.Message)
					}
				}
			}
			for _, v := range g.Preempted {
				if !v.Existing && strings.HasPrefix(v.PreemptedBy, "ai-lab/day20-priority-r1-") && strings.HasPrefix(v.Node, "gpu-h100-") {
					victims++
				}
			}
			if preempted != 3 || scheduled != 3 || victims != 3 {
				t.Errorf("priority: %d background preempted, %d scheduled on h100, %d victims; want 3, 3, 3\n%s", preempted, scheduled, victims, strings.Join(got, "\n"))
			}
		default:
			if diff := cmp.Diff(want[g.Name], got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", g.Name, diff)
			}
		}
	}
}

// Running pods of a snapshot are there, bound, in every group: a group that preempts one
// leaves it re-created for the next. A pod no node can take is Pending with the scheduler's
// own FailedScheduling message, and becomes a simulate-pending finding.
func TestRunningPodsAndPending(t *testing.T) {
	c := preflight.FromSpec(cluster.Default(), "snapshot")
	for i, node := range []string{"gpu-h100-1", "gpu-h100-1", "gpu-h100-2", "gpu-h100-2"} {
		c.Pods = append(c.Pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("batch-%d", i), Namespace: "jobs", Labels: map[string]string{"app": "batch"}},
			Spec: corev1.PodSpec{NodeName: node, PriorityClassName: "lab-low", Containers: []corev1.Container{{Name: "c", Image: "batch",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
		})
	}
	arm := func(name, rules string, replicas int) string {
		return fmt.Sprintf(`---
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: ai-lab}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s, schedlens.io/experiment: x, schedlens.io/arm: %s}}
    spec:
%s      containers: [{name: m, image: triton, resources: {limits: {nvidia.com/gpu: 1}}}]
`, name, replicas, name, name, name, rules)
	}
	m := arm("first", "      priorityClassName: lab-high\n      nodeSelector: {lab.schedlens.io/pool: h100}\n", 1) +
		arm("second", "      priorityClassName: lab-high\n      nodeSelector: {lab.schedlens.io/pool: h100}\n", 1) +
		arm("b200", "      nodeSelector: {gpu-model: B200}\n", 2)
	in := load(t, "arms.yaml", []byte(m))
	res, err := sim.Run(context.Background(), preflight.SimulationOf(in, c), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range res.Groups[:2] {
		var existing []string
		for _, v := range g.Preempted {
			if v.Existing && v.Namespace == "jobs" && strings.HasPrefix(v.Name, "batch-") {
				existing = append(existing, v.Name)
			}
		}
		if len(existing) != 1 || g.Pods[0].Status != preflight.PodScheduled || g.Pods[0].Pool != "h100" {
			t.Errorf("group %s: %v, preempted running pods %v: want its pod on h100 and one running pod preempted", g.Name, summary(g), existing)
		}
	}
	pending := res.Groups[2]
	for _, p := range pending.Pods {
		parsed := kube.ParseFailedScheduling(p.Message)
		if p.Status != preflight.PodPending || parsed == nil || parsed.Total != 8 || !strings.HasPrefix(p.Message, "0/8 nodes are available: ") ||
			!strings.Contains(p.Message, "6 node(s) didn't match Pod's node affinity/selector") {
			t.Errorf("b200 pod %+v (parsed %+v)", p, parsed)
		}
	}
	kept, _ := preflight.SimulationFindings(res, in)
	var rules []string
	for _, f := range kept {
		rules = append(rules, string(f.Severity)+" "+f.Rule+" "+f.Object.Name)
	}
	slices.Sort(rules)
	want := []string{"error simulate-pending b200", "warning simulate-preempts first", "warning simulate-preempts second"}
	if diff := cmp.Diff(want, rules); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// day20-dra's arms on the lab's cluster with its DRA pools: the scheduler allocates the claims
// (templates made into claims by the resourceclaim controller, the sharing-dra arm's one claim
// shared by its three pods), and each pod reads the GPU model and sharing its claims got, as
// the collector reads them. A running pod's claim of the snapshot keeps its device: a group
// asking for both H200 GPUs on one node stays Pending with the scheduler's DRA reason.
func TestDay20DRA(t *testing.T) {
	b, err := preflight.ExperimentManifests(experiment.Day20DRA(), "ai-lab", 1)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, []byte(`---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: both-h200, namespace: ai-lab}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {deviceClassName: gpu.nvidia.com, count: 2}
---
apiVersion: v1
kind: Pod
metadata: {name: both, namespace: ai-lab}
spec:
  resourceClaims: [{name: gpus, resourceClaimTemplateName: both-h200}]
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers:
  - name: model
    image: nvcr.io/nvidia/tritonserver:25.01-py3
    resources: {claims: [{name: gpus}]}
`)...)
	in := load(t, "day20-dra", b)
	c := preflight.FromSpec(cluster.WithDRA(cluster.Default()), "snapshot")
	// A running pod of the snapshot holds the H200 node's second GPU through its claim.
	c.Claims = []resourcev1.ResourceClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "running-gpu", Namespace: "prod"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
			{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: cluster.ClassGPU}}}}},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: cluster.DRADriver, Pool: "gpu-h200-dra-1", Device: "gpu-1"}}}}},
	}}
	res, err := sim.Run(context.Background(), preflight.SimulationOf(in, c), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, g := range res.Groups {
		got[g.Name] = summary(g)
	}
	h200 := "h200-dra NVIDIA-H200 "
	mig := "a100-mig-dra NVIDIA-A100-SXM4-80GB mig"
	want := map[string][]string{
		"sharing-dra": {"day20-dra-sharing-dra-r1-1 scheduled " + h200 + "time-slicing", "day20-dra-sharing-dra-r1-2 scheduled " + h200 + "time-slicing",
			"day20-dra-sharing-dra-r1-3 scheduled " + h200 + "time-slicing"},
		"dra-mig": {"day20-dra-dra-mig-r1-1 scheduled " + mig, "day20-dra-dra-mig-r1-2 scheduled " + mig, "day20-dra-dra-mig-r1-3 scheduled " + mig},
		"all":     {"both pending   "},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, got[name]); diff != "" {
			t.Errorf("group %s (-want +got):\n%s", name, diff)
		}
	}
	for _, g := range res.Groups {
		switch g.Name {
		case "admission": // the gate is not simulated: placed as control
			for _, p := range g.Pods {
				if p.Status != preflight.PodScheduled || p.Sharing != "exclusive" {
					t.Errorf("admission pod %+v: want scheduled, exclusive", p)
				}
			}
		case "all":
			if msg := g.Pods[0].Message; !strings.Contains(msg, "cannot allocate all claims") {
				t.Errorf("both: FailedScheduling %q, want the DRA reason", msg)
			}
		}
	}
	kept, _ := preflight.SimulationFindings(res, in)
	var pending []string
	for _, f := range kept {
		pending = append(pending, f.Rule+" "+f.Object.String())
	}
	if diff := cmp.Diff([]string{"simulate-pending Pod ai-lab/both"}, pending); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}
