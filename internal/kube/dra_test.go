package kube_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

// readYAMLDocs reads a multi-document YAML fixture into one T per document.
func readYAMLDocs[T any](t testing.TB, name string) []T {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for doc := range bytes.SplitSeq(b, []byte("\n---\n")) {
		var v T
		if err := yaml.UnmarshalStrict(doc, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, v)
	}
	return out
}

// fixtureDRA is kube.DRA over the fixture objects, as the collector's caches hold them.
type fixtureDRA struct {
	claims   map[string]*resourcev1.ResourceClaim
	slices   []resourcev1.ResourceSlice
	observed map[types.UID]time.Time
}

func loadDRA(t testing.TB) *fixtureDRA {
	d := &fixtureDRA{claims: map[string]*resourcev1.ResourceClaim{}, observed: map[types.UID]time.Time{}}
	for _, c := range readYAMLDocs[resourcev1.ResourceClaim](t, "dra/claims.yaml") {
		d.claims[c.Namespace+"/"+c.Name] = &c
		if c.Status.Allocation != nil {
			d.observed[c.UID] = time.Date(2026, 11, 30, 4, 34, 58, 412345678, time.UTC)
		}
	}
	d.slices = readYAMLDocs[resourcev1.ResourceSlice](t, "dra/slices.yaml")
	return d
}

func (d *fixtureDRA) Claim(namespace, name string) *resourcev1.ResourceClaim {
	return d.claims[namespace+"/"+name]
}

func (d *fixtureDRA) Device(driver, pool, device string) (*resourcev1.Device, string) {
	var best *resourcev1.ResourceSlice
	for i := range d.slices {
		s := &d.slices[i]
		if s.Spec.Driver == driver && s.Spec.Pool.Name == pool && (best == nil || s.Spec.Pool.Generation > best.Spec.Pool.Generation) {
			best = s
		}
	}
	if best == nil {
		return nil, ""
	}
	for i := range best.Spec.Devices {
		if best.Spec.Devices[i].Name == device {
			return &best.Spec.Devices[i], *best.Spec.NodeName
		}
	}
	return nil, ""
}

func (d *fixtureDRA) AllocationObserved(uid types.UID) time.Time { return d.observed[uid] }

// TestPodStatusDRA: each pod's claims resolve through the claims and the newest slices to the
// GPU model, UUIDs, MIG profile and sharing mode the allocation says, in the device plugin's
// vocabulary; the gates are listed by name.
func TestPodStatusDRA(t *testing.T) {
	dra := loadDRA(t)
	pods := map[string]corev1.Pod{}
	for _, p := range readYAMLDocs[corev1.Pod](t, "dra/pods.yaml") {
		pods[p.Name] = p
	}
	allocatedAt, allocObserved := ts("2026-11-30T04:34:58Z"), ts("2026-11-30T04:34:58.412345Z")
	observedOnly := allocObserved
	h200 := func(dev, uuid string) events.ClaimDevice {
		return events.ClaimDevice{DeviceClass: "gpu.nvidia.com", Driver: "gpu.nvidia.com", Pool: "gpu-h200-0", Device: dev, Node: "gpu-h200-0",
			Type: "gpu", Model: "NVIDIA H200", UUID: uuid}
	}
	gpu0, gpu1 := "GPU-4a1c2b9e-0d3f-7e11-88aa-3c5e9f0b1d20", "GPU-9b0e7d41-2c6a-4f58-b3d2-61e0a7c4f9e8"
	with := func(d events.ClaimDevice, request string) events.ClaimDevice { d.Request = request; return d }
	tests := []struct {
		pod    string
		gpu    *events.GPU
		claims []events.PodClaim
		gates  []string
	}{
		{pod: "exclusive-0",
			gpu: &events.GPU{Resource: "gpu.nvidia.com", Count: 1, Model: "NVIDIA-H200", Sharing: events.SharingExclusive, Via: events.ViaDRA,
				UUIDs: []string{gpu0}, ClaimPods: 1},
			claims: []events.PodClaim{{Name: "gpu", Claim: "exclusive-0-gpu-x7k2p", Template: "one-gpu", DeviceClasses: []string{"gpu.nvidia.com"},
				AllocatedAt: allocatedAt, AllocationObserved: allocObserved, ReservedFor: 1, Devices: []events.ClaimDevice{with(h200("gpu-0", gpu0), "gpu")}}}},
		{pod: "sharing-0",
			gpu: &events.GPU{Resource: "gpu.nvidia.com", Count: 1, Model: "NVIDIA-H200", Sharing: events.SharingTimeSlicing, Via: events.ViaDRA,
				UUIDs: []string{gpu1}, ClaimPods: 2},
			claims: []events.PodClaim{{Name: "gpu", Claim: "shared-gpu", DeviceClasses: []string{"gpu.nvidia.com"}, AllocationObserved: observedOnly,
				ReservedFor: 2, Sharing: events.SharingTimeSlicing, Devices: []events.ClaimDevice{with(h200("gpu-1", gpu1), "ts-gpu")}}}},
		{pod: "plain-0",
			gpu: &events.GPU{Resource: "gpu.nvidia.com", Count: 1, Model: "NVIDIA-H200", Sharing: events.SharingSharedClaim, Via: events.ViaDRA,
				UUIDs: []string{gpu1}, ClaimPods: 2}},
		{pod: "mig-0",
			gpu: &events.GPU{Resource: "mig.nvidia.com", Count: 1, Model: "NVIDIA-A100-SXM4-80GB", Sharing: events.SharingMIG, MIGProfile: "1g.10gb",
				Via: events.ViaDRA, UUIDs: []string{"MIG-1f2e3d4c-5b6a-5978-8a9b-0c1d2e3f4a5b"}, ClaimPods: 1},
			// Its selectors as written; the attributes they read as the device has them (by its
			// driver's short names; addressingMode it lacks).
			claims: []events.PodClaim{{Name: "mig", Claim: "mig-0-mig-q8w4z", Template: "one-mig", DeviceClasses: []string{"mig.nvidia.com"},
				Selectors: []string{`device.attributes["gpu.nvidia.com"].profile == "1g.10gb"`,
					`device.attributes["gpu.nvidia.com"]["architecture"] == "Ampere" && device.attributes["gpu.nvidia.com"].?addressingMode.orValue("") != "HMM"`},
				AllocationObserved: observedOnly, ReservedFor: 1, Devices: []events.ClaimDevice{{Request: "mig", DeviceClass: "mig.nvidia.com",
					Driver: "gpu.nvidia.com", Pool: "gpu-a100-mig-0", Device: "gpu-0-mig-1g10gb-19-0", Node: "gpu-a100-mig-0", Type: "mig",
					Model: "NVIDIA A100-SXM4-80GB", UUID: "MIG-1f2e3d4c-5b6a-5978-8a9b-0c1d2e3f4a5b", MIGProfile: "1g.10gb",
					ParentUUID: "GPU-77c0ffee-1234-4cde-9abc-def012345678",
					Attributes: map[string]string{"gpu.nvidia.com/architecture": "Ampere", "gpu.nvidia.com/profile": "1g.10gb"}}}}}},
		// nvidia.com/gpu served by a claim the scheduler made: the resource stays the pod's.
		{pod: "extended-0",
			gpu: &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-H200", Sharing: events.SharingExclusive, Via: events.ViaDRA,
				UUIDs: []string{gpu0}, ClaimPods: 1},
			claims: []events.PodClaim{{Claim: "extended-0-extended-resources-m2n7c", Extended: true, DeviceClasses: []string{"gpu.nvidia.com"},
				AllocationObserved: observedOnly, ReservedFor: 1, Devices: []events.ClaimDevice{with(h200("gpu-0", gpu0), "container-0-request-0")}}}},
		{pod: "waiting-0",
			gpu:    &events.GPU{Resource: "gpu.nvidia.com", Count: 1, Sharing: events.SharingUnknown, Via: events.ViaDRA},
			claims: []events.PodClaim{{Name: "gpu", Claim: "waiting-0-gpu-p3r9t", Template: "one-gpu", DeviceClasses: []string{"gpu.nvidia.com"}}}},
		// A device-plugin pod keeps today's path.
		{pod: "gated-0", gpu: &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Sharing: events.SharingUnknown}, gates: []string{"kueue.x-k8s.io/admission"}},
	}
	for _, tt := range tests {
		t.Run(tt.pod, func(t *testing.T) {
			pod, ok := pods[tt.pod]
			if !ok {
				t.Fatalf("no pod %s in the fixture", tt.pod)
			}
			ps := kube.PodStatusDRA(&pod, nil, dra)
			if diff := cmp.Diff(tt.gpu, ps.GPU); diff != "" {
				t.Errorf("gpu (-want +got):\n%s", diff)
			}
			if tt.claims != nil {
				if diff := cmp.Diff(tt.claims, ps.Claims); diff != "" {
					t.Errorf("claims (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tt.gates, ps.SchedulingGates); diff != "" {
				t.Errorf("gates (-want +got):\n%s", diff)
			}
			// Without the caches the claims are named, never resolved.
			for _, c := range kube.PodStatus(&pod, nil).Claims {
				if c.Devices != nil || c.AllocationObserved != nil {
					t.Errorf("unresolved claim %+v", c)
				}
			}
		})
	}
}

// TestPodEnvelopeClaimsID: a pod's snapshot id names its claims' state, so the snapshot the
// collector publishes again when a claim is allocated is a new event; the collector's own
// observation time is not part of it.
func TestPodEnvelopeClaimsID(t *testing.T) {
	dra := loadDRA(t)
	var pod corev1.Pod
	for _, p := range readYAMLDocs[corev1.Pod](t, "dra/pods.yaml") {
		if p.Name == "waiting-0" {
			pod = p
		}
	}
	m := meta
	m.DRA = dra
	before, err := kube.PodEnvelope(&pod, nil, false, m)
	if err != nil {
		t.Fatal(err)
	}
	claim := dra.claims["ai-lab/waiting-0-gpu-p3r9t"]
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "gpu-h200-0", Device: "gpu-1"}}}}
	after, err := kube.PodEnvelope(&pod, nil, false, m)
	if err != nil {
		t.Fatal(err)
	}
	dra.observed[claim.UID] = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	again, err := kube.PodEnvelope(&pod, nil, false, m)
	if err != nil {
		t.Fatal(err)
	}
	if before.ID == after.ID {
		t.Errorf("allocation did not change the id %s", before.ID)
	}
	if after.ID != again.ID {
		t.Errorf("the collector's observation time changed the id: %s, %s", after.ID, again.ID)
	}
	if ps := again.Payload.(*events.PodStatus); ps.GPU == nil || ps.GPU.Sharing != events.SharingExclusive || ps.GPU.Model != "NVIDIA-H200" {
		t.Errorf("allocated pod's GPU = %+v", ps.GPU)
	}
}
