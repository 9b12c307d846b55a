package kube

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// CachedPod is what a collector's pod informer caches of a pod (Transformer.Transform makes it):
// the pod's metadata as the transform leaves it, its spec without the node name — shared whole
// by every pod with an equal one, as the replicas of a Deployment's revision have — and of its
// status only what the conversions read, in types of its own a fraction the size of
// corev1.PodStatus's (a corev1.Pod is 1,240 bytes before any slice or map; a CachedPod 448).
// Pod rebuilds the corev1.Pod the conversions take, for each object handled; the cache holds
// only this. Like every informer object it is read-only: what it points to is shared.
type CachedPod struct {
	metav1.ObjectMeta
	spec     *corev1.PodSpec // shared (Transformer.specs); NodeName is nodeName
	nodeName string
	status   cachedStatus
}

// cachedStatus is what the conversions and the prober read of a pod's status.
type cachedStatus struct {
	phase                  corev1.PodPhase
	reason, nominated      string
	hostIP, podIP          string
	qosClass               corev1.PodQOSClass
	startTime              *metav1.Time
	observedGeneration     int64
	conditions             []cachedCondition
	containers             []cachedContainer
	claims                 []corev1.PodResourceClaimStatus
	extendedResourceClaims *corev1.PodExtendedResourceClaimStatus
}

// cachedCondition is a pod condition as the transform keeps it: 72 bytes, not 120.
type cachedCondition struct {
	typ                corev1.PodConditionType
	status             corev1.ConditionStatus
	reason             string
	lastTransitionTime metav1.Time
}

// cachedContainer is a container status as the transform keeps it: 48 bytes, not 208.
type cachedContainer struct {
	name         string
	ready        bool
	restartCount int32
	state        corev1.ContainerState
}

// cachePod is pod, its metadata and spec trimmed by trimPod, as the cache holds it: its spec
// shared with the pods that have an equal one, of its status what cachedStatus keeps, the
// strings pods repeat interned.
func (t *Transformer) cachePod(pod *corev1.Pod) *CachedPod {
	spec := pod.Spec
	spec.NodeName = ""
	st := &pod.Status
	c := &CachedPod{
		ObjectMeta: pod.ObjectMeta,
		spec:       t.specs.get(&spec, nil),
		nodeName:   pod.Spec.NodeName,
		status: cachedStatus{
			phase: corev1.PodPhase(intern(string(st.Phase))), reason: intern(st.Reason), nominated: intern(st.NominatedNodeName),
			hostIP: intern(st.HostIP), podIP: st.PodIP, qosClass: corev1.PodQOSClass(intern(string(st.QOSClass))),
			startTime: st.StartTime, observedGeneration: st.ObservedGeneration, claims: st.ResourceClaimStatuses,
			extendedResourceClaims: st.ExtendedResourceClaimStatus,
		},
	}
	if n := len(st.Conditions); n > 0 {
		c.status.conditions = make([]cachedCondition, n)
		for i, cond := range st.Conditions {
			c.status.conditions[i] = cachedCondition{corev1.PodConditionType(intern(string(cond.Type))),
				corev1.ConditionStatus(intern(string(cond.Status))), intern(cond.Reason), cond.LastTransitionTime}
		}
	}
	if n := len(st.ContainerStatuses); n > 0 {
		c.status.containers = make([]cachedContainer, n)
		for i, cs := range st.ContainerStatuses {
			c.status.containers[i] = cachedContainer{intern(cs.Name), cs.Ready, cs.RestartCount, cs.State}
		}
	}
	return c
}

// Pod rebuilds the pod as trimPod left it, for the conversions: a new corev1.Pod whose slices
// and maps are the cached pod's own (read-only, as an informer's objects are).
func (p *CachedPod) Pod() *corev1.Pod {
	st := &p.status
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: p.ObjectMeta,
		Spec:       *p.spec,
		Status: corev1.PodStatus{
			Phase: st.phase, Reason: st.reason, NominatedNodeName: st.nominated,
			HostIP: st.hostIP, PodIP: st.podIP, QOSClass: st.qosClass, StartTime: st.startTime,
			ObservedGeneration: st.observedGeneration, ResourceClaimStatuses: st.claims,
			ExtendedResourceClaimStatus: st.extendedResourceClaims,
		},
	}
	pod.Spec.NodeName = p.nodeName
	if len(st.conditions) > 0 {
		pod.Status.Conditions = make([]corev1.PodCondition, len(st.conditions))
		for i, c := range st.conditions {
			pod.Status.Conditions[i] = corev1.PodCondition{Type: c.typ, Status: c.status, Reason: c.reason, LastTransitionTime: c.lastTransitionTime}
		}
	}
	if len(st.containers) > 0 {
		pod.Status.ContainerStatuses = make([]corev1.ContainerStatus, len(st.containers))
		for i, c := range st.containers {
			pod.Status.ContainerStatuses[i] = corev1.ContainerStatus{Name: c.name, Ready: c.ready, RestartCount: c.restartCount, State: c.state}
		}
	}
	return pod
}

// NodeName is the node the pod is bound to ("" while pending).
func (p *CachedPod) NodeName() string { return p.nodeName }

// GetObjectKind implements runtime.Object: a CachedPod carries no type metadata.
func (p *CachedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object (client-go's cache mutation detector copies what it
// caches). The shared spec stays shared: nothing writes to it.
func (p *CachedPod) DeepCopyObject() runtime.Object {
	c := *p
	p.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	if p.status.startTime != nil {
		c.status.startTime = p.status.startTime.DeepCopy()
	}
	c.status.conditions = slices.Clone(p.status.conditions)
	if p.status.containers != nil {
		c.status.containers = make([]cachedContainer, len(p.status.containers))
		for i, cs := range p.status.containers {
			c.status.containers[i] = cs
			cs.state.DeepCopyInto(&c.status.containers[i].state)
		}
	}
	if p.status.claims != nil {
		c.status.claims = make([]corev1.PodResourceClaimStatus, len(p.status.claims))
		for i := range p.status.claims {
			p.status.claims[i].DeepCopyInto(&c.status.claims[i])
		}
	}
	c.status.extendedResourceClaims = p.status.extendedResourceClaims.DeepCopy()
	return &c
}

// PodOf is the pod an informer's object holds — a CachedPod rebuilt, or a corev1.Pod as it is
// (a cache without the transform, a test's object) — and false for anything else.
func PodOf(obj any) (*corev1.Pod, bool) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o, o != nil
	case *CachedPod:
		if o == nil {
			return nil, false
		}
		return o.Pod(), true
	}
	return nil, false
}

// PodUID is the UID of the pod an informer's object holds, without rebuilding it; false for an
// object that is not a pod.
func PodUID(obj any) (types.UID, bool) {
	switch o := obj.(type) {
	case *corev1.Pod:
		if o != nil {
			return o.UID, true
		}
	case *CachedPod:
		if o != nil {
			return o.UID, true
		}
	}
	return "", false
}
