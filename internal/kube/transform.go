package kube

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// lastApplied is kubectl's copy of the whole object in an annotation.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Transform is a cache.TransformFunc for informers: it shrinks objects before they enter the
// cache, in place (informers hand it freshly decoded objects). Every object loses managedFields and
// the kubectl.kubernetes.io/last-applied-configuration annotation; pods also lose what the
// conversions never read: volumes, ephemeral containers, image pull secrets, host aliases, DNS
// config, the pod security context, readiness gates, topology spread constraints, overhead,
// resource claims and scheduling gates; containers and init containers keep only name, resources
// and restartPolicy (which sidecar accounting needs); the status loses hostIPs and podIPs (hostIP
// and podIP stay), init, ephemeral and resource claim statuses, conditions keep type, status,
// reason and lastTransitionTime, container statuses name, ready, restartCount and state. Nodes
// lose status.images, volumesAttached and volumesInUse. Everything the conversions read is kept
// (TestTransformKeepsConversions), and values that are not Kubernetes objects
// (cache.DeletedFinalStateUnknown included) pass through untouched. With 10,000 pods in the cache
// the collector's memory is mostly these objects (docs/bench-lag-memory.md).
func Transform(obj any) (any, error) {
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.IsNil() {
		return obj, nil
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
		trimPod(o)
	case *corev1.Node:
		o.Status.Images = nil
		o.Status.VolumesAttached = nil
		o.Status.VolumesInUse = nil
	}
	return obj, nil
}

func trimPod(pod *corev1.Pod) {
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
	spec.ResourceClaims = nil
	spec.SchedulingGates = nil
	for i, c := range spec.Containers {
		spec.Containers[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	for i, c := range spec.InitContainers {
		spec.InitContainers[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	st := &pod.Status
	st.HostIPs = nil
	st.PodIPs = nil
	st.InitContainerStatuses = nil
	st.EphemeralContainerStatuses = nil
	st.ResourceClaimStatuses = nil
	for i, c := range st.Conditions {
		st.Conditions[i] = corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime}
	}
	for i, c := range st.ContainerStatuses {
		st.ContainerStatuses[i] = corev1.ContainerStatus{Name: c.Name, Ready: c.Ready, RestartCount: c.RestartCount, State: c.State}
	}
}
