// Package cluster describes the lab's simulated GPU cluster in YAML — node pools with a GPU
// model, GPUs per node, labels, taints and GPU sharing — and turns it into Node objects labelled
// and sized the way the NVIDIA device plugin and GPU feature discovery would advertise them.
package cluster

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/lab/specfile"
)

//go:embed default.yaml
var defaultYAML []byte

// Sharing modes of a pool's GPUs.
const (
	Exclusive   = "exclusive"
	TimeSlicing = "time-slicing"
	MPS         = "mps"
	MIG         = "mig"
)

// LabelPool names a node's pool (one of the pool labels the comparison and preflight read).
const LabelPool = events.LabelLabPool

// Spec is a GPU cluster.
type Spec struct {
	Pools []Pool `json:"pools"`
	// PriorityClasses are created with the nodes (experiments refer to them by name).
	PriorityClasses []PriorityClass `json:"priorityClasses,omitempty"`
}

// PriorityClass is a scheduling priority pods can name.
type PriorityClass struct {
	Name  string `json:"name"`
	Value int32  `json:"value"`
}

// Pool is a group of identical nodes.
type Pool struct {
	Name         string            `json:"name"`
	Nodes        int               `json:"nodes"`
	GPU          GPU               `json:"gpu"`
	Sharing      Sharing           `json:"sharing"`
	Labels       map[string]string `json:"labels,omitempty"`
	Taints       []corev1.Taint    `json:"taints,omitempty"`
	CPU          string            `json:"cpu,omitempty"`    // default 32
	Memory       string            `json:"memory,omitempty"` // default 256Gi
	CachedModels []string          `json:"cachedModels,omitempty"`
	// DRA publishes the pool's GPUs (or MIG instances) through Dynamic Resource Allocation,
	// as NVIDIA's DRA driver does (ResourceSlices, see dra.go), instead of the device plugin's
	// extended resource: its nodes advertise no nvidia.com/* resource and carry no GPU feature
	// discovery labels (the GPU Operator's DRA mode deploys none). Sharing is then per claim:
	// the pool's own sharing mode is exclusive or mig.
	DRA bool `json:"dra,omitempty"`
}

// GPU is the accelerator of every node in a pool.
type GPU struct {
	Product   string `json:"product"` // as GPU feature discovery writes it, e.g. NVIDIA-H100-80GB-HBM3
	Count     int    `json:"count"`   // physical GPUs per node
	MemoryMiB int    `json:"memoryMiB,omitempty"`
}

// Sharing says how a pool's GPUs are shared.
type Sharing struct {
	Mode     string `json:"mode,omitempty"`     // exclusive (default), time-slicing, mps or mig
	Replicas int    `json:"replicas,omitempty"` // time-slicing and mps: pods per GPU
	Profile  string `json:"profile,omitempty"`  // mig: the instance profile, e.g. 1g.10gb
	Slices   int    `json:"slices,omitempty"`   // mig: instances per GPU
	Strategy string `json:"strategy,omitempty"` // mig: single (default; slices are nvidia.com/gpu) or mixed (nvidia.com/mig-<profile>)
}

// Default is the cluster lab demo runs on (default.yaml).
func Default() *Spec { return specfile.Embedded("default.yaml", defaultYAML, Parse) }

// Load reads a cluster spec from a YAML file.
func Load(path string) (*Spec, error) { return specfile.Load("cluster spec", path, Parse) }

// Parse reads and validates a cluster spec.
func Parse(b []byte) (*Spec, error) {
	var s Spec
	if err := specfile.Strict(b, &s); err != nil {
		return nil, err
	}
	if len(s.Pools) == 0 {
		return nil, errors.New("no pools")
	}
	seen := map[string]bool{}
	for i := range s.Pools {
		p := &s.Pools[i]
		switch {
		case p.Name == "":
			return nil, fmt.Errorf("pools[%d]: name missing", i)
		case seen[p.Name]:
			return nil, fmt.Errorf("pools[%d]: name %q used twice", i, p.Name)
		case p.Nodes < 1:
			return nil, fmt.Errorf("pool %s: nodes must be ≥ 1", p.Name)
		case p.GPU.Count < 0:
			return nil, fmt.Errorf("pool %s: gpu.count must be ≥ 0", p.Name)
		case p.GPU.Count > 0 && p.GPU.Product == "":
			return nil, fmt.Errorf("pool %s: gpu.product missing", p.Name)
		}
		seen[p.Name] = true
		if p.Sharing.Mode == "" {
			p.Sharing.Mode = Exclusive
		}
		switch p.Sharing.Mode {
		case Exclusive:
		case TimeSlicing, MPS:
			if p.Sharing.Replicas < 2 {
				return nil, fmt.Errorf("pool %s: %s needs replicas ≥ 2", p.Name, p.Sharing.Mode)
			}
		case MIG:
			if p.Sharing.Profile == "" || p.Sharing.Slices < 1 {
				return nil, fmt.Errorf("pool %s: mig needs a profile and slices ≥ 1", p.Name)
			}
			if p.Sharing.Strategy == "" {
				p.Sharing.Strategy = "single"
			}
			if p.Sharing.Strategy != "single" && p.Sharing.Strategy != "mixed" {
				return nil, fmt.Errorf("pool %s: mig strategy %q: want single or mixed", p.Name, p.Sharing.Strategy)
			}
		default:
			return nil, fmt.Errorf("pool %s: sharing mode %q: want exclusive, time-slicing, mps or mig", p.Name, p.Sharing.Mode)
		}
		if p.DRA && p.Sharing.Mode != Exclusive && p.Sharing.Mode != MIG {
			return nil, fmt.Errorf("pool %s: a DRA pool shares GPUs per claim: its sharing mode is exclusive or mig, not %s", p.Name, p.Sharing.Mode)
		}
		if p.GPU.MemoryMiB == 0 {
			p.GPU.MemoryMiB = 81920
		}
		if p.CPU == "" {
			p.CPU = "32"
		}
		if p.Memory == "" {
			p.Memory = "256Gi"
		}
		for _, q := range []string{p.CPU, p.Memory} {
			if _, err := resource.ParseQuantity(q); err != nil {
				return nil, fmt.Errorf("pool %s: %q: %w", p.Name, q, err)
			}
		}
	}
	return &s, nil
}

// NodeName is the name of a pool's i-th node (1-based): gpu-<pool>-<i>.
func (p Pool) NodeName(i int) string { return fmt.Sprintf("gpu-%s-%d", p.Name, i) }

// Resource is the extended resource a pod requests for one unit of this pool's GPUs.
func (p Pool) Resource() corev1.ResourceName {
	if p.Sharing.Mode == MIG && p.Sharing.Strategy == "mixed" {
		return corev1.ResourceName("nvidia.com/mig-" + p.Sharing.Profile)
	}
	return "nvidia.com/gpu"
}

// Units is how many of Resource a node advertises: GPUs × replicas, or × MIG slices.
func (p Pool) Units() int {
	switch p.Sharing.Mode {
	case TimeSlicing, MPS:
		return p.GPU.Count * p.Sharing.Replicas
	case MIG:
		return p.GPU.Count * p.Sharing.Slices
	}
	return p.GPU.Count
}

// Node returns the i-th node (1-based) of the pool: labels, taints and capacity, Ready.
func (p Pool) Node(i int) *corev1.Node {
	name := p.NodeName(i)
	labels := map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		// As a kubelet registers them (else the node lifecycle controller adds them).
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
		LabelPool: p.Name,
	}
	if p.GPU.Count > 0 && !p.DRA {
		product, strategy := p.GPU.Product, "none"
		switch p.Sharing.Mode {
		case TimeSlicing, MPS:
			product, strategy = product+"-SHARED", p.Sharing.Mode
			labels["nvidia.com/gpu.replicas"] = strconv.Itoa(p.Sharing.Replicas)
		case MIG:
			labels["nvidia.com/mig.strategy"] = p.Sharing.Strategy
			if p.Sharing.Strategy == "single" {
				product += "-MIG-" + p.Sharing.Profile
			} else {
				prefix := "nvidia.com/mig-" + p.Sharing.Profile
				labels[prefix+".count"] = strconv.Itoa(p.Units())
				labels[prefix+".product"] = p.GPU.Product + "-MIG-" + p.Sharing.Profile
			}
		}
		labels["nvidia.com/gpu.present"] = "true"
		labels["nvidia.com/gpu.product"] = product
		labels["nvidia.com/gpu.count"] = strconv.Itoa(p.GPU.Count)
		labels["nvidia.com/gpu.memory"] = strconv.Itoa(p.GPU.MemoryMiB)
		labels["nvidia.com/gpu.sharing-strategy"] = strategy
		if _, ok := labels["nvidia.com/gpu.replicas"]; !ok {
			labels["nvidia.com/gpu.replicas"] = "1"
		}
	}
	for k, v := range p.Labels {
		labels[k] = v
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(p.CPU),
		corev1.ResourceMemory: resource.MustParse(p.Memory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	if p.GPU.Count > 0 && !p.DRA {
		res[p.Resource()] = *resource.NewQuantity(int64(p.Units()), resource.DecimalSI)
	}
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: append([]corev1.Taint(nil), p.Taints...)},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res.DeepCopy(),
			Conditions:  NodeConditions(now),
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.37.2-lab", OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
}

// NodeConditions are the conditions a healthy kubelet posts, heartbeat and transition at now:
// no memory, disk or PID pressure, Ready. The pressure conditions matter as much as Ready: the
// node lifecycle controller sets all four Unknown when heartbeats stop, and only the kubelet
// sets them back.
func NodeConditions(now metav1.Time) []corev1.NodeCondition {
	c := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []corev1.NodeCondition{
		c(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		c(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		c(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		c(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "simulated kubelet is posting ready status"),
	}
}

// Nodes returns every node of the spec, pool by pool.
func (s *Spec) Nodes() []*corev1.Node {
	var out []*corev1.Node
	for _, p := range s.Pools {
		for i := 1; i <= p.Nodes; i++ {
			out = append(out, p.Node(i))
		}
	}
	return out
}

// PoolOf returns the pool a node name belongs to.
func (s *Spec) PoolOf(node string) (Pool, bool) {
	for _, p := range s.Pools {
		if strings.HasPrefix(node, "gpu-"+p.Name+"-") {
			if _, err := strconv.Atoi(strings.TrimPrefix(node, "gpu-"+p.Name+"-")); err == nil {
				return p, true
			}
		}
	}
	return Pool{}, false
}

// Create registers every node with the API server, Ready (create, then the status
// subresource, as a kubelet does), the priority classes, and for DRA pools the simulated
// driver's DeviceClasses and ResourceSlices (dra.go). Objects that exist are kept.
func Create(ctx context.Context, client kubernetes.Interface, s *Spec) error {
	for _, pc := range s.PriorityClasses {
		_, err := client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: pc.Name}, Value: pc.Value,
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create priority class %s: %w", pc.Name, err)
		}
	}
	for _, n := range s.Nodes() {
		created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			created, err = client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		}
		if err != nil {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
		// The node lifecycle controller may write the new node meanwhile (its first view of a
		// node without conditions): write the status on the latest version.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			created.Status = n.Status
			_, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				if latest, getErr := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); getErr == nil {
					created = latest
				}
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("node %s status: %w", n.Name, err)
		}
	}
	return createDRA(ctx, client, s)
}
