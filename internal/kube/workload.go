package kube

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/internal/events"
)

// AnnotationRevision is the revision number the deployment controller writes on a Deployment and
// on each of its ReplicaSets (what `kubectl rollout history` lists).
const AnnotationRevision = "deployment.kubernetes.io/revision"

// Deployment converts a Deployment to a workload_status payload: its replicas, revision number,
// rollout progress and conditions (Progressing=False with ProgressDeadlineExceeded is a stalled
// rollout).
func Deployment(d *appsv1.Deployment) events.WorkloadStatus {
	w := workloadMeta(events.WorkloadDeployment, d.ObjectMeta)
	w.Replicas = cloneInt32(d.Spec.Replicas)
	w.Revision = d.Annotations[AnnotationRevision]
	w.Paused = d.Spec.Paused
	w.ReadyReplicas, w.AvailableReplicas, w.UpdatedReplicas = d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UpdatedReplicas
	w.ObservedGen = d.Status.ObservedGeneration
	for _, c := range d.Status.Conditions {
		w.Conditions = append(w.Conditions, events.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, LastTransitionTime: microPtr(&c.LastTransitionTime)})
	}
	return w
}

// ReplicaSet converts a ReplicaSet: its replicas, the revision number and pod-template-hash of
// the Deployment revision it holds, and that Deployment.
func ReplicaSet(rs *appsv1.ReplicaSet) events.WorkloadStatus {
	w := workloadMeta(events.WorkloadReplicaSet, rs.ObjectMeta)
	w.Replicas = cloneInt32(rs.Spec.Replicas)
	w.Revision = rs.Annotations[AnnotationRevision]
	w.TemplateHash = rs.Labels[events.LabelPodTemplateHash]
	w.Owner = ownerOf(rs.OwnerReferences)
	w.ReadyReplicas, w.AvailableReplicas = rs.Status.ReadyReplicas, rs.Status.AvailableReplicas
	w.ObservedGen = rs.Status.ObservedGeneration
	return w
}

// StatefulSet converts a StatefulSet: its replicas and its update revision, which its pods of
// that revision carry as controller-revision-hash.
func StatefulSet(s *appsv1.StatefulSet) events.WorkloadStatus {
	w := workloadMeta(events.WorkloadStatefulSet, s.ObjectMeta)
	w.Replicas = cloneInt32(s.Spec.Replicas)
	w.Revision, w.TemplateHash, w.CurrentRevision = s.Status.UpdateRevision, s.Status.UpdateRevision, s.Status.CurrentRevision
	w.ReadyReplicas, w.AvailableReplicas, w.UpdatedReplicas = s.Status.ReadyReplicas, s.Status.AvailableReplicas, s.Status.UpdatedReplicas
	w.ObservedGen = s.Status.ObservedGeneration
	return w
}

func workloadMeta(kind string, m metav1.ObjectMeta) events.WorkloadStatus {
	return events.WorkloadStatus{Kind: kind, Namespace: m.Namespace, Name: m.Name, UID: string(m.UID),
		Generation: m.Generation, CreationTimestamp: microPtr(&m.CreationTimestamp), ResourceVersion: m.ResourceVersion}
}

func cloneInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// ownerOf is the controlling owner among refs, nil when none controls.
func ownerOf(refs []metav1.OwnerReference) *events.Owner {
	for _, ref := range refs {
		if ref.Controller != nil && *ref.Controller {
			return &events.Owner{Kind: ref.Kind, Name: ref.Name}
		}
	}
	return nil
}

// WorkloadEnvelope wraps a workload_status payload: id
// "workload_status/<kind>/<namespace>/<name>/<resourceVersion>" (+ "/deleted" for the snapshot
// taken at deletion), no pod and no node, occurred_at and observed_at m.Observed.
func WorkloadEnvelope(w events.WorkloadStatus, deleted bool, m Meta) (*events.Envelope, error) {
	w.Deleted = deleted
	id := joinID(string(events.KindWorkloadStatus), w.Kind, w.Namespace, w.Name, w.ResourceVersion) + deletedSuffix(deleted)
	env, err := envelope(events.KindWorkloadStatus, id, m.Observed, nil, "", nil, &w, m)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
	}
	return env, nil
}
