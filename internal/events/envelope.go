// Package events is the domain root of schedlens: the wire envelope (v1), its typed payloads, the
// codec that validates them, and the NATS subject scheme. It imports only the standard library.
package events

import (
	"encoding/json"
	"time"
)

// Version is the envelope schema version this package reads and writes.
const Version = 1

// MaxIDLen bounds an envelope id; ids are idempotency keys stored in a unique index.
const MaxIDLen = 200

// Kind names what an envelope is about and which payload its data holds.
type Kind string

// The envelope kinds of docs/contracts.md.
const (
	KindK8sEvent   Kind = "k8s_event"
	KindPodStatus  Kind = "pod_status"
	KindNodeStatus Kind = "node_status"
	KindGPUSample  Kind = "gpu_sample"
	KindRequest    Kind = "request"
	KindExperiment Kind = "experiment"
	KindInventory  Kind = "inventory"
	// KindHeartbeat says a collector's watch of a scope was live over an interval: pods it
	// knew alive and did not see end were still there (a schedlens addition beside the contract).
	KindHeartbeat Kind = "heartbeat"
	// KindWorkloadStatus is a snapshot of a Deployment, ReplicaSet or StatefulSet: the
	// replicas it wants and the revision it runs (a schedlens addition beside the contract).
	KindWorkloadStatus Kind = "workload_status"
	// KindLabelRegistry is a label registry ConfigMap (labelled schedlens.io/label-registry):
	// the node labels placement depends on, with their source and owner (a schedlens addition).
	KindLabelRegistry Kind = "label_registry"
)

// Kinds lists every known kind in a stable order (for metrics and documentation).
var Kinds = []Kind{KindK8sEvent, KindPodStatus, KindNodeStatus, KindGPUSample, KindRequest, KindExperiment, KindInventory, KindHeartbeat, KindWorkloadStatus, KindLabelRegistry}

// Valid reports whether k is one of the known kinds.
func (k Kind) Valid() bool {
	for _, known := range Kinds {
		if k == known {
			return true
		}
	}
	return false
}

// PodRef identifies a pod. The UID separates a re-created pod from its namesake.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// ExperimentRef attributes an event to an experiment arm and run (repeat).
type ExperimentRef struct {
	Name string `json:"name"`
	Arm  string `json:"arm,omitempty"`
	Run  string `json:"run,omitempty"`
}

// IsZero reports whether no experiment is named.
func (e ExperimentRef) IsZero() bool { return e == ExperimentRef{} }

// Envelope is one event on the wire: the NATS message body, or one line of a JSONL file.
//
// Payload holds the typed, validated data (one of *K8sEvent, *PodStatus, *NodeStatus,
// *GPUSample, *Request, *Experiment, *Inventory, *Heartbeat, *WorkloadStatus). Data keeps the payload's original bytes and
// Raw the whole message's, so fields this version does not know survive storage.
type Envelope struct {
	V          int             `json:"v"`
	ID         string          `json:"id"`
	Kind       Kind            `json:"kind"`
	Cluster    string          `json:"cluster"`
	Source     string          `json:"source"`
	OccurredAt time.Time       `json:"occurred_at"`
	ObservedAt time.Time       `json:"observed_at"`
	Pod        *PodRef         `json:"pod,omitempty"`
	Node       string          `json:"node,omitempty"`
	Experiment *ExperimentRef  `json:"experiment,omitempty"`
	Data       json.RawMessage `json:"data"`

	Payload any    `json:"-"`
	Raw     []byte `json:"-"`
}

// PodUID returns the pod's UID, or "" when the envelope is not about a pod.
func (e *Envelope) PodUID() string {
	if e.Pod == nil {
		return ""
	}
	return e.Pod.UID
}

// Label keys that attribute pods to experiments unless an envelope names its experiment.
const (
	LabelExperiment = "schedlens.io/experiment"
	LabelArm        = "schedlens.io/arm"
	LabelRun        = "schedlens.io/run"
)

// LabelScenario marks the pods of a lab disruption scenario (rolling-update, drain, node-rejoin);
// their arm label names the scenario too.
const LabelScenario = "schedlens.io/scenario"

// NodePoolLabels are the node labels read, in order, as the name of a node's pool: the managed
// Kubernetes node-pool labels (GKE, EKS, AKS, Karpenter, OKE), a plain `node-pool`, then the
// lab's. The comparison's conditions and preflight's cluster view both read them.
var NodePoolLabels = []string{
	"cloud.google.com/gke-nodepool",
	"eks.amazonaws.com/nodegroup",
	"kubernetes.azure.com/agentpool",
	"agentpool",
	"karpenter.sh/nodepool",
	"oci.oraclecloud.com/node-pool-id",
	"node-pool",
	LabelLabPool,
}

// NodePool is the pool a node with these labels belongs to: the value of the first of
// NodePoolLabels it carries, "" when it carries none.
func NodePool(labels map[string]string) string {
	for _, k := range NodePoolLabels {
		if v := labels[k]; v != "" {
			return v
		}
	}
	return ""
}

// LabelLabPool names the pool of a lab node (lab/cluster).
const LabelLabPool = "lab.schedlens.io/pool"

// LabelKeys are the pod label keys that carry experiment attribution; configurable per cluster.
type LabelKeys struct {
	Experiment, Arm, Run string
}

// DefaultLabelKeys are the documented `schedlens.io/*` keys.
var DefaultLabelKeys = LabelKeys{Experiment: LabelExperiment, Arm: LabelArm, Run: LabelRun}

// ExperimentOf returns the experiment an envelope belongs to: the envelope's own experiment
// field when set, otherwise the labels of a pod_status snapshot read with keys.
func (e *Envelope) ExperimentOf(keys LabelKeys) ExperimentRef {
	if e.Experiment != nil && !e.Experiment.IsZero() {
		return *e.Experiment
	}
	if ps, ok := e.Payload.(*PodStatus); ok && ps.Labels != nil {
		return ExperimentRef{Name: ps.Labels[keys.Experiment], Arm: ps.Labels[keys.Arm], Run: ps.Labels[keys.Run]}
	}
	return ExperimentRef{}
}
