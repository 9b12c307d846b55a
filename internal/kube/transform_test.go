package kube_test

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/schedlens/schedlens/internal/kube"
)

// Transform satisfies client-go's type.
var _ cache.TransformFunc = kube.NewTransformer().Transform

// transformed is obj through tr, or through a Transformer of its own when tr is nil.
func transformed[T any](t *testing.T, tr *kube.Transformer, obj T) T {
	t.Helper()
	if tr == nil {
		tr = kube.NewTransformer()
	}
	out, err := tr.Transform(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out.(T)
}

// transformedPod is pod through tr (a Transformer of its own when nil): the CachedPod the
// informer would hold, rebuilt into the corev1.Pod the conversions read.
func transformedPod(t *testing.T, tr *kube.Transformer, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	out := transformed[any](t, tr, pod)
	cached, ok := out.(*kube.CachedPod)
	if !ok {
		t.Fatalf("Transform(pod) = %T, want *kube.CachedPod", out)
	}
	return cached.Pod()
}

// TestTransformKeepsConversions converts every recorded and derived object before and after
// Transform: the output must not change.
func TestTransformKeepsConversions(t *testing.T) {
	// One Transformer for every object, as in a collector: the pods share what they repeat.
	tr := kube.NewTransformer()
	before := nodes(t)
	after := map[string]*corev1.Node{}
	for name, node := range before {
		after[name] = transformed(t, tr, node.DeepCopy())
		if diff := cmp.Diff(kube.NodeStatus(node), kube.NodeStatus(after[name])); diff != "" {
			t.Errorf("node %s: NodeStatus changed by Transform (-before +after):\n%s", name, diff)
		}
	}

	var pods []*corev1.Pod
	for _, pod := range recordedPods(t) {
		pods = append(pods, pod)
	}
	for _, pod := range derivedPods(t) {
		pods = append(pods, pod)
	}
	for _, ev := range readWatch[*corev1.Pod](t, "pods.watch.jsonl") {
		pods = append(pods, ev.Object)
	}
	dra := loadDRA(t)
	for _, pod := range readYAMLDocs[corev1.Pod](t, "dra/pods.yaml") {
		pods = append(pods, &pod)
	}
	for _, pod := range pods {
		slim := transformedPod(t, tr, pod.DeepCopy())
		if diff := cmp.Diff(kube.PodStatusDRA(pod, nodeOf(pod, before), dra), kube.PodStatusDRA(slim, nodeOf(slim, after), dra)); diff != "" {
			t.Errorf("pod %s rv %s: PodStatus changed by Transform (-before +after):\n%s", pod.Name, pod.ResourceVersion, diff)
		}
		envBefore, err := kube.PodEnvelope(pod, nodeOf(pod, before), false, meta)
		if err != nil {
			t.Fatal(err)
		}
		envAfter, err := kube.PodEnvelope(slim, nodeOf(slim, after), false, meta)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(envBefore, envAfter); diff != "" {
			t.Errorf("pod %s rv %s: PodEnvelope changed by Transform (-before +after):\n%s", pod.Name, pod.ResourceVersion, diff)
		}
	}

	for _, ev := range allEvents(t) {
		slim := transformed(t, tr, ev.Object.DeepCopy())
		envBefore, okBefore, errBefore := kube.EventEnvelope(ev.Object, meta)
		envAfter, okAfter, errAfter := kube.EventEnvelope(slim, meta)
		if diff := cmp.Diff([]any{envBefore, okBefore, errBefore}, []any{envAfter, okAfter, errAfter}); diff != "" {
			t.Errorf("event %s: EventEnvelope changed by Transform (-before +after):\n%s", ev.Object.Name, diff)
		}
	}

	for name, cm := range configMaps(t) {
		slim := transformed(t, tr, cm.DeepCopy())
		if diff := cmp.Diff(kube.ExperimentOf(cm, meta.Labels), kube.ExperimentOf(slim, meta.Labels)); diff != "" {
			t.Errorf("configmap %s: ExperimentOf changed by Transform (-before +after):\n%s", name, diff)
		}
	}
}

// TestTransformDrops checks what Transform takes away.
func TestTransformDrops(t *testing.T) {
	t.Run("recorded pod", func(t *testing.T) {
		pod := recordedPods(t)["day20-affinity-1"].DeepCopy()
		if len(pod.ManagedFields) == 0 {
			t.Fatal("the recorded pod has no managedFields to drop")
		}
		if got := transformedPod(t, nil, pod).ManagedFields; got != nil {
			t.Errorf("managedFields = %v, want none", got)
		}
	})
	t.Run("derived pod", func(t *testing.T) {
		pod := transformedPod(t, nil, derivedPods(t)["day20-rich-1"].DeepCopy())
		spec := pod.Spec
		model := spec.Containers[0]
		got := map[string]any{
			"managedFields":   pod.ManagedFields,
			"annotations":     pod.Annotations,
			"volumes":         spec.Volumes,
			"command":         model.Command,
			"args":            model.Args,
			"env":             model.Env,
			"volumeMounts":    model.VolumeMounts,
			"readinessProbe":  model.ReadinessProbe,
			"init containers": spec.InitContainers,
			"owner":           pod.OwnerReferences[0].Name,
			"model resources": model.Resources.Requests.Cpu().String(),
			"model image":     model.Image,
			"podIPs":          pod.Status.PodIPs,
			"status image":    pod.Status.ContainerStatuses[0].Image,
			"status state":    pod.Status.ContainerStatuses[0].State.Terminated.Reason,
		}
		always := corev1.ContainerRestartPolicyAlways
		want := map[string]any{
			"managedFields":  []metav1.ManagedFieldsEntry(nil),
			"annotations":    map[string]string(nil),
			"volumes":        []corev1.Volume(nil),
			"command":        []string(nil),
			"args":           []string(nil),
			"env":            []corev1.EnvVar(nil),
			"volumeMounts":   []corev1.VolumeMount(nil),
			"readinessProbe": (*corev1.Probe)(nil),
			"init containers": []corev1.Container{
				{Name: "log-shipper", Resources: derivedPods(t)["day20-rich-1"].Spec.InitContainers[0].Resources, RestartPolicy: &always},
				{Name: "fetch-model", Resources: derivedPods(t)["day20-rich-1"].Spec.InitContainers[1].Resources},
			},
			"owner":           "day20-rich-5d8f9c7b6",
			"model resources": "1",
			"model image":     "",
			"podIPs":          []corev1.PodIP(nil),
			"status image":    "",
			"status state":    "OOMKilled",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("transformed pod (-want +got):\n%s", diff)
		}
	})
	t.Run("derived node", func(t *testing.T) {
		node := transformed(t, nil, nodes(t)["gpu-node-ts"].DeepCopy())
		got := []any{node.Annotations, node.Status.Images, node.Status.VolumesInUse, node.Status.VolumesAttached, node.Labels["nvidia.com/gpu.product"]}
		want := []any{
			map[string]string{"node.alpha.kubernetes.io/ttl": "0"}, // only last-applied goes
			[]corev1.ContainerImage(nil), []corev1.UniqueVolumeName(nil), []corev1.AttachedVolume(nil),
			"NVIDIA-A100-SXM4-80GB-SHARED",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("transformed node (-want +got):\n%s", diff)
		}
	})
	t.Run("recorded event", func(t *testing.T) {
		ev := transformed(t, nil, allEvents(t)[0].Object.DeepCopy())
		if ev.ManagedFields != nil {
			t.Errorf("managedFields = %v, want none", ev.ManagedFields)
		}
		if ev.Note == "" || ev.Regarding.UID == "" {
			t.Errorf("Transform dropped event content: %+v", ev)
		}
	})
	t.Run("pass through", func(t *testing.T) {
		tombstone := cache.DeletedFinalStateUnknown{Key: "ai-lab/day20-background-5", Obj: recordedPods(t)["day20-control-1"]}
		for _, obj := range []any{tombstone, "not an object", (*eventsv1.Event)(nil)} {
			got, err := kube.NewTransformer().Transform(obj)
			if err != nil {
				t.Errorf("Transform(%T): %v", obj, err)
			}
			if diff := cmp.Diff(obj, got); diff != "" {
				t.Errorf("Transform(%T) changed it:\n%s", obj, diff)
			}
		}
		if len(tombstone.Obj.(*corev1.Pod).ManagedFields) == 0 {
			t.Error("Transform reached into a tombstone's object")
		}
	})
}

// Pods that repeat a whole value — label set, owner, node selector, affinity, tolerations,
// containers — share one copy of it once transformed; a pod whose value differs in anything
// keeps its own, unchanged.
func TestTransformShares(t *testing.T) {
	tr := kube.NewTransformer()
	recorded := recordedPods(t)["day20-affinity-1"]
	replica := func(name string, edit func(*corev1.Pod)) *corev1.Pod {
		p := recorded.DeepCopy()
		p.Name, p.UID = name, "uid-"+types.UID(name)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "day20-affinity-5d8f", UID: "rs-uid"}}
		p.Spec.NodeSelector = map[string]string{"pool": "a100"}
		if edit != nil {
			edit(p)
		}
		return transformedPod(t, tr, p)
	}
	// shares names the values b holds the very copy of a's, and b's own ones.
	shares := func(a, b *corev1.Pod) (shared, own []string) {
		for _, part := range []struct {
			name string
			a, b any
		}{
			{"affinity", a.Spec.Affinity, b.Spec.Affinity},
			{"containers", a.Spec.Containers, b.Spec.Containers},
			{"labels", a.Labels, b.Labels},
			{"node selector", a.Spec.NodeSelector, b.Spec.NodeSelector},
			{"owners", a.OwnerReferences, b.OwnerReferences},
			{"tolerations", a.Spec.Tolerations, b.Spec.Tolerations},
		} {
			if reflect.ValueOf(part.a).Pointer() == reflect.ValueOf(part.b).Pointer() {
				shared = append(shared, part.name)
			} else {
				own = append(own, part.name)
			}
		}
		return shared, own
	}
	if recorded.Spec.Affinity == nil || len(recorded.Spec.Tolerations) == 0 || len(recorded.Labels) == 0 {
		t.Fatal("the recorded pod lacks affinity, tolerations or labels to share")
	}
	a, b := replica("share-a", nil), replica("share-b", nil)
	if _, own := shares(a, b); own != nil {
		t.Errorf("two replicas of one pod do not share their %v", own)
	}

	other := replica("share-c", func(p *corev1.Pod) {
		p.Labels["schedlens.io/run"] = "2"
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	})
	if _, own := shares(a, other); !slices.Equal(own, []string{"containers", "labels"}) {
		t.Errorf("a pod with another run label and CPU request has its own %v; want its own containers and labels, the rest shared", own)
	}
	if got := other.Labels["schedlens.io/run"]; got != "2" {
		t.Errorf("the differing pod's run label = %q, want its own 2", got)
	}
	if got := other.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.String() != "2" {
		t.Errorf("the differing pod's CPU request = %s, want its own 2", got.String())
	}
	if got := a.Labels["schedlens.io/run"]; got != recorded.Labels["schedlens.io/run"] {
		t.Errorf("the first pod's run label became %q", got)
	}
	newImage := replica("share-d", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.example/other:2" })
	if shared, _ := shares(a, newImage); !slices.Contains(shared, "containers") {
		t.Error("containers that differ only in what the transform drops (the image) are not shared")
	}
}

// The informer caches a pod as a CachedPod: replicas on different nodes share one spec and keep
// their own node; a pod whose spec differs in anything kept (a StatefulSet pod's hostname) has
// its own; a cached pod passes through Transform again untouched, and its copy rebuilds the
// same pod.
func TestCachedPod(t *testing.T) {
	tr := kube.NewTransformer()
	recorded := recordedPods(t)["day20-affinity-1"]
	replica := func(name, node string, edit func(*corev1.Pod)) *kube.CachedPod {
		p := recorded.DeepCopy()
		p.Name, p.UID, p.Spec.NodeName = name, "uid-"+types.UID(name), node
		if edit != nil {
			edit(p)
		}
		out, err := tr.Transform(p)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*kube.CachedPod)
	}
	a, b := replica("cached-a", "gpu-node-1", nil), replica("cached-b", "gpu-node-2", nil)
	if kube.SpecOf(a) != kube.SpecOf(b) {
		t.Error("two replicas on different nodes do not share their spec")
	}
	if got := kube.SpecOf(a).NodeName; got != "" {
		t.Errorf("the shared spec holds node %q", got)
	}
	if a.Pod().Spec.NodeName != "gpu-node-1" || b.Pod().Spec.NodeName != "gpu-node-2" || b.NodeName() != "gpu-node-2" {
		t.Errorf("nodes after the cache: %q, %q; want gpu-node-1, gpu-node-2", a.Pod().Spec.NodeName, b.Pod().Spec.NodeName)
	}
	own := replica("cached-c", "gpu-node-1", func(p *corev1.Pod) { p.Spec.Hostname = "cached-c" })
	if kube.SpecOf(own) == kube.SpecOf(a) || own.Pod().Spec.Hostname != "cached-c" {
		t.Error("a pod with a hostname of its own shares another pod's spec")
	}

	again, err := tr.Transform(a)
	if err != nil || again != any(a) {
		t.Errorf("Transform(cached pod) = %p, %v; want the same object", again, err)
	}
	cp := a.DeepCopyObject().(*kube.CachedPod)
	if diff := cmp.Diff(a.Pod(), cp.Pod()); diff != "" {
		t.Errorf("a copy rebuilds another pod (-original +copy):\n%s", diff)
	}
	if len(cp.Pod().Status.Conditions) == 0 || len(cp.Pod().Status.ContainerStatuses) == 0 {
		t.Fatal("the recorded pod has no conditions or container statuses to compare")
	}
	for _, obj := range []any{(*kube.CachedPod)(nil), (*corev1.Pod)(nil), "not a pod"} {
		if uid, ok := kube.PodUID(obj); ok || uid != "" {
			t.Errorf("PodUID(%T) = %q, %v; want none", obj, uid, ok)
		}
		if pod, ok := kube.PodOf(obj); ok || pod != nil {
			t.Errorf("PodOf(%T) = %v, %v; want none", obj, pod, ok)
		}
	}
	if uid, ok := kube.PodUID(a); !ok || uid != "uid-cached-a" {
		t.Errorf("PodUID(cached pod) = %q, %v; want uid-cached-a", uid, ok)
	}
	if got, max := unsafe.Sizeof(kube.CachedPod{}), uintptr(480); got > max {
		t.Errorf("a CachedPod is %d bytes, more than the %d its doc promises (a corev1.Pod is %d)", got, max, unsafe.Sizeof(corev1.Pod{}))
	}
}
