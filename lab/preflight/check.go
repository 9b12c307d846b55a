package preflight

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

// Schema names the version of the JSON report.
const Schema = "schedlens.io/preflight/v1"

// Options tune a check.
type Options struct {
	// ModelLoad is the model-load time assumed where schedlens has measured none.
	ModelLoad time.Duration
	// ModelLoads are the model-load times schedlens measured, per experiment and arm (Arm ""
	// for the whole experiment).
	ModelLoads map[ModelLoadKey]ModelLoad
}

// Report is the result of a check, rendered as a table, JSON or SARIF.
type Report struct {
	Schema      string         `json:"schema"`
	Cluster     ClusterSummary `json:"cluster"`
	Objects     int            `json:"objects"`
	Ignored     map[string]int `json:"ignored_kinds"`
	Findings    []Finding      `json:"findings"`
	Suppressed  []Finding      `json:"suppressed"`
	InputErrors []InputError   `json:"input_errors"`
	Simulation  *Simulation    `json:"simulation"`
	Summary     Summary        `json:"summary"`
}

// ClusterSummary describes the cluster checked against.
type ClusterSummary struct {
	Source          string        `json:"source"`
	Nodes           int           `json:"nodes"`
	Pools           []PoolSummary `json:"pools"`
	PriorityClasses int           `json:"priority_classes"`
	PDBs            int           `json:"pdbs"`
	GPUPods         int           `json:"gpu_pods"`
	// DRA: the DeviceClasses, ResourceSlices and allocated claims read, or why none were.
	DeviceClasses  int    `json:"device_classes"`
	ResourceSlices int    `json:"resource_slices"`
	DRAClaims      int    `json:"dra_claims"`
	DRANote        string `json:"dra_note,omitempty"`
	// LabelRegistries counts the cluster's label registry ConfigMaps, LabelsDocumented their
	// entries; LabelsNote says why they were not read or which entries were wrong.
	LabelRegistries  int    `json:"label_registries"`
	LabelsDocumented int    `json:"labels_documented"`
	LabelsNote       string `json:"labels_note,omitempty"`
}

// PoolSummary is one node pool: its GPU model and the GPU resources its nodes offer.
type PoolSummary struct {
	Name        string           `json:"name"`
	Nodes       int              `json:"nodes"`
	GPUModel    string           `json:"gpu_model,omitempty"`
	Allocatable map[string]int64 `json:"allocatable,omitempty"` // GPU resource → sum over the pool's nodes
	// DRADevices counts, per DeviceClass, the devices of the pool's ResourceSlices its
	// selectors match; DRAAllocated the pool's devices allocated to claims now.
	DRADevices   map[string]int `json:"dra_devices,omitempty"`
	DRAAllocated int            `json:"dra_allocated,omitempty"`
	Tainted      bool           `json:"tainted"`
}

// Summary counts what the report holds.
type Summary struct {
	Errors      int `json:"errors"`
	Warnings    int `json:"warnings"`
	Infos       int `json:"infos"`
	Suppressed  int `json:"suppressed"`
	InputErrors int `json:"input_errors"`
}

// ExitCode is 2 when some input could not be read, else 1 when any finding is an error, else 0.
func (r *Report) ExitCode() int {
	switch {
	case r.Summary.InputErrors > 0:
		return 2
	case r.Summary.Errors > 0:
		return 1
	}
	return 0
}

// Check runs every rule on the manifests against the cluster.
func Check(in *Input, c *Cluster, opts Options) *Report {
	if opts.ModelLoad == 0 {
		opts.ModelLoad = DefaultModelLoad
	}
	ch := &checker{in: in, c: c, opts: opts, places: map[*Workload]*placement{}}
	for _, w := range in.Workloads {
		ch.gpuRequestLimit(w)
		ch.affinity(w)
		ch.applicability(w)
		ch.priority(w)
		ch.probes(w)
		ch.rollout(w)
		ch.workloadPDBs(w)
		ch.extendedResources(w)
		ch.labels(w)
	}
	ch.claims()
	for _, p := range in.PDBs {
		ch.pdb(p)
	}
	for _, e := range in.Experiments {
		ch.experiment(e)
	}
	r := &Report{Schema: Schema, Cluster: summarize(c), Objects: len(in.Objects), Ignored: in.Ignored,
		Findings: ch.f.kept, Suppressed: ch.f.suppressed, InputErrors: in.Errors}
	r.finish()
	return r
}

// AddFindings appends findings (the simulation's) and recounts.
func (r *Report) AddFindings(kept, suppressed []Finding) {
	r.Findings = append(r.Findings, kept...)
	r.Suppressed = append(r.Suppressed, suppressed...)
	r.finish()
}

func (r *Report) finish() {
	sortFindings(r.Findings)
	sortFindings(r.Suppressed)
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	if r.Suppressed == nil {
		r.Suppressed = []Finding{}
	}
	if r.InputErrors == nil {
		r.InputErrors = []InputError{}
	}
	if r.Ignored == nil {
		r.Ignored = map[string]int{}
	}
	r.Summary = Summary{Suppressed: len(r.Suppressed), InputErrors: len(r.InputErrors)}
	for _, f := range r.Findings {
		switch f.Severity {
		case Error:
			r.Summary.Errors++
		case Warning:
			r.Summary.Warnings++
		default:
			r.Summary.Infos++
		}
	}
}

func summarize(c *Cluster) ClusterSummary {
	s := ClusterSummary{Source: c.Source, Nodes: len(c.Nodes), PriorityClasses: len(c.PriorityClasses), PDBs: len(c.PDBs), GPUPods: len(c.Pods),
		DeviceClasses: len(c.DeviceClasses), ResourceSlices: len(c.ResourceSlices), DRAClaims: len(c.Claims), DRANote: c.DRANote,
		LabelRegistries: c.Registries, LabelsDocumented: len(c.Labels), LabelsNote: c.LabelsNote}
	dra := c.draPools()
	for _, p := range c.Pools() {
		ps := PoolSummary{Name: p.Name, Nodes: len(p.Nodes), Allocatable: map[string]int64{}}
		for _, n := range p.Nodes {
			for r, q := range n.Status.Allocatable {
				if kube.IsGPUResource(r) && q.Value() > 0 {
					ps.Allocatable[string(r)] += q.Value()
				}
			}
			if len(n.Spec.Taints) > 0 {
				ps.Tainted = true
			}
			if ps.GPUModel == "" {
				ps.GPUModel = nodeModel(n)
			}
		}
		if len(ps.Allocatable) == 0 {
			ps.Allocatable = nil
		}
		if d := dra[p.Name]; d != nil {
			ps.DRADevices, ps.DRAAllocated = d.devices, d.allocated
			ps.GPUModel = cmp.Or(ps.GPUModel, d.model)
		}
		s.Pools = append(s.Pools, ps)
	}
	return s
}

// nodeModel is the node's GPU model without the device plugin's -SHARED / -MIG- suffixes.
func nodeModel(n *corev1.Node) string {
	for r := range n.Status.Allocatable {
		if kube.IsGPUResource(r) {
			p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{r: n.Status.Allocatable[r]}}}}}}
			return gpuModel(p, n)
		}
	}
	return ""
}

type checker struct {
	in     *Input
	c      *Cluster
	opts   Options
	f      findings
	places map[*Workload]*placement
	// extended is extendedResourceClasses once worked out.
	extended map[corev1.ResourceName]extendedClass
}

// placement is where one replica of a workload could go, filter by filter, as the scheduler's
// NodeAffinity, NodeUnschedulable, NodeResourcesFit (GPUs only) and TaintToleration plugins see it.
type placement struct {
	pod      *corev1.Pod
	resource corev1.ResourceName // the GPU resource, "" without one
	count    int64               // per replica
	// affinity: nodes matching the nodeSelector and required node affinity; fit: those of them,
	// not cordoned, with enough allocatable GPUs; candidates: those of them whose taints the
	// pod tolerates.
	affinity, fit, candidates []*corev1.Node
}

func (ch *checker) place(w *Workload) *placement {
	if p, ok := ch.places[w]; ok {
		return p
	}
	p := &placement{pod: w.Pod()}
	if g := kube.GPUOf(p.pod, nil); g != nil {
		p.resource, p.count = corev1.ResourceName(g.Resource), g.Count
	}
	req := nodeaffinity.GetRequiredNodeAffinity(p.pod)
	for _, n := range ch.c.Nodes {
		if ok, _ := req.Match(n); !ok {
			continue
		}
		p.affinity = append(p.affinity, n)
		if n.Spec.Unschedulable && !tolerates(p.pod, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
			continue
		}
		if p.resource != "" && allocatable(n, p.resource) < p.count {
			continue
		}
		p.fit = append(p.fit, n)
		if _, untolerated := untoleratedTaint(p.pod, n); !untolerated {
			p.candidates = append(p.candidates, n)
		}
	}
	ch.places[w] = p
	return p
}

func untoleratedTaint(p *corev1.Pod, n *corev1.Node) (corev1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
}

func tolerates(p *corev1.Pod, t corev1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, &t, false)
}

// slots counts how many replicas fit on nodes given what is free there (allocatable minus the
// cluster's pods, except those of the workload itself).
func (ch *checker) slots(w *Workload, p *placement, nodes []*corev1.Node) (slots, free int64) {
	if p.resource == "" || p.count <= 0 {
		return 1 << 30, 1 << 30
	}
	for _, n := range nodes {
		f := allocatable(n, p.resource) - ch.usedBy(n.Name, p.resource, w)
		if f > 0 {
			free += f
			slots += f / p.count
		}
	}
	return slots, free
}

// usedBy sums the GPU requests of the cluster's pods on a node, except the workload's own
// (a live cluster may already run an older revision of it).
func (ch *checker) usedBy(node string, r corev1.ResourceName, w *Workload) int64 {
	var sum int64
	for _, p := range ch.c.Pods {
		if p.Spec.NodeName != node || (w != nil && ownPod(w, p)) {
			continue
		}
		if g := kube.GPUOf(p, nil); g != nil && corev1.ResourceName(g.Resource) == r {
			sum += g.Count
		}
	}
	return sum
}

// ownPod reports whether a running pod belongs to the workload: same namespace, and it carries
// every label of the template.
func ownPod(w *Workload, p *corev1.Pod) bool {
	if p.Namespace != w.Namespace || len(w.Template.Labels) == 0 {
		return false
	}
	return labels.SelectorFromSet(w.Template.Labels).Matches(labels.Set(p.Labels))
}

// gpuContainer is the index of the first container asking for a GPU, or -1.
func gpuContainer(spec *corev1.PodSpec) int {
	for i, c := range spec.Containers {
		for _, list := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			for r, q := range list {
				if kube.IsGPUResource(r) && q.Value() > 0 {
					return i
				}
			}
		}
	}
	return -1
}

// nodeNames lists up to max node names, then "… and N more".
func nodeNames(nodes []*corev1.Node, max int) string {
	var names []string
	for i, n := range nodes {
		if i == max {
			names = append(names, fmt.Sprintf("and %d more", len(nodes)-max))
			break
		}
		names = append(names, n.Name)
	}
	return strings.Join(names, ", ")
}

// labelValues describes the values nodes carry for a key: "H100 (2 nodes), A100 (4 nodes)", or
// "no node carries it".
func (ch *checker) labelValues(key string) string {
	counts := map[string]int{}
	for _, n := range ch.c.Nodes {
		if v, ok := n.Labels[key]; ok {
			counts[v]++
		}
	}
	if len(counts) == 0 {
		return "no node carries " + key
	}
	vals := slices.SortedFunc(maps.Keys(counts), func(a, b string) int { return cmp.Or(counts[b]-counts[a], strings.Compare(a, b)) })
	var parts []string
	for _, v := range vals {
		parts = append(parts, fmt.Sprintf("%s=%s (%s)", key, v, plural(counts[v], "node")))
	}
	return "nodes carry " + strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// experimentBaseline is the baseline arm of an experiment: its ConfigMap's, else "control".
func (ch *checker) experimentBaseline(name string) string {
	for _, e := range ch.in.Experiments {
		exp := kube.ExperimentOf(e.ConfigMap, events.DefaultLabelKeys)
		if exp.Name == name && exp.Baseline != "" {
			return exp.Baseline
		}
	}
	return "control"
}
