package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/kubelet"
)

// draPod is a pod of the fixed workload whose GPU comes from its claims; it tolerates the DRA
// pools' taint.
func (e *env) draPod(name, arm string, claims []corev1.PodResourceClaim, annotations map[string]string) *corev1.Pod {
	e.t.Helper()
	ann := map[string]string{kubelet.AnnotationModel: "llama-3-8b"}
	for k, v := range annotations {
		ann[k] = v
	}
	var refs []corev1.ResourceClaim
	for _, c := range claims {
		refs = append(refs, corev1.ResourceClaim{Name: c.Name})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Annotations: ann,
			Labels: map[string]string{events.LabelExperiment: "day20", events.LabelArm: arm, events.LabelRun: "1"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "model", Image: "nvcr.io/nvidia/tritonserver:25.01-py3",
				Resources: corev1.ResourceRequirements{Claims: refs}}},
			ResourceClaims:                claims,
			Tolerations:                   []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
	created, err := client.CoreV1().Pods(e.ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return created
}

func gpuRequest(name, class string, count int64) resourcev1.DeviceRequest {
	return resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class, Count: count}}
}

// On the real scheduler, DRA pods read the GPU their claims got — model, UUIDs, MIG profile and
// sharing mode equal to what the claims' status and the driver's slices say — beside a
// device-plugin pod held by a Kueue-style admission gate, whose gate is its own wait, not
// the scheduler's; a claim that cannot be allocated reads the whole wait with the DRA reason;
// an injected prepare failure is counted.
func TestDRAClaimsReadAsTheirDevices(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	res := client.ResourceV1()
	timeSlicing := runtime.RawExtension{Raw: []byte(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing"}}`)}
	if _, err := res.ResourceClaimTemplates(e.ns).Create(ctx, &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "one-h200"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{gpuRequest("gpu", cluster.ClassGPU, 1)}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := res.ResourceClaimTemplates(e.ns).Create(ctx, &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "one-mig"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{gpuRequest("mig", cluster.ClassMIG, 1)}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*resourcev1.ResourceClaim{
		{ObjectMeta: metav1.ObjectMeta{Name: "shared-h200"}, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{gpuRequest("gpu", cluster.ClassGPU, 1)},
			Config: []resourcev1.DeviceClaimConfiguration{{Requests: []string{"gpu"}, DeviceConfiguration: resourcev1.DeviceConfiguration{
				Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: cluster.DRADriver, Parameters: timeSlicing}}}}}}},
		// Three GPUs from a node that has two: never allocated.
		{ObjectMeta: metav1.ObjectMeta{Name: "three-h200"}, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{gpuRequest("gpus", cluster.ClassGPU, 3)}}}},
	} {
		if _, err := res.ResourceClaims(e.ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	byTemplate := func(tmpl string) []corev1.PodResourceClaim {
		return []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(tmpl)}}
	}
	byName := func(claim string) []corev1.PodResourceClaim {
		return []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(claim)}}
	}
	pods := map[string]*corev1.Pod{
		"dra-exclusive-1": e.draPod("dra-exclusive-1", "dra-exclusive", byTemplate("one-h200"), nil),
		"dra-shared-1":    e.draPod("dra-shared-1", "sharing-dra", byName("shared-h200"), nil),
		"dra-shared-2":    e.draPod("dra-shared-2", "sharing-dra", byName("shared-h200"), nil),
		"dra-mig-1":       e.draPod("dra-mig-1", "dra-mig", byTemplate("one-mig"), map[string]string{kubelet.AnnotationPrepareFailures: "1"}),
		"dra-waits-1":     e.draPod("dra-waits-1", "oversized", byName("three-h200"), nil),
	}
	// A device-plugin pod held by an admission gate for 2 s, then let go.
	gated := e.create(podSpec{name: "gated-1", arm: "control", gate: "kueue.x-k8s.io/admission"})
	time.Sleep(2 * time.Second)
	before := time.Now()
	if _, err := client.CoreV1().Pods(e.ns).Patch(ctx, "gated-1", types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/spec/schedulingGates"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	pods["gated-1"] = gated
	e.waitReady("dra-exclusive-1", "dra-shared-1", "dra-shared-2", "dra-mig-1", "gated-1")
	time.Sleep(2 * time.Second) // the waiting pod: a few FailedScheduling
	e.settle()

	// What the cluster says each pod got: its claims' allocations through the driver's slices.
	slices, err := res.ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	device := map[string]resourcev1.Device{}
	for _, s := range slices.Items {
		for _, d := range s.Spec.Devices {
			device[s.Spec.Pool.Name+"/"+d.Name] = d
		}
	}
	str := func(d resourcev1.Device, name string) string {
		if a, ok := d.Attributes[resourcev1.QualifiedName(name)]; ok && a.StringValue != nil {
			return *a.StringValue
		}
		return ""
	}
	for _, name := range []string{"dra-exclusive-1", "dra-shared-1", "dra-shared-2", "dra-mig-1"} {
		p, _ := e.pod(name)
		claimName := ""
		for _, s := range p.Status.ResourceClaimStatuses {
			claimName = deref(s.ResourceClaimName)
		}
		if claimName == "" {
			claimName = deref(p.Spec.ResourceClaims[0].ResourceClaimName)
		}
		claim, err := res.ResourceClaims(e.ns).Get(ctx, claimName, metav1.GetOptions{})
		if err != nil || claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 1 {
			t.Fatalf("%s: claim %q not allocated one device: %v %+v", name, claimName, err, claim.Status)
		}
		r := claim.Status.Allocation.Devices.Results[0]
		d := device[r.Pool+"/"+r.Device]
		wantSharing := events.SharingExclusive
		switch {
		case str(d, "type") == "mig":
			wantSharing = events.SharingMIG
		case claimName == "shared-h200":
			wantSharing = events.SharingTimeSlicing
		}
		tl := e.timeline(p.UID)
		ps := snapshotData(t, tl)
		g := ps.GPU
		if g == nil || g.Via != events.ViaDRA {
			t.Fatalf("%s: gpu %+v, want one allocated through DRA", name, g)
		}
		wantUUIDs := []string{str(d, "uuid")}
		if g.Model != strings.ReplaceAll(str(d, "productName"), " ", "-") || strings.Join(g.UUIDs, ",") != strings.Join(wantUUIDs, ",") ||
			g.MIGProfile != str(d, "profile") || g.Sharing != wantSharing || g.ClaimPods != len(claim.Status.ReservedFor) {
			t.Errorf("%s: schedlens read %+v; the claim got %s/%s (%s %s %s), reserved for %d, want sharing %s",
				name, g, r.Pool, r.Device, str(d, "productName"), str(d, "uuid"), str(d, "profile"), len(claim.Status.ReservedFor), wantSharing)
		}
		m := tl.Milestones
		if m.ClaimAllocated == nil || m.Scheduled == nil || m.ClaimAllocated.After(*m.Scheduled) || m.ClaimAllocated.Before(*m.Created) {
			t.Errorf("%s: claim allocated %v, created %v, scheduled %v: want allocated in between", name, m.ClaimAllocated, m.Created, m.Scheduled)
		}
		if at := claim.Status.Allocation.AllocationTimestamp; at != nil && m.ClaimAllocated != nil &&
			(m.ClaimAllocated.Before(at.Time) || !m.ClaimAllocated.Before(at.Add(time.Second))) {
			t.Errorf("%s: claim allocated %v, outside the second of its allocationTimestamp %v", name, m.ClaimAllocated, at)
		}
		t.Logf("%s: %s %s %v sharing %s (claim %s → %s/%s), claim allocated %s before scheduled",
			name, g.Model, g.MIGProfile, g.UUIDs, g.Sharing, claimName, r.Pool, r.Device, m.Scheduled.Sub(*m.ClaimAllocated).Round(time.Microsecond))
		if name == "dra-mig-1" && tl.Counts.FailedPrepare != 1 {
			t.Errorf("dra-mig-1: %d prepare failures counted, want the 1 injected", tl.Counts.FailedPrepare)
		}
	}

	// The gate: its own wait, ended where the gate went; then the scheduler's.
	tg := e.timeline(gated.UID)
	m, d := tg.Milestones, tg.Durations
	if m.Gated == nil || m.Gated.Before(before) || m.Gated.After(after.Add(10*time.Millisecond)) {
		t.Errorf("gated-1: gated at %v; the gate was removed in [%s, %s]", m.Gated, before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
	}
	if m.FirstUnschedulable != nil && m.Gated != nil && m.FirstUnschedulable.Before(*m.Gated) {
		t.Errorf("gated-1: first unschedulable %v while still gated (gate went %v)", m.FirstUnschedulable, m.Gated)
	}
	if d.Gated == nil || *d.Gated < 1.9 || d.SchedulableWait == nil || *d.SchedulableWait > 1 {
		t.Errorf("gated-1: gated %v s, schedulable wait %v s; want ≈2 s held by the gate, then a short wait", d.Gated, d.SchedulableWait)
	} else {
		t.Logf("gated-1: gated %.3f s, then schedulable %.3f s (pending %.3f s)", *d.Gated, *d.SchedulableWait, *d.Pending)
	}

	// The claim that cannot be allocated: the whole wait, censored, the DRA reason.
	tw := e.timeline(pods["dra-waits-1"].UID)
	if tw.Milestones.Scheduled != nil || tw.ObservedUntil == nil || tw.Counts.FailedScheduling == 0 {
		t.Fatalf("dra-waits-1: milestones %+v, failed scheduling %d; want never scheduled, with FailedScheduling", tw.Milestones, tw.Counts.FailedScheduling)
	}
	class := ""
	for _, ev := range tw.Events {
		var k events.K8sEvent
		if ev.Kind == events.KindK8sEvent && json.Unmarshal(ev.Data, &k) == nil && k.Reason == events.ReasonFailedScheduling {
			class = kube.ReasonClass(k.Scheduling)
			t.Logf("dra-waits-1: %q → %s", k.Note, class)
		}
	}
	if class != kube.ClassDynamicResources {
		t.Errorf("dra-waits-1: reason class %q, want %s", class, kube.ClassDynamicResources)
	}
}
