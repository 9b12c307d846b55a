// Package labels answers GET /v1/labels: every node label key the placement rules of the pods
// observed in a window use (nodeSelector, required and preferred node affinity), with the nodes
// carrying each value, the workloads and experiment arms that depend on it, what the label
// registries say of it (source, owner, hard or preference), and the nodes whose value changed in
// the window (drift). It is pure: the store reads the pods, nodes and registries (store.DB.Labels).
package labels

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/schedlens/schedlens/internal/events"
)

// Pod is an observed pod: its workload, experiment arm and placement rules.
type Pod struct {
	Namespace, WorkloadKind, WorkloadName string
	Experiment, Arm                       string
	Placement                             *events.Placement
}

// Node is a node's latest labels, and every value each label took in the window, in order.
type Node struct {
	Name    string
	Labels  map[string]string
	History map[string][]string
}

// Answer is GET /v1/labels.
type Answer struct {
	Labels []Label `json:"labels"`
	// Registries counts the label registry ConfigMaps in force; RegistryErrors are the entries
	// they hold that could not be read.
	Registries     int      `json:"registries"`
	RegistryErrors []string `json:"registry_errors"`
}

// Label is one node label key placement uses.
type Label struct {
	Key string `json:"key"`
	// Uses are how the rules use it: nodeSelector, required, preferred.
	Uses         []string    `json:"uses"`
	Values       []Value     `json:"values"`
	NodesWithout []string    `json:"nodes_without"`
	Dependents   []Dependent `json:"dependents"`
	// Documented is the registry's entry, nil when no registry documents it.
	Documented *events.LabelDoc `json:"documented"`
	// Drift lists the nodes whose value of the label changed in the window.
	Drift []Drift `json:"drift"`
}

// Value is a value of the label and the nodes carrying it now.
type Value struct {
	Value string   `json:"value"`
	Nodes []string `json:"nodes"`
}

// Dependent is a workload (and experiment arm) whose pods' rules use the label, and how.
type Dependent struct {
	Namespace  string   `json:"namespace"`
	Workload   string   `json:"workload,omitempty"` // Kind/name; "" for an experiment arm's bare pods
	Experiment string   `json:"experiment,omitempty"`
	Arm        string   `json:"arm,omitempty"`
	Uses       []string `json:"uses"`
}

// Drift is a node whose value of a label changed: every value it took, in order.
type Drift struct {
	Node   string   `json:"node"`
	Values []string `json:"values"`
}

// Uses of a label by a placement rule.
const (
	UseNodeSelector = "nodeSelector"
	UseRequired     = "required"
	UsePreferred    = "preferred"
)

// KeysOf are the label keys a pod's placement uses, with how. Required and preferred terms are
// read as the collector writes them ("accelerator In (nvidia-gpu) && gpu-model Exists",
// "50: gpu-model In (H100)"): a key is the first word of each expression (matchFields on
// metadata.name are not labels).
func KeysOf(p *events.Placement) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	add := func(key, use string) {
		if key == "" || strings.HasPrefix(key, "(") || key == "metadata.name" { // an empty term, a field
			return
		}
		if out[key] == nil {
			out[key] = map[string]bool{}
		}
		out[key][use] = true
	}
	if p == nil {
		return out
	}
	for k := range p.NodeSelector {
		add(k, UseNodeSelector)
	}
	exprs := func(term string) []string { return strings.Split(term, " && ") }
	for _, t := range p.Required {
		for _, e := range exprs(t) {
			add(firstWord(e), UseRequired)
		}
	}
	for _, t := range p.Preferred {
		if _, rest, ok := strings.Cut(t, ": "); ok {
			t = rest
		}
		for _, e := range exprs(t) {
			add(firstWord(e), UsePreferred)
		}
	}
	return out
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// Build answers GET /v1/labels from the window's pods, the nodes and the registries.
func Build(pods []Pod, nodes []Node, registries []events.LabelRegistry) Answer {
	a := Answer{Labels: []Label{}, Registries: len(registries), RegistryErrors: []string{}}
	docs := map[string]events.LabelDoc{}
	for _, r := range registries {
		for _, d := range r.Labels {
			if _, ok := docs[d.Key]; !ok { // registries come by namespace and name: the first documents a key
				docs[d.Key] = d
			}
		}
		a.RegistryErrors = append(a.RegistryErrors, r.Errors...)
	}
	type dep struct{ ns, workload, exp, arm string }
	uses := map[string]map[string]bool{}
	deps := map[string]map[dep]map[string]bool{}
	for _, p := range pods {
		for key, how := range KeysOf(p.Placement) {
			if uses[key] == nil {
				uses[key], deps[key] = map[string]bool{}, map[dep]map[string]bool{}
			}
			d := dep{p.Namespace, cmp.Or(p.WorkloadKind, "Pod") + "/" + p.WorkloadName, p.Experiment, p.Arm}
			if d.workload == "Pod/"+p.WorkloadName && p.Experiment != "" {
				d.workload = "" // an experiment's bare pods: the arm is what depends on the label
			}
			if deps[key][d] == nil {
				deps[key][d] = map[string]bool{}
			}
			for h := range how {
				uses[key][h] = true
				deps[key][d][h] = true
			}
		}
	}
	slices.SortFunc(nodes, func(x, y Node) int { return strings.Compare(x.Name, y.Name) })
	for _, key := range slices.Sorted(maps.Keys(uses)) {
		l := Label{Key: key, Uses: slices.Sorted(maps.Keys(uses[key])), Values: []Value{}, NodesWithout: []string{}, Dependents: []Dependent{}, Drift: []Drift{}}
		byValue := map[string][]string{}
		for _, n := range nodes {
			if v, ok := n.Labels[key]; ok {
				byValue[v] = append(byValue[v], n.Name)
			} else {
				l.NodesWithout = append(l.NodesWithout, n.Name)
			}
			if h := n.History[key]; len(h) > 1 {
				l.Drift = append(l.Drift, Drift{Node: n.Name, Values: h})
			}
		}
		for _, v := range slices.Sorted(maps.Keys(byValue)) {
			l.Values = append(l.Values, Value{Value: v, Nodes: byValue[v]})
		}
		ds := slices.Collect(maps.Keys(deps[key]))
		slices.SortFunc(ds, func(x, y dep) int {
			return cmp.Or(strings.Compare(x.ns, y.ns), strings.Compare(x.workload, y.workload), strings.Compare(x.exp, y.exp), strings.Compare(x.arm, y.arm))
		})
		for _, d := range ds {
			l.Dependents = append(l.Dependents, Dependent{Namespace: d.ns, Workload: d.workload, Experiment: d.exp, Arm: d.arm, Uses: slices.Sorted(maps.Keys(deps[key][d]))})
		}
		if doc, ok := docs[key]; ok {
			l.Documented = &doc
		}
		a.Labels = append(a.Labels, l)
	}
	return a
}
