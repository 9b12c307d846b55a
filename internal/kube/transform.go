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
// conversions never read (volumes, ephemeral containers, containers' env, envFrom, command, args,
// volumeMounts, volumeDevices, lifecycle and probes; init containers keep only name, resources and
// restartPolicy, which sidecar accounting needs); nodes lose status.images, volumesAttached and
// volumesInUse. Everything the conversions read is kept, and values that are not Kubernetes
// objects (cache.DeletedFinalStateUnknown included) pass through untouched.
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
	for i := range spec.Containers {
		c := &spec.Containers[i]
		c.Env = nil
		c.EnvFrom = nil
		c.Command = nil
		c.Args = nil
		c.VolumeMounts = nil
		c.VolumeDevices = nil
		c.Lifecycle = nil
		c.LivenessProbe = nil
		c.ReadinessProbe = nil
		c.StartupProbe = nil
	}
	for i, c := range spec.InitContainers {
		spec.InitContainers[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
}
