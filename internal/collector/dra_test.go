package collector_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natstest"
)

// draObjects is an H200 node's ResourceSlice, a claim not yet allocated and an unlabelled pod
// that uses it.
func draObjects() (*resourcev1.ResourceSlice, *resourcev1.ResourceClaim, *corev1.Pod) {
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-h200-0-gpu.nvidia.com-x1", ResourceVersion: "40"},
		Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: ptr.To("gpu-h200-0"),
			Pool: resourcev1.ResourcePool{Name: "gpu-h200-0", Generation: 1, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"type": {StringValue: ptr.To("gpu")}, "uuid": {StringValue: ptr.To("GPU-4a1c2b9e-0d3f-7e11-88aa-3c5e9f0b1d20")},
				"productName": {StringValue: ptr.To("NVIDIA H200")}}}}},
	}
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "infer-gpu", Namespace: ns, UID: "0f0f0f0f-0000-4000-8000-0000000000c1", ResourceVersion: "41"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
			{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", Count: 1}}}}},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "infer-0", Namespace: ns, UID: "0f0f0f0f-0000-4000-8000-0000000000c2", ResourceVersion: "42"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server"}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("infer-gpu")}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	return slice, claim, pod
}

// The collector resolves a pod's claim through its caches, and when the scheduler allocates the
// claim it publishes the pod again with the GPU the claim got, although the pod itself did
// not change.
func TestDRAClaimResolved(t *testing.T) {
	srv := natstest.Start(t)
	slice, claim, pod := draObjects()
	k := newCluster(t, slice, claim, pod)
	everything := ""
	startCollector(t, k, srv.URL(), testOpts{selector: &everything})

	gpuOf := func() []*events.GPU {
		var out []*events.GPU
		for _, e := range streamEnvelopes(t, srv.URL()) {
			if ps, ok := e.Payload.(*events.PodStatus); ok {
				out = append(out, ps.GPU)
			}
		}
		return out
	}
	waitFor(t, 10*time.Second, "the pod with its claim, not allocated", func() bool {
		g := gpuOf()
		return len(g) == 1 && g[0] != nil && g[0].Sharing == events.SharingUnknown && g[0].Via == events.ViaDRA
	})
	checkRBAC(t, k.client.Actions())

	allocated := claim.DeepCopy()
	allocated.ResourceVersion = "43"
	allocated.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "gpu-h200-0", Device: "gpu-0"}}}}
	allocated.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	if _, err := k.client.ResourceV1().ResourceClaims(ns).UpdateStatus(context.Background(), allocated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last *events.GPU
	waitFor(t, 10*time.Second, "the pod published again with its GPU", func() bool {
		g := gpuOf()
		last = g[len(g)-1]
		return len(g) == 2 && last != nil && last.Model == "NVIDIA-H200"
	})
	if last.Sharing != events.SharingExclusive || len(last.UUIDs) != 1 || last.UUIDs[0] != "GPU-4a1c2b9e-0d3f-7e11-88aa-3c5e9f0b1d20" {
		t.Errorf("allocated GPU = %+v", last)
	}
	for _, e := range streamEnvelopes(t, srv.URL()) {
		if ps, ok := e.Payload.(*events.PodStatus); ok && ps.GPU.Model != "" {
			if c := ps.Claims; len(c) != 1 || c[0].AllocationObserved == nil {
				t.Errorf("claims %+v: want the collector's first observation of the allocation", c)
			}
		}
	}
}

// A collector that may not list resource.k8s.io still becomes ready and lists claims by name.
func TestDRAForbiddenIsNotFatal(t *testing.T) {
	srv := natstest.Start(t)
	slice, claim, pod := draObjects()
	k := newCluster(t, slice, claim, pod)
	k.client.PrependReactor("list", "resourceslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceslices"}, "", errors.New("RBAC: access denied"))
	})
	everything := ""
	startCollector(t, k, srv.URL(), testOpts{selector: &everything})
	waitFor(t, 10*time.Second, "the pod", func() bool {
		return len(ids(streamEnvelopes(t, srv.URL()), events.KindPodStatus)) == 1
	})
	for _, e := range streamEnvelopes(t, srv.URL()) {
		if ps, ok := e.Payload.(*events.PodStatus); ok {
			if len(ps.Claims) != 1 || ps.Claims[0].Claim != "infer-gpu" || ps.Claims[0].Devices != nil {
				t.Errorf("claims %+v: want the claim by name, unresolved", ps.Claims)
			}
		}
	}
}
