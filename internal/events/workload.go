package events

import "strings"

// Labels the workload controllers put on the pods of a revision.
const (
	// LabelPodTemplateHash names a Deployment's revision on its ReplicaSet and pods.
	LabelPodTemplateHash = "pod-template-hash"
	// LabelControllerRevisionHash names a StatefulSet's or DaemonSet's revision on its pods.
	LabelControllerRevisionHash = "controller-revision-hash"
	// LabelLWSName and LabelLWSGroupIndex put a pod in a LeaderWorkerSet and one of its groups.
	LabelLWSName       = "leaderworkerset.sigs.k8s.io/name"
	LabelLWSGroupIndex = "leaderworkerset.sigs.k8s.io/group-index"
)

// WorkloadRef names a workload as Kubernetes writes it: a Deployment, StatefulSet, DaemonSet,
// Job, ReplicaSet, LeaderWorkerSet, or a Pod nothing controls.
type WorkloadRef struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

// String is namespace/Kind/name.
func (w WorkloadRef) String() string { return w.Namespace + "/" + w.Kind + "/" + w.Name }

// WorkloadOf resolves the workload that controls the pod namespace/name, from its controlling
// owner and labels alone, and the revision of that workload the pod belongs to:
//   - owned by a ReplicaSet whose name is <deployment>-<pod-template-hash>: the Deployment, at
//     revision pod-template-hash (the deployment controller names its ReplicaSets so); another
//     ReplicaSet is its own workload;
//   - a StatefulSet or DaemonSet, at revision controller-revision-hash;
//   - labelled leaderworkerset.sigs.k8s.io/name: that LeaderWorkerSet, the revision its group
//     index (group/<index>), whoever owns the pod;
//   - any other controller (a Job, a custom one): that controller;
//   - no controller: the pod itself.
func WorkloadOf(namespace, name string, p *PodStatus) (WorkloadRef, string) {
	if lws := p.Labels[LabelLWSName]; lws != "" {
		rev := ""
		if g, ok := p.Labels[LabelLWSGroupIndex]; ok {
			rev = "group/" + g
		}
		return WorkloadRef{namespace, "LeaderWorkerSet", lws}, rev
	}
	if p.Owner == nil || p.Owner.Kind == "" || p.Owner.Name == "" {
		return WorkloadRef{namespace, "Pod", name}, ""
	}
	switch p.Owner.Kind {
	case "ReplicaSet":
		hash := p.Labels[LabelPodTemplateHash]
		if d, ok := strings.CutSuffix(p.Owner.Name, "-"+hash); ok && hash != "" && d != "" {
			return WorkloadRef{namespace, WorkloadDeployment, d}, hash
		}
		return WorkloadRef{namespace, WorkloadReplicaSet, p.Owner.Name}, ""
	case "StatefulSet", "DaemonSet":
		return WorkloadRef{namespace, p.Owner.Kind, p.Owner.Name}, p.Labels[LabelControllerRevisionHash]
	}
	return WorkloadRef{namespace, p.Owner.Kind, p.Owner.Name}, ""
}
