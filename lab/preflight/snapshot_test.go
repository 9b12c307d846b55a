package preflight_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/preflight"
)

// A live snapshot reads DRA: the DeviceClasses, the ResourceSlices, the claims allocated now
// (not those still pending), and counts a running pod that holds a claim as a GPU pod; its
// summary names the DRA pool's model and the allocated device.
func TestSnapshotReadsDRA(t *testing.T) {
	spec := cluster.WithDRA(cluster.Default())
	var objs []runtime.Object
	for _, n := range spec.Nodes() {
		objs = append(objs, n)
	}
	for _, dc := range cluster.DeviceClasses() {
		objs = append(objs, dc)
	}
	for _, p := range spec.Pools {
		if sl := p.ResourceSlice(1); sl != nil {
			objs = append(objs, sl)
		}
	}
	allocated := &resourcev1.ResourceClaim{}
	allocated.Name, allocated.Namespace = "running-gpu", "prod"
	allocated.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: cluster.DRADriver, Pool: "gpu-h200-dra-1", Device: "gpu-1"}}}}
	pending := &resourcev1.ResourceClaim{}
	pending.Name, pending.Namespace = "waiting", "prod"
	objs = append(objs, allocated, pending)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "runner", Namespace: "prod"}, Spec: corev1.PodSpec{NodeName: "gpu-h200-dra-1",
		ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("running-gpu")}},
		Containers:     []corev1.Container{{Name: "model", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	objs = append(objs, pod)

	c, err := preflight.Snapshot(context.Background(), fake.NewClientset(objs...), "fake")
	if err != nil {
		t.Fatal(err)
	}
	if !c.DRAListed || len(c.DeviceClasses) != 2 || len(c.ResourceSlices) != 2 || len(c.Claims) != 1 || c.Claims[0].Name != "running-gpu" || len(c.Pods) != 1 {
		t.Fatalf("snapshot: listed %t, %d classes, %d slices, claims %v, %d GPU pods", c.DRAListed, len(c.DeviceClasses), len(c.ResourceSlices), c.Claims, len(c.Pods))
	}
	r := preflight.Check(&preflight.Input{Ignored: map[string]int{}}, c, preflight.Options{})
	for _, p := range r.Cluster.Pools {
		if p.Name == "h200-dra" && (p.GPUModel != "NVIDIA-H200" || p.DRADevices["gpu.nvidia.com"] != 2 || p.DRAAllocated != 1) {
			t.Errorf("h200-dra pool: %+v", p)
		}
	}
}

// A cluster that does not serve resource.k8s.io/v1 is checked without DRA, and says so.
func TestSnapshotWithoutDRA(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "deviceclasses", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "deviceclasses"}, "")
	})
	c, err := preflight.Snapshot(context.Background(), client, "fake")
	if err != nil {
		t.Fatal(err)
	}
	if c.DRAListed || !strings.Contains(c.DRANote, "resource.k8s.io/v1 not read") {
		t.Errorf("listed %t, note %q", c.DRAListed, c.DRANote)
	}
	in := preflight.Load([]string{preflight.Stdin}, strings.NewReader(template("h200", "gpu.nvidia.com", "")), "default")
	r := preflight.Check(in, c, preflight.Options{})
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.Rule+": "+f.Message)
	}
	if len(got) != 1 || !strings.Contains(got[0], "dra-class-missing") || !strings.Contains(got[0], "the cluster's DeviceClasses were not read") {
		t.Errorf("findings %v, want the class reported missing with the reason", got)
	}
}

// A live snapshot reads the label registries of every namespace (ConfigMaps labelled
// schedlens.io/label-registry), and a wrong entry is noted, not fatal.
func TestSnapshotReadsLabelRegistries(t *testing.T) {
	cm := func(ns, name, labels string, registry bool) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"labels": labels}}
		if registry {
			c.Labels = map[string]string{"schedlens.io/label-registry": "true"}
		}
		return c
	}
	client := fake.NewClientset(
		cm("platform", "gpu-labels", "gpu-model: {source: provisioner, owner: platform}\n", true),
		cm("team-a", "more", "zone: {source: cloud}\n", true),
		cm("team-a", "not-a-registry", "accelerator: {source: x, owner: y}\n", false))
	c, err := preflight.Snapshot(context.Background(), client, "fake")
	if err != nil {
		t.Fatal(err)
	}
	if c.Registries != 2 || len(c.Labels) != 1 || c.Labels[0].Key != "gpu-model" || c.Labels[0].Registry != "platform/gpu-labels" ||
		!strings.Contains(c.LabelsNote, "team-a/more: zone: no owner") {
		t.Errorf("registries %d, labels %+v, note %q", c.Registries, c.Labels, c.LabelsNote)
	}
}
