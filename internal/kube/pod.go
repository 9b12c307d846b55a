package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/schedlens/schedlens/internal/events"
)

// PodStatus converts a pod (and its node, nil when unbound or not in cache) to a pod_status payload.
// Deleted and Scope are left for PodEnvelope, which knows them; its claims are listed by name,
// unresolved (PodStatusDRA resolves them).
func PodStatus(pod *corev1.Pod, node *corev1.Node) events.PodStatus {
	return PodStatusDRA(pod, node, nil)
}

// PodStatusDRA is PodStatus with the pod's ResourceClaims resolved through dra: the devices
// allocated to it and, when they are GPUs, the GPU it got (GPUOfClaims), which then replaces
// what the device plugin's resources and the node's labels say.
func PodStatusDRA(pod *corev1.Pod, node *corev1.Node, dra DRA) events.PodStatus {
	ps := events.PodStatus{
		Phase:             string(pod.Status.Phase),
		NodeName:          pod.Spec.NodeName,
		NominatedNodeName: pod.Status.NominatedNodeName,
		PodIP:             pod.Status.PodIP,
		HostIP:            pod.Status.HostIP,
		Labels:            cloneMap(pod.Labels),
		PriorityClass:     pod.Spec.PriorityClassName,
		Resources:         podResources(pod),
		Conditions:        podConditions(pod.Status.Conditions),
		Containers:        containerStatuses(pod.Status.ContainerStatuses),
		CreationTimestamp: microPtr(&pod.CreationTimestamp),
		DeletionTimestamp: microPtr(pod.DeletionTimestamp),
		Owner:             controllerOf(pod),
		ResourceVersion:   pod.ResourceVersion,
		GPU:               GPUOf(pod, node),
		Placement:         PlacementOf(pod),
	}
	if pod.Spec.Priority != nil {
		p := *pod.Spec.Priority
		ps.Priority = &p
	}
	for _, g := range pod.Spec.SchedulingGates {
		ps.SchedulingGates = append(ps.SchedulingGates, g.Name)
	}
	ps.Claims = PodClaims(pod, dra)
	if g := GPUOfClaims(ps.Claims); g != nil {
		if ps.GPU != nil && pod.Status.ExtendedResourceClaimStatus != nil {
			g.Resource = ps.GPU.Resource // nvidia.com/gpu, served by DRA (KEP-5004)
		}
		ps.GPU = g
	}
	return ps
}

// PodEnvelope wraps PodStatus in a pod_status envelope: id "pod_status/<uid>/<resourceVersion>"
// (+ "/claims/<digest>" for a pod with ResourceClaims, naming their resolved state; + "/deleted"
// for the snapshot taken at deletion), occurred_at and observed_at the snapshot time
// m.Observed, node spec.nodeName, experiment from the pod's labels (nil when it names none).
func PodEnvelope(pod *corev1.Pod, node *corev1.Node, deleted bool, m Meta) (*events.Envelope, error) {
	ps := PodStatusDRA(pod, node, m.DRA)
	ps.Deleted = deleted
	scope := m.Scope
	ps.Scope = &scope
	id := joinID(string(events.KindPodStatus), string(pod.UID), pod.ResourceVersion) + claimsDigest(ps.Claims) + deletedSuffix(deleted)
	ref := &events.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
	env, err := envelope(events.KindPodStatus, id, m.Observed, ref, pod.Spec.NodeName,
		experimentRef(pod.Labels, m.Labels), &ps, m)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return env, nil
}

func podConditions(conds []corev1.PodCondition) []events.Condition {
	if len(conds) == 0 {
		return nil
	}
	out := make([]events.Condition, 0, len(conds))
	for _, c := range conds {
		out = append(out, events.Condition{
			Type:               string(c.Type),
			Status:             string(c.Status),
			Reason:             c.Reason,
			LastTransitionTime: microPtr(&c.LastTransitionTime),
		})
	}
	return out
}

func containerStatuses(statuses []corev1.ContainerStatus) []events.ContainerStatus {
	if len(statuses) == 0 {
		return nil
	}
	out := make([]events.ContainerStatus, 0, len(statuses))
	for _, s := range statuses {
		cs := events.ContainerStatus{Name: s.Name, Ready: s.Ready, RestartCount: int(s.RestartCount)}
		switch st := s.State; {
		case st.Running != nil:
			cs.State = "running"
			cs.StartedAt = microPtr(&st.Running.StartedAt)
		case st.Terminated != nil:
			cs.State = "terminated"
			cs.Reason = st.Terminated.Reason
			cs.StartedAt = microPtr(&st.Terminated.StartedAt)
			code := int(st.Terminated.ExitCode)
			cs.ExitCode = &code
		case st.Waiting != nil:
			cs.State = "waiting"
			cs.Reason = st.Waiting.Reason
		}
		out = append(out, cs)
	}
	return out
}

func controllerOf(pod *corev1.Pod) *events.Owner { return ownerOf(pod.OwnerReferences) }

// podResources is the pod's effective requests and limits as the scheduler counts them, quantities
// as canonical strings; nil when the pod declares none.
func podResources(pod *corev1.Pod) *events.Resources {
	req := quantityStrings(effective(pod, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Requests }))
	lim := quantityStrings(effective(pod, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits }))
	if req == nil && lim == nil {
		return nil
	}
	return &events.Resources{Requests: req, Limits: lim}
}

// effective aggregates one list (requests or limits) of a pod's containers the way Kubernetes
// does (component-helpers PodRequests/PodLimits, without RuntimeClass overhead): the sum over
// containers and restartable (sidecar) init containers, or, when larger, what a regular init
// container needs while the sidecars started before it run; pod-level resources, when set, replace
// the aggregate for the resources they name.
func effective(pod *corev1.Pod, list func(corev1.ResourceRequirements) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		addList(total, list(c.Resources))
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for _, c := range pod.Spec.InitContainers {
		need := list(c.Resources)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addList(total, need)
			addList(sidecars, need)
			need = sidecars
		} else {
			sum := corev1.ResourceList{}
			addList(sum, need)
			addList(sum, sidecars)
			need = sum
		}
		maxList(initMax, need)
	}
	maxList(total, initMax)
	if pod.Spec.Resources != nil {
		for name, q := range list(*pod.Spec.Resources) {
			total[name] = q.DeepCopy()
		}
	}
	return total
}

func addList(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; ok {
			cur.Add(q)
			dst[name] = cur
		} else {
			dst[name] = q.DeepCopy()
		}
	}
}

func maxList(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

func quantityStrings(list corev1.ResourceList) map[string]string {
	if len(list) == 0 {
		return nil
	}
	out := make(map[string]string, len(list))
	for name, q := range list {
		out[string(name)] = q.String() // canonical: "1Gi", "500m"
	}
	return out
}
