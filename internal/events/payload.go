package events

import (
	"slices"
	"strings"
	"time"
)

// K8sEvent is a Kubernetes Event about a pod or node (k8s_event). Count is the event series
// count: every increase is one more occurrence of the same event.
type K8sEvent struct {
	Reason              string  `json:"reason"`
	Type                string  `json:"type,omitempty"`
	Note                string  `json:"note,omitempty"`
	ReportingController string  `json:"reporting_controller,omitempty"`
	Action              string  `json:"action,omitempty"`
	EventUID            string  `json:"event_uid,omitempty"`
	Count               int     `json:"count,omitempty"`
	Related             *PodRef `json:"related,omitempty"`
	// Scheduling is the parsed note of a FailedScheduling event; nil for other reasons.
	Scheduling *SchedulingFailure `json:"scheduling,omitempty"`
}

// SchedulingFailure is a FailedScheduling note parsed into counts, e.g.
// "0/6 nodes are available: 1 Insufficient nvidia.com/gpu, 5 node(s) didn't match Pod's node
// affinity/selector. preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."
type SchedulingFailure struct {
	Available int           `json:"available"` // nodes that fit ("0" of "0/6")
	Total     int           `json:"total"`     // nodes considered ("6" of "0/6")
	Reasons   []ReasonCount `json:"reasons"`   // why the others did not, with node counts
	// Preemption is the scheduler's "preemption:" clause, nil when the note has none.
	Preemption *PreemptionAttempt `json:"preemption,omitempty"`
}

// ReasonCount is one reason in a scheduler note and the number of nodes it applied to.
type ReasonCount struct {
	Reason string `json:"reason"`
	Nodes  int    `json:"nodes"`
}

// PreemptionAttempt is the outcome of the preemption clause of a FailedScheduling note.
type PreemptionAttempt struct {
	// Outcome is "victims_found" ("found a potential placement … preempting N victims"),
	// "not_helpful" (every node says preemption is not helpful) or "no_placement" otherwise.
	Outcome string        `json:"outcome"`
	Node    string        `json:"node,omitempty"`    // the nominated node, when victims were found
	Victims int           `json:"victims,omitempty"` // how many victims, when found
	Reasons []ReasonCount `json:"reasons,omitempty"` // per-node reasons of the clause
	Note    string        `json:"note"`              // the clause as the scheduler wrote it
}

// Preemption outcomes.
const (
	PreemptionVictimsFound = "victims_found"
	PreemptionNotHelpful   = "not_helpful"
	PreemptionNoPlacement  = "no_placement"
)

// Scheduler event reasons that drive milestones.
const (
	ReasonScheduled        = "Scheduled"
	ReasonFailedScheduling = "FailedScheduling"
	ReasonPreempted        = "Preempted"
	ReasonEvicted          = "Evicted"
	// ReasonUnschedulable is KAI-Scheduler's FailedScheduling.
	ReasonUnschedulable = "Unschedulable"
	// ReasonFailedPrepareDynamicResources: the kubelet could not prepare a pod's DRA claims
	// (after the pod was scheduled, before its sandbox).
	ReasonFailedPrepareDynamicResources = "FailedPrepareDynamicResources"
)

// Condition is one pod condition. Kubernetes keeps LastTransitionTime to the second.
type Condition struct {
	Type               string     `json:"type"`
	Status             string     `json:"status"`
	Reason             string     `json:"reason,omitempty"`
	LastTransitionTime *time.Time `json:"last_transition_time,omitempty"`
}

// ContainerStatus is one container's state in a pod snapshot. StartedAt is to the second.
type ContainerStatus struct {
	Name         string     `json:"name"`
	Ready        bool       `json:"ready"`
	RestartCount int        `json:"restart_count"`
	State        string     `json:"state,omitempty"`
	Reason       string     `json:"reason,omitempty"`
	StartedAt    *time.Time `json:"started_at,omitempty"`
	ExitCode     *int       `json:"exit_code,omitempty"`
}

// Owner is a pod's controlling owner.
type Owner struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// Resources holds a pod's summed container requests and limits, quantities as strings.
type Resources struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// PodStatus is a snapshot of a pod, taken on every change (pod_status).
type PodStatus struct {
	Phase             string            `json:"phase"`
	NodeName          string            `json:"node_name,omitempty"`
	NominatedNodeName string            `json:"nominated_node_name,omitempty"`
	PodIP             string            `json:"pod_ip,omitempty"`
	HostIP            string            `json:"host_ip,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	PriorityClass     string            `json:"priority_class,omitempty"`
	Priority          *int32            `json:"priority,omitempty"`
	Resources         *Resources        `json:"resources,omitempty"`
	Conditions        []Condition       `json:"conditions,omitempty"`
	Containers        []ContainerStatus `json:"containers,omitempty"`
	CreationTimestamp *time.Time        `json:"creation_timestamp,omitempty"`
	DeletionTimestamp *time.Time        `json:"deletion_timestamp,omitempty"`
	Deleted           bool              `json:"deleted,omitempty"`
	Owner             *Owner            `json:"owner,omitempty"`
	ResourceVersion   string            `json:"resource_version,omitempty"`

	// GPU, Placement and Scope are schedlens additions beside the contract fields: how the
	// pod uses GPUs, the placement rules it was scheduled under, and the collector scope it
	// was seen in (which inventory may end it).
	GPU       *GPU       `json:"gpu,omitempty"`
	Placement *Placement `json:"placement,omitempty"`
	Scope     *Scope     `json:"scope,omitempty"`

	// SchedulingGates are the names of spec.schedulingGates still on the pod (Kueue's
	// kueue.x-k8s.io/admission, …): while any is there no scheduler looks at the pod. Gates can
	// only be removed, so the first snapshot without them ends the gated wait.
	SchedulingGates []string `json:"scheduling_gates,omitempty"`
	// Claims are the pod's Dynamic Resource Allocation claims (spec.resourceClaims with their
	// status, and the claim the scheduler made for extended resources backed by DRA), resolved
	// through the collector's ResourceClaim and ResourceSlice caches (docs/dra.md).
	Claims []PodClaim `json:"claims,omitempty"`
}

// PodClaim is one ResourceClaim a pod uses and what was allocated for it.
type PodClaim struct {
	// Name is the claim's name in pod.spec.resourceClaims; "" for the claim the scheduler
	// generated for extended resources (status.extendedResourceClaimStatus, KEP-5004).
	Name string `json:"name,omitempty"`
	// Claim is the ResourceClaim object's name (the spec's resourceClaimName, or the one made
	// from Template); "" until it exists.
	Claim    string `json:"claim,omitempty"`
	Template string `json:"template,omitempty"`
	Extended bool   `json:"extended,omitempty"`
	// DeviceClasses are the classes the claim's requests name (the first alternative of a
	// firstAvailable request), in order.
	DeviceClasses []string `json:"device_classes,omitempty"`
	// Selectors are the CEL selectors of the claim's requests (of the first alternative of a
	// firstAvailable request), as written, in order: the pod's placement rules on device
	// attributes (GET /v1/labels reads them).
	Selectors []string `json:"selectors,omitempty"`
	// AllocatedAt is status.allocation.allocationTimestamp (to the second) and
	// AllocationObserved when the collector first saw the claim allocated (µs); both nil until
	// it is.
	AllocatedAt        *time.Time `json:"allocated_at,omitempty"`
	AllocationObserved *time.Time `json:"allocation_observed,omitempty"`
	// ReservedFor counts the consumers the claim is reserved for: more than one pod means a
	// shared claim.
	ReservedFor int `json:"reserved_for,omitempty"`
	// Sharing is the sharing strategy the claim's opaque driver config asks for
	// (SharingTimeSlicing, SharingMPS), "" when it names none.
	Sharing string        `json:"sharing,omitempty"`
	Devices []ClaimDevice `json:"devices,omitempty"`
}

// ClaimDevice is one allocated device (status.allocation.devices.results[]) with what its
// ResourceSlice says of it; the slice fields are empty when no slice in cache names the device.
type ClaimDevice struct {
	Request          string            `json:"request"`
	DeviceClass      string            `json:"device_class,omitempty"`
	Driver           string            `json:"driver"`
	Pool             string            `json:"pool"`
	Device           string            `json:"device"`
	ShareID          string            `json:"share_id,omitempty"`
	ConsumedCapacity map[string]string `json:"consumed_capacity,omitempty"`
	Node             string            `json:"node,omitempty"`
	Type             string            `json:"type,omitempty"`  // the device's type attribute: gpu, mig, …
	Model            string            `json:"model,omitempty"` // productName
	UUID             string            `json:"uuid,omitempty"`
	MIGProfile       string            `json:"mig_profile,omitempty"`
	ParentUUID       string            `json:"parent_uuid,omitempty"`
	// Attributes are the values of the device attributes the claim's selectors read
	// (DeviceAttributeRefs), by qualified name, as text; a selector's attribute the device
	// lacks is left out.
	Attributes map[string]string `json:"attributes,omitempty"`
}

// GPU says how a pod uses GPUs, derived from its requests and, once it is bound, its node's
// labels (NVIDIA device plugin and GPU feature discovery conventions): the pod spec alone cannot
// tell an exclusive GPU from a time-sliced or MPS replica.
type GPU struct {
	Resource string `json:"resource"` // nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-1g.10gb, …
	Count    int64  `json:"count"`    // devices (or replicas, or MIG slices) requested
	// Model is the node's nvidia.com/gpu.product without the -SHARED or -MIG-… suffix the
	// device plugin appends; empty until the pod is bound to a labelled node.
	Model string `json:"model,omitempty"`
	// Sharing is one of SharingExclusive, SharingTimeSlicing, SharingMPS, SharingMIG, or
	// SharingUnknown while the pod is not bound.
	Sharing    string `json:"sharing"`
	MIGProfile string `json:"mig_profile,omitempty"` // e.g. 1g.10gb
	Replicas   int    `json:"replicas,omitempty"`    // nvidia.com/gpu.replicas: pods per physical GPU

	// Via is how the GPU was allocated: "" (the device plugin) or ViaDRA (ResourceClaims; then
	// Resource is the DeviceClass, or the extended resource a DeviceClass maps to DRA).
	Via string `json:"via,omitempty"`
	// UUIDs are the allocated devices' UUIDs (DRA only: the device plugin does not say).
	UUIDs []string `json:"uuids,omitempty"`
	// ClaimPods is how many pods the GPU's claim is reserved for (DRA; >1: a shared claim).
	ClaimPods int `json:"claim_pods,omitempty"`
}

// GPU sharing modes.
const (
	SharingExclusive   = "exclusive"
	SharingTimeSlicing = "time-slicing"
	SharingMPS         = "mps"
	SharingMIG         = "mig"
	SharingUnknown     = "unknown"
	// SharingSharedClaim: one DRA claim reserved for several pods, with no sharing strategy in
	// its config (the driver's default applies); SharingConsumable: a share of a device that
	// allows multiple allocations (consumable capacity, status.allocation shareID).
	SharingSharedClaim = "shared-claim"
	SharingConsumable  = "consumable-share"
)

// ViaDRA marks a GPU allocated through Dynamic Resource Allocation (GPU.Via).
const ViaDRA = "dra"

// Placement summarises the rules a pod was scheduled under, compactly enough to group by.
type Placement struct {
	NodeSelector map[string]string `json:"node_selector,omitempty"`
	// Required holds one entry per required node selector term (terms are ORed), e.g.
	// "accelerator In (nvidia-gpu)"; expressions within a term are joined by " && ".
	Required []string `json:"required,omitempty"`
	// Preferred holds one entry per preferred term, prefixed by its weight: "50: gpu-model In (H100)".
	Preferred        []string `json:"preferred,omitempty"`
	PodAffinity      int      `json:"pod_affinity,omitempty"`      // pod (anti-)affinity terms, counted
	PodAntiAffinity  int      `json:"pod_anti_affinity,omitempty"` // (required + preferred)
	PriorityClass    string   `json:"priority_class,omitempty"`
	Priority         *int32   `json:"priority,omitempty"`
	PreemptionPolicy string   `json:"preemption_policy,omitempty"`
	// Tolerations lists tolerations as "key op value:effect", leaving out the not-ready and
	// unreachable ones the DefaultTolerationSeconds admission plugin adds to every pod.
	Tolerations []string `json:"tolerations,omitempty"`
}

// Scope is what a collector watches: pods in Namespaces (all when empty) matching Selector.
type Scope struct {
	Namespaces []string `json:"namespaces,omitempty"`
	Selector   string   `json:"selector"`
}

// Key is a canonical, never-empty string for the scope: pods and inventories with the same key
// were seen by collectors watching the same thing.
func (s Scope) Key() string {
	ns := slices.Clone(s.Namespaces)
	slices.Sort(ns)
	ns = slices.Compact(ns)
	all := "*"
	if len(ns) > 0 {
		all = strings.Join(ns, ",")
	}
	return "namespaces=" + all + ";selector=" + s.Selector
}

// Pod phases.
const (
	PhasePending   = "Pending"
	PhaseRunning   = "Running"
	PhaseSucceeded = "Succeeded"
	PhaseFailed    = "Failed"
	PhaseUnknown   = "Unknown"
)

// Condition returns the condition of the given type, or nil.
func (p *PodStatus) Condition(typ string) *Condition {
	for i := range p.Conditions {
		if p.Conditions[i].Type == typ {
			return &p.Conditions[i]
		}
	}
	return nil
}

// Taint is a node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// NodeStatus is a snapshot of a node (node_status).
type NodeStatus struct {
	Labels        map[string]string `json:"labels,omitempty"`
	Taints        []Taint           `json:"taints,omitempty"`
	Unschedulable bool              `json:"unschedulable,omitempty"`
	Ready         bool              `json:"ready"`
	Allocatable   map[string]string `json:"allocatable,omitempty"`
	Capacity      map[string]string `json:"capacity,omitempty"`
	Deleted       bool              `json:"deleted,omitempty"`
	// KubeletVersion is status.nodeInfo.kubeletVersion (a schedlens addition): results are
	// reported with the versions they were measured on.
	KubeletVersion string `json:"kubelet_version,omitempty"`
}

// GPUSample is one scrape of one GPU (or MIG instance) from dcgm-exporter (gpu_sample).
type GPUSample struct {
	GPU        string             `json:"gpu"`
	UUID       string             `json:"uuid"`
	Model      string             `json:"model,omitempty"`
	MIGProfile string             `json:"mig_profile,omitempty"`
	Metrics    map[string]float64 `json:"metrics"`
	// PeriodS is the scrape interval the sample stands for, in seconds (a schedlens addition:
	// GPU time is summed from it); 0 when unknown, then counted as one second.
	PeriodS float64 `json:"period_s,omitempty"`
	// SharedBy is how many pods the scrape named for this device (dcgm-exporter copies a
	// shared GPU's series once per consuming pod, device plugin and DRA alike): each is
	// attributed 1/SharedBy of the period, so GPU time summed over pods is the device's, never
	// counted twice. 0 or 1: not shared.
	SharedBy int `json:"shared_by,omitempty"`
	// DRA is the claim and device the exporter's DRA labels name (KUBERNETES_ENABLE_DRA); nil
	// without them.
	DRA *DRADevice `json:"dra,omitempty"`
}

// DRADevice is what dcgm-exporter's DRA labels say of a series: the claim that holds the
// device and the device in its driver's pool (dra_claim_namespace, dra_claim_name,
// dra_driver_name, dra_pool_name, dra_device_name, dra_mig_profile, dra_mig_device_uuid).
type DRADevice struct {
	ClaimNamespace string `json:"claim_namespace,omitempty"`
	ClaimName      string `json:"claim_name,omitempty"`
	Driver         string `json:"driver,omitempty"`
	Pool           string `json:"pool,omitempty"`
	Device         string `json:"device,omitempty"`
	MIGProfile     string `json:"mig_profile,omitempty"`
	MIGDeviceUUID  string `json:"mig_device_uuid,omitempty"`
}

// PodSeconds is the GPU time the sample attributes to its pod: its period (1 s when unknown)
// divided among the pods sharing the device.
func (s *GPUSample) PodSeconds() float64 {
	period := s.PeriodS
	if period <= 0 {
		period = 1
	}
	if s.SharedBy > 1 {
		period /= float64(s.SharedBy)
	}
	return period
}

// Request is the result of one request to an inference pod (request). The envelope's
// occurred_at is the send time and its pod the pod that served it.
type Request struct {
	Target    string  `json:"target"`
	Status    int     `json:"status"`
	OK        bool    `json:"ok"`
	LatencyMS float64 `json:"latency_ms"`
	Error     string  `json:"error,omitempty"`
	BytesOut  int64   `json:"bytes_out,omitempty"`
	BytesIn   int64   `json:"bytes_in,omitempty"`
	// Method is the HTTP method sent. PodIP names the serving pod by its IP when the result
	// does not know its UID (an external load generator's): the correlator attributes it to the
	// pod that held that IP at occurred_at. Both are schedlens additions beside the contract.
	Method string `json:"method,omitempty"`
	PodIP  string `json:"pod_ip,omitempty"`
	// PodReady says whether the pod was Ready (and not terminating) when the request was sent,
	// as the collector's watch knew it — what a Service would route to users. The prober sets
	// it; results without it (imports through a Service) count as served.
	PodReady *bool `json:"pod_ready,omitempty"`
}

// Served reports whether the request counts towards the served error rate: sent while the pod
// was Ready, or not known otherwise.
func (r *Request) Served() bool { return r.PodReady == nil || *r.PodReady }

// Inventory lists every pod in the collector's scope after a full list (inventory).
// Its occurred_at is when the list was started: a pod last seen before then and not listed
// was deleted unobserved.
//
// An inventory too large for one message (NATS' max_payload, 1 MiB by default, holds ~27,000
// UIDs) is published in Parts envelopes, Part 1 to Parts, each with a share of the UIDs and the
// same cluster, scope and occurred_at: together they are one inventory, applied once every part
// is stored (align.WholeInventories), never a part alone — a part does not list the pods of the
// others. Part and Parts are both zero for an inventory in one envelope.
type Inventory struct {
	Scope   Scope    `json:"scope"`
	PodUIDs []string `json:"pod_uids"`
	Part    int      `json:"part,omitempty"`
	Parts   int      `json:"parts,omitempty"`
}

// Heartbeat says a collector's watch of Scope was live from Since to the envelope's
// occurred_at: every pod of the scope it knew alive at or after Since and did not see end was
// still alive then (heartbeat). Since is the start of the list (the inventory) the watch began
// with, or the time it recovered from a watch error.
type Heartbeat struct {
	Scope Scope     `json:"scope"`
	Since time.Time `json:"since"`
}

// Workload kinds a workload_status describes, as Kubernetes writes them.
const (
	WorkloadDeployment  = "Deployment"
	WorkloadReplicaSet  = "ReplicaSet"
	WorkloadStatefulSet = "StatefulSet"
)

// WorkloadKinds are the workload kinds schedlens resolves pods to (WorkloadOf), as Kubernetes
// writes them.
func WorkloadKinds() []string {
	return []string{"Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet", "LeaderWorkerSet", "Pod"}
}

// WorkloadKindOf is a workload kind as Kubernetes writes it, from that spelling or lower case (as
// the API and the web UI read it); another kind (a custom controller's) is kept as given.
func WorkloadKindOf(s string) string {
	for _, k := range WorkloadKinds() {
		if strings.EqualFold(s, k) {
			return k
		}
	}
	return s
}

// WorkloadStatus is a snapshot of a workload controller, taken on every change
// (workload_status): what it wants (Replicas, its spec), which revision it rolls out, and how
// far its controller got. The envelope names no pod and no node.
type WorkloadStatus struct {
	Kind      string `json:"kind"` // Deployment, ReplicaSet or StatefulSet
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Replicas is spec.replicas: the pods the workload wants (nil: not set, which Kubernetes
	// defaults to 1).
	Replicas *int32 `json:"replicas,omitempty"`
	// Revision is the Deployment's or ReplicaSet's deployment.kubernetes.io/revision annotation
	// (the number `kubectl rollout history` shows), or a StatefulSet's status.updateRevision.
	Revision string `json:"revision,omitempty"`
	// TemplateHash is what the pods of this revision carry: a ReplicaSet's pod-template-hash
	// label, a StatefulSet's update revision (its pods' controller-revision-hash label).
	TemplateHash string `json:"template_hash,omitempty"`
	// CurrentRevision is a StatefulSet's status.currentRevision.
	CurrentRevision string `json:"current_revision,omitempty"`
	// Owner is a ReplicaSet's controlling Deployment.
	Owner             *Owner      `json:"owner,omitempty"`
	ReadyReplicas     int32       `json:"ready_replicas,omitempty"`
	AvailableReplicas int32       `json:"available_replicas,omitempty"`
	UpdatedReplicas   int32       `json:"updated_replicas,omitempty"`
	Generation        int64       `json:"generation,omitempty"`
	ObservedGen       int64       `json:"observed_generation,omitempty"`
	Paused            bool        `json:"paused,omitempty"`
	Conditions        []Condition `json:"conditions,omitempty"`
	CreationTimestamp *time.Time  `json:"creation_timestamp,omitempty"`
	Deleted           bool        `json:"deleted,omitempty"`
	ResourceVersion   string      `json:"resource_version,omitempty"`
}

// Desired is the pods the workload wants: spec.replicas, 1 when unset, 0 once deleted.
func (w *WorkloadStatus) Desired() int {
	switch {
	case w.Deleted:
		return 0
	case w.Replicas == nil:
		return 1
	}
	return int(*w.Replicas)
}

// LabelRegistry is a label registry ConfigMap as the collector read it (label_registry): its
// entries (kube.LabelRegistryOf), the entries it could not read, and whether it was deleted. The
// envelope names no pod and no node.
type LabelRegistry struct {
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	Labels    []LabelDoc `json:"labels"`
	Errors    []string   `json:"errors,omitempty"`
	Deleted   bool       `json:"deleted,omitempty"`
}

// LabelDoc is a label registry's entry for one node label key.
type LabelDoc struct {
	Key     string   `json:"key"`
	Source  string   `json:"source"`
	Owner   string   `json:"owner"`
	Meaning string   `json:"meaning,omitempty"`
	Values  []string `json:"values,omitempty"`
	// Use is "hard" (required rules), "preference" (preferred affinity) or "" (either).
	Use string `json:"use,omitempty"`
	// Registry is the namespace/name of the ConfigMap that documents it.
	Registry string `json:"registry"`
}
