package preflight

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/lab/cluster"
)

// Cluster is what the manifests are checked against: nodes (labels, taints, allocatable
// GPUs), PriorityClasses, PDBs and the pods that hold GPUs now.
type Cluster struct {
	// Source says where it came from: "lab cluster spec <file>" or "kubeconfig context <name>".
	Source          string
	Nodes           []*corev1.Node
	PriorityClasses []schedulingv1.PriorityClass
	PDBs            []policyv1.PodDisruptionBudget
	// Pods are the running pods that request GPUs (bound, not finished).
	Pods []*corev1.Pod
	// PoolLabel groups nodes into pools; "" picks the first of PoolLabels a node carries.
	PoolLabel string

	// DRA (resource.k8s.io/v1): the DeviceClasses, the ResourceSlices drivers publish, and
	// the claims allocated now (devices in use). DRAListed is false when the API group was not
	// read (not served, or forbidden): DRA rules then check only what the manifests define.
	DeviceClasses  []resourcev1.DeviceClass
	ResourceSlices []resourcev1.ResourceSlice
	Claims         []resourcev1.ResourceClaim
	DRAListed      bool
	// DRANote says why DRA was not read, "" when it was.
	DRANote string

	// Labels are the entries of the cluster's label registries (ConfigMaps labelled
	// schedlens.io/label-registry), Registries how many there are; LabelsNote says why they
	// were not read, or which entries were wrong.
	Labels     []kube.LabelDoc
	Registries int
	LabelsNote string
}

// PoolLabels are node labels that group nodes into pools, tried in order: the node-pool labels
// the comparison reads (events.NodePoolLabels), then the machine's shape (instance type, GPU
// model) for clusters that label no pool.
var PoolLabels = append(slices.Clone(events.NodePoolLabels), "node.kubernetes.io/instance-type", "nvidia.com/gpu.product")

// FromSpec is the cluster of a lab cluster spec: its nodes as the device plugin and GPU feature
// discovery advertise them, and its PriorityClasses.
func FromSpec(s *cluster.Spec, source string) *Cluster {
	c := &Cluster{Source: source, Nodes: s.Nodes(), DRAListed: true}
	if s.HasDRA() {
		for _, dc := range cluster.DeviceClasses() {
			c.DeviceClasses = append(c.DeviceClasses, *dc)
		}
		for _, p := range s.Pools {
			for i := 1; i <= p.Nodes; i++ {
				if sl := p.ResourceSlice(i); sl != nil {
					c.ResourceSlices = append(c.ResourceSlices, *sl)
				}
			}
		}
	}
	for _, pc := range s.PriorityClasses {
		c.PriorityClasses = append(c.PriorityClasses, schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: pc.Name}, Value: pc.Value})
	}
	return c
}

// Snapshot reads a live cluster, read-only: nodes, PriorityClasses, PDBs, the pods that
// request GPUs or hold claims, and DRA's DeviceClasses, ResourceSlices and allocated claims
// (when resource.k8s.io/v1 is served and readable).
func Snapshot(ctx context.Context, client kubernetes.Interface, source string) (*Cluster, error) {
	c := &Cluster{Source: source}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	for i := range nodes.Items {
		c.Nodes = append(c.Nodes, &nodes.Items[i])
	}
	pcs, err := client.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list priority classes: %w", err)
	}
	c.PriorityClasses = pcs.Items
	pdbs, err := client.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pod disruption budgets: %w", err)
	}
	c.PDBs = pdbs.Items
	opts := metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed", Limit: 500}
	for {
		pods, err := client.CoreV1().Pods("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list pods: %w", err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && (kube.GPUOf(p, nil) != nil || len(p.Spec.ResourceClaims) > 0) {
				c.Pods = append(c.Pods, p)
			}
		}
		if pods.Continue == "" {
			break
		}
		opts.Continue = pods.Continue
	}
	slices.SortFunc(c.Nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	if err := c.snapshotDRA(ctx, client); err != nil {
		return nil, err
	}
	if err := c.snapshotLabels(ctx, client); err != nil {
		return nil, err
	}
	return c, nil
}

// snapshotLabels reads the label registries of every namespace. A user who may not list
// ConfigMaps is checked without (LabelsNote says so).
func (c *Cluster) snapshotLabels(ctx context.Context, client kubernetes.Interface) error {
	cms, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRegistry})
	if apierrors.IsForbidden(err) {
		c.LabelsNote = "label registries not read: " + err.Error()
		return nil
	}
	if err != nil {
		return fmt.Errorf("list label registries: %w", err)
	}
	var problems []string
	for i := range cms.Items {
		docs, errs := kube.LabelRegistryOf(&cms.Items[i])
		c.Labels = append(c.Labels, docs...)
		for _, e := range errs {
			problems = append(problems, e.Error())
		}
	}
	c.Registries = len(cms.Items)
	if len(problems) > 0 {
		c.LabelsNote = strings.Join(problems, "; ")
	}
	return nil
}

// snapshotDRA lists DeviceClasses, ResourceSlices and the allocated ResourceClaims. A cluster
// that does not serve resource.k8s.io/v1, or a user who may not read it, is checked without
// (DRANote says so); other errors fail the snapshot.
func (c *Cluster) snapshotDRA(ctx context.Context, client kubernetes.Interface) error {
	res := client.ResourceV1()
	classes, err := res.DeviceClasses().List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		c.DRANote = "resource.k8s.io/v1 not read: " + err.Error()
		return nil
	}
	if err != nil {
		return fmt.Errorf("list device classes: %w", err)
	}
	c.DeviceClasses = classes.Items
	opts := metav1.ListOptions{Limit: 500}
	for {
		sl, err := res.ResourceSlices().List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list resource slices: %w", err)
		}
		c.ResourceSlices = append(c.ResourceSlices, sl.Items...)
		if sl.Continue == "" {
			break
		}
		opts.Continue = sl.Continue
	}
	opts = metav1.ListOptions{Limit: 500}
	for {
		cl, err := res.ResourceClaims("").List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list resource claims: %w", err)
		}
		for _, rc := range cl.Items {
			if rc.Status.Allocation != nil && rc.DeletionTimestamp == nil {
				c.Claims = append(c.Claims, rc)
			}
		}
		if cl.Continue == "" {
			break
		}
		opts.Continue = cl.Continue
	}
	c.DRAListed = true
	return nil
}

// Pool is a group of nodes that share a pool label value.
type Pool struct {
	Name  string
	Nodes []*corev1.Node
}

// PoolOf names a node's pool.
func (c *Cluster) PoolOf(n *corev1.Node) string {
	if c.PoolLabel != "" {
		if v := n.Labels[c.PoolLabel]; v != "" {
			return v
		}
		return n.Name
	}
	for _, k := range PoolLabels {
		if v := n.Labels[k]; v != "" {
			return v
		}
	}
	return n.Name
}

// Pools groups the nodes by pool, in node order.
func (c *Cluster) Pools() []Pool {
	var out []Pool
	idx := map[string]int{}
	for _, n := range c.Nodes {
		name := c.PoolOf(n)
		i, ok := idx[name]
		if !ok {
			i = len(out)
			idx[name] = i
			out = append(out, Pool{Name: name})
		}
		out[i].Nodes = append(out[i].Nodes, n)
	}
	return out
}

// priorityOf resolves a PriorityClass name among the cluster's and the manifests' classes.
func (c *Cluster) priorityClass(in *Input, name string) (int32, bool) {
	for _, pc := range in.PriorityClasses {
		if pc.Name == name {
			return pc.Value, true
		}
	}
	for _, pc := range c.PriorityClasses {
		if pc.Name == name {
			return pc.Value, true
		}
	}
	switch name { // the API server creates these in every cluster
	case "system-cluster-critical":
		return 2000000000, true
	case "system-node-critical":
		return 2000001000, true
	}
	return 0, false
}

// defaultPriority is the globalDefault class's value, else 0.
func (c *Cluster) defaultPriority(in *Input) int32 {
	for _, pc := range in.PriorityClasses {
		if pc.GlobalDefault {
			return pc.Value
		}
	}
	for _, pc := range c.PriorityClasses {
		if pc.GlobalDefault {
			return pc.Value
		}
	}
	return 0
}

// allocatable is how many of a resource a node offers.
func allocatable(n *corev1.Node, r corev1.ResourceName) int64 {
	if q, ok := n.Status.Allocatable[r]; ok {
		return q.Value()
	}
	return 0
}

// advertised lists the GPU resources some node offers, with how many nodes offer each.
func (c *Cluster) advertised() map[corev1.ResourceName]int {
	out := map[corev1.ResourceName]int{}
	for _, n := range c.Nodes {
		for r, q := range n.Status.Allocatable {
			if kube.IsGPUResource(r) && q.Value() > 0 {
				out[r]++
			}
		}
	}
	return out
}

// gpuModel is the GPU model a node offers a pod's resource as (GPU feature discovery labels).
func gpuModel(p *corev1.Pod, n *corev1.Node) string {
	q := p.DeepCopy()
	q.Spec.NodeName = n.Name
	if g := kube.GPUOf(q, n); g != nil && g.Model != "" {
		return g.Model
	}
	return n.Labels["nvidia.com/gpu.product"]
}
