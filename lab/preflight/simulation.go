package preflight

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod states in a simulation.
const (
	PodScheduled = "scheduled"
	PodPending   = "pending"
	PodPreempted = "preempted" // by a pod of the same group
)

// Simulation is what the dry run with the real scheduler saw.
type Simulation struct {
	// Scheduler is the kube-scheduler version that placed the pods.
	Scheduler string `json:"scheduler"`
	// StartupSeconds is the control plane's start; Seconds the whole dry run, start included.
	StartupSeconds float64    `json:"startup_seconds"`
	Seconds        float64    `json:"seconds"`
	Groups         []SimGroup `json:"groups"`
}

// SimGroup is one group of workloads placed together (an experiment arm), starting from the
// cluster's own pods.
type SimGroup struct {
	Name      string      `json:"name"`
	Seconds   float64     `json:"seconds"`
	Pods      []SimPod    `json:"pods"`
	Preempted []SimVictim `json:"preempted"`
}

// SimPod is where one replica landed, or why it did not.
type SimPod struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Workload  ObjectRef `json:"workload"`
	Status    string    `json:"status"` // scheduled, pending, preempted
	Node      string    `json:"node,omitempty"`
	Pool      string    `json:"pool,omitempty"`
	GPUModel  string    `json:"gpu_model,omitempty"`
	Sharing   string    `json:"sharing,omitempty"`
	// Message is the scheduler's last FailedScheduling note for the pod (also for pods that
	// were placed after a preemption).
	Message string `json:"message,omitempty"`
}

// SimVictim is a pod the scheduler preempted.
type SimVictim struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	// PreemptedBy names the preemptor, a pod of the group.
	PreemptedBy string `json:"preempted_by"`
	// Existing is true for a pod of the cluster (not of the manifests).
	Existing bool `json:"existing"`
}

// SimulationInput is what the dry run creates: the cluster's nodes, classes, budgets and GPU
// pods, then each group's workloads in order.
type SimulationInput struct {
	Nodes           []*corev1.Node
	PriorityClasses []schedulingv1.PriorityClass
	PDBs            []policyv1.PodDisruptionBudget
	Existing        []*corev1.Pod
	Groups          []SimInputGroup
	Pool            func(*corev1.Node) string
	// DRA: the cluster's and the manifests' DeviceClasses, the cluster's ResourceSlices and
	// allocated claims, and the manifests' ResourceClaims and ResourceClaimTemplates.
	DeviceClasses  []resourcev1.DeviceClass
	ResourceSlices []resourcev1.ResourceSlice
	Claims         []resourcev1.ResourceClaim
	ManifestClaims []*Claim
}

// SimInputGroup is the workloads of one group, created one after another (each settled before
// the next, as the lab's runner starts an arm's background load before its pods).
type SimInputGroup struct {
	Name      string
	Workloads []*Workload
}

// SimulationOf prepares the dry run: workloads grouped by Workload.Group in manifest order,
// the manifests' PriorityClasses and PDBs added to the cluster's.
func SimulationOf(in *Input, c *Cluster) *SimulationInput {
	s := &SimulationInput{Nodes: c.Nodes, PriorityClasses: append([]schedulingv1.PriorityClass(nil), c.PriorityClasses...),
		PDBs: append([]policyv1.PodDisruptionBudget(nil), c.PDBs...), Existing: c.Pods, Pool: c.PoolOf,
		DeviceClasses: append([]resourcev1.DeviceClass(nil), c.DeviceClasses...), ResourceSlices: c.ResourceSlices, Claims: c.Claims, ManifestClaims: in.Claims}
	for _, dc := range in.DeviceClasses {
		if c.deviceClass(dc.Name) == nil {
			s.DeviceClasses = append(s.DeviceClasses, dc.Class)
		}
	}
	for _, pc := range in.PriorityClasses {
		s.PriorityClasses = append(s.PriorityClasses, schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: pc.Name}, Value: pc.Value, GlobalDefault: pc.GlobalDefault})
	}
	for _, p := range in.PDBs {
		s.PDBs = append(s.PDBs, policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}, Spec: p.Spec})
	}
	idx := map[string]int{}
	for _, w := range in.Workloads {
		g := w.Group()
		i, ok := idx[g]
		if !ok {
			i = len(s.Groups)
			idx[g] = i
			name := g
			if name == "" {
				name = "all"
			}
			s.Groups = append(s.Groups, SimInputGroup{Name: name})
		}
		s.Groups[i].Workloads = append(s.Groups[i].Workloads, w)
	}
	return s
}

// Ref is the workload's ObjectRef.
func (w *Workload) Ref() ObjectRef {
	return ObjectRef{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, File: w.File, Line: w.Line}
}

// SimulationFindings turns the dry run into findings: pods left Pending (error) and pods of the
// cluster preempted (warning), one finding per workload.
func SimulationFindings(sim *Simulation, in *Input) (kept, suppressed []Finding) {
	byRef := map[ObjectRef]*Workload{}
	for _, w := range in.Workloads {
		byRef[w.Ref()] = w
	}
	var f findings
	for _, g := range sim.Groups {
		type tally struct {
			pending, total int
			message        string
		}
		counts := map[ObjectRef]*tally{}
		var order []ObjectRef
		podWorkload := map[string]ObjectRef{}
		for _, p := range g.Pods {
			t := counts[p.Workload]
			if t == nil {
				t = &tally{}
				counts[p.Workload] = t
				order = append(order, p.Workload)
			}
			t.total++
			podWorkload[p.Namespace+"/"+p.Name] = p.Workload
			if p.Status == PodPending {
				t.pending++
				if t.message == "" {
					t.message = p.Message
				}
			}
		}
		for _, ref := range order {
			t := counts[ref]
			if t.pending == 0 {
				continue
			}
			msg := t.message
			if msg == "" {
				msg = "no scheduling decision before the timeout"
			}
			w := byRef[ref]
			f.add(RuleSimulatePending, "", w.Object, w.TemplatePath,
				fmt.Sprintf("group %s: %d of %d pods stayed Pending: %s", g.Name, t.pending, t.total, msg), "", "")
		}
		victims := map[ObjectRef][]string{}
		for _, v := range g.Preempted {
			if !v.Existing {
				continue
			}
			ref, ok := podWorkload[v.PreemptedBy]
			if !ok {
				continue
			}
			victims[ref] = append(victims[ref], fmt.Sprintf("%s/%s on %s", v.Namespace, v.Name, v.Node))
		}
		for _, ref := range order {
			if vs := victims[ref]; len(vs) > 0 {
				w := byRef[ref]
				f.add(RuleSimulatePreempts, "", w.Object, w.SpecPath("priorityClassName"),
					fmt.Sprintf("group %s: its pods preempted %d running pods: %s", g.Name, len(vs), strings.Join(vs, ", ")), "", "")
			}
		}
	}
	return f.kept, f.suppressed
}
