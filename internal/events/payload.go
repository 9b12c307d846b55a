package events

import "time"

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
}

// Scheduler event reasons that drive milestones.
const (
	ReasonScheduled        = "Scheduled"
	ReasonFailedScheduling = "FailedScheduling"
	ReasonPreempted        = "Preempted"
	ReasonEvicted          = "Evicted"
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
}

// GPUSample is one scrape of one GPU (or MIG instance) from dcgm-exporter (gpu_sample).
type GPUSample struct {
	GPU        string             `json:"gpu"`
	UUID       string             `json:"uuid"`
	Model      string             `json:"model,omitempty"`
	MIGProfile string             `json:"mig_profile,omitempty"`
	Metrics    map[string]float64 `json:"metrics"`
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
}

// Inventory lists every pod in the collector's scope after a full list (inventory).
type Inventory struct {
	Scope   map[string]any `json:"scope,omitempty"`
	PodUIDs []string       `json:"pod_uids"`
}

// Experiment is an experiment definition, as in the experiment ConfigMap (experiment).
type Experiment struct {
	Name       string         `json:"name"`
	Change     string         `json:"change,omitempty"`
	Fixed      any            `json:"fixed,omitempty"`
	Metrics    any            `json:"metrics,omitempty"`
	Repeats    int            `json:"repeats,omitempty"`
	Baseline   string         `json:"baseline,omitempty"`
	Arms       any            `json:"arms,omitempty"`
	Thresholds map[string]any `json:"thresholds,omitempty"`
}
