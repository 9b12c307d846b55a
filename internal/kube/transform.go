package kube

import (
	"encoding/json"
	"reflect"
	"sync"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lastApplied is kubectl's copy of the whole object in an annotation.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Transformer shrinks informer objects before they enter the cache (Transform) and holds the
// values the pods in that cache share. A collector has one, for all its informers.
type Transformer struct {
	labels      *shared[map[string]string] // label sets and node selectors
	owners      *shared[[]metav1.OwnerReference]
	affinity    *shared[*corev1.Affinity]
	tolerations *shared[[]corev1.Toleration]
	containers  *shared[[]corev1.Container]
	specs       *shared[*corev1.PodSpec] // whole pod specs, node name left out (CachedPod)
}

// NewTransformer returns a Transformer holding no shared value yet.
func NewTransformer() *Transformer {
	return &Transformer{
		labels:      newShared[map[string]string](),
		owners:      newShared[[]metav1.OwnerReference](),
		affinity:    newShared[*corev1.Affinity](),
		tolerations: newShared[[]corev1.Toleration](),
		containers:  newShared[[]corev1.Container](),
		specs:       newShared[*corev1.PodSpec](),
	}
}

// Transform is a cache.TransformFunc for informers: it shrinks objects before they enter the
// cache, in place (informers hand it freshly decoded objects). Every object loses managedFields and
// the kubectl.kubernetes.io/last-applied-configuration annotation; pods also lose what the
// conversions never read: volumes, ephemeral containers, image pull secrets, host aliases, DNS
// config, the pod security context, readiness gates, topology spread constraints and
// overhead (scheduling gates keep their names; resource claims and their statuses stay whole,
// they are small); containers and init containers keep only name, resources
// and restartPolicy (which sidecar accounting needs); of the status only phase, reason,
// nominatedNodeName, hostIP, podIP, qosClass, startTime, observedGeneration, the resource claim
// statuses, conditions (type, status, reason and lastTransitionTime) and container statuses
// (name, ready, restartCount and state) stay. The strings every pod of an experiment repeats
// (namespace, labels, node, owner, phase, condition types, container names) are interned, and the
// values its pods repeat whole (label set, owner, node selector, affinity, tolerations,
// containers, and the whole spec but for the node name) are held once by t and shared by the
// pods (see shared). A pod is returned as a *CachedPod, which holds only what is kept (its Pod
// method rebuilds the corev1.Pod); every other object as the type it came as. Nodes
// lose status.images, volumesAttached and volumesInUse; ResourceClaims their drivers'
// per-device status; Deployments, ReplicaSets and StatefulSets
// their pod template (the pods themselves are watched). Everything the conversions read is kept
// (TestTransformKeepsConversions), and values that are not Kubernetes objects
// (cache.DeletedFinalStateUnknown included) and pods already transformed pass through untouched. With 10,000 pods in the cache
// the collector's memory is mostly these objects (docs/architecture.md#memory).
func (t *Transformer) Transform(obj any) (any, error) {
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.IsNil() {
		return obj, nil
	}
	if _, done := obj.(*CachedPod); done {
		return obj, nil // client-go may hand a cached object back (its transform must allow it)
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil
	}
	accessor.SetManagedFields(nil)
	if ann := accessor.GetAnnotations(); ann != nil {
		if _, ok := ann[lastApplied]; ok {
			delete(ann, lastApplied)
			if len(ann) == 0 {
				ann = nil
			}
			accessor.SetAnnotations(ann)
		}
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		t.trimPod(o)
		return t.cachePod(o), nil
	case *appsv1.Deployment:
		o.Spec.Template = corev1.PodTemplateSpec{}
	case *appsv1.ReplicaSet:
		o.Spec.Template = corev1.PodTemplateSpec{}
	case *appsv1.StatefulSet:
		o.Spec.Template, o.Spec.VolumeClaimTemplates = corev1.PodTemplateSpec{}, nil
	case *resourcev1.ResourceClaim:
		o.Status.Devices = nil // drivers' per-device status (conditions, network data): not read
	case *corev1.Node:
		o.Status.Images = nil
		o.Status.VolumesAttached = nil
		o.Status.VolumesInUse = nil
	}
	return obj, nil
}

// trimPod trims a pod's metadata and spec in place, as Transform says; cachePod keeps the status.
func (t *Transformer) trimPod(pod *corev1.Pod) {
	meta := &pod.ObjectMeta
	meta.Namespace = intern(meta.Namespace)
	meta.GenerateName = intern(meta.GenerateName)
	meta.Labels = t.labels.get(meta.Labels, internMap)
	meta.OwnerReferences = t.owners.get(meta.OwnerReferences, func(refs []metav1.OwnerReference) []metav1.OwnerReference {
		return slim(refs, func(r metav1.OwnerReference) metav1.OwnerReference {
			r.APIVersion, r.Kind, r.Name = intern(r.APIVersion), intern(r.Kind), intern(r.Name)
			return r
		})
	})
	spec := &pod.Spec
	spec.Volumes = nil
	spec.EphemeralContainers = nil
	spec.ImagePullSecrets = nil
	spec.HostAliases = nil
	spec.DNSConfig = nil
	spec.SecurityContext = nil
	spec.ReadinessGates = nil
	spec.TopologySpreadConstraints = nil
	spec.Overhead = nil
	spec.SchedulingGates = slim(spec.SchedulingGates, func(g corev1.PodSchedulingGate) corev1.PodSchedulingGate {
		return corev1.PodSchedulingGate{Name: intern(g.Name)}
	})
	spec.NodeName = intern(spec.NodeName)
	spec.PriorityClassName = intern(spec.PriorityClassName)
	spec.SchedulerName = intern(spec.SchedulerName)
	spec.ServiceAccountName = intern(spec.ServiceAccountName)
	spec.DeprecatedServiceAccount = intern(spec.DeprecatedServiceAccount)
	spec.NodeSelector = t.labels.get(spec.NodeSelector, internMap)
	spec.Affinity = t.affinity.get(spec.Affinity, nil)
	spec.Containers = t.containers.get(spec.Containers, slimContainers)
	spec.InitContainers = t.containers.get(spec.InitContainers, slimContainers)
	spec.Tolerations = t.tolerations.get(spec.Tolerations, func(ts []corev1.Toleration) []corev1.Toleration {
		return slim(ts, func(tol corev1.Toleration) corev1.Toleration {
			tol.Key, tol.Value = intern(tol.Key), intern(tol.Value)
			return tol
		})
	})
	// The status is kept by cachePod, in types of its own.
}

// slimContainers keeps of each container its name, resources and restartPolicy.
func slimContainers(cs []corev1.Container) []corev1.Container {
	return slim(cs, func(c corev1.Container) corev1.Container {
		return corev1.Container{Name: intern(c.Name), Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	})
}

// slim returns keep of each element of xs in a new slice of the exact length (a decoder's slices
// have room to spare, and the old elements hold what keep drops); an empty xs is returned as is.
func slim[T any](xs []T, keep func(T) T) []T {
	if len(xs) == 0 {
		return xs
	}
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = keep(x)
	}
	return out
}

// intern returns the canonical copy of s: the names and values repeated in every pod of an
// experiment (namespace, labels, node, condition types) are held once, not once per pod.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

func internMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}

// maxShared is the most distinct values of one kind shared holds. When it is full it starts
// again empty: the pods that hold a value keep it (values never change), the values of pods long
// gone are let go, and the pods that come next share anew — so a collector that watches
// experiment after experiment for weeks keeps sharing, in bounded memory. Where more than
// maxShared values of one kind are alive at once (pods with a label of their own, as a
// StatefulSet's or an indexed Job's have), that kind shares little; the others are unaffected.
const maxShared = 4096

// shared holds one copy of each whole value the pods of one experiment arm repeat (the label
// set, the owner, the node selector, the affinity, the tolerations, the containers as
// slimContainers keeps them), and the pods share it, as unique.Make does for strings — safe
// because nothing writes to an informer's objects (client-go's rule, kept by the collector and
// the conversions), and because prepare builds new values instead of editing the ones it is
// given, so a pod transformed twice never writes into what others share. Equal means equal as
// JSON, so two values the conversions could tell apart are never merged
// (TestTransformKeepsConversions runs every fixture through one Transformer; TestTransformShares).
type shared[T any] struct {
	mu     sync.Mutex
	values map[string]T
}

func newShared[T any]() *shared[T] { return &shared[T]{values: map[string]T{}} }

// get returns v made canonical by prepare (nil: as is) — the held copy of it when there is one,
// else v, held for the next pods. The key is the prepared value's JSON, so what prepare drops
// neither keeps two equal values apart nor stays in memory. Empty values are returned as they
// are.
func (s *shared[T]) get(v T, prepare func(T) T) T {
	if empty(v) {
		return v
	}
	if prepare != nil {
		v = prepare(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	key := string(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if have, ok := s.values[key]; ok {
		return have
	}
	if len(s.values) >= maxShared {
		clear(s.values)
	}
	s.values[key] = v
	return v
}

// empty says a map or slice has no element, or a pointer is nil (the kinds shared holds).
func empty(v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		return rv.IsNil()
	}
	return rv.Len() == 0
}
