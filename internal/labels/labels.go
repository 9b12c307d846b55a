// Package labels answers GET /v1/labels: every node label key the placement rules of the pods
// observed in a window use (nodeSelector, required and preferred node affinity), with the nodes
// carrying each value, the workloads and experiment arms that depend on it, what the label
// registries say of it (source, owner, hard or preference), and the nodes whose value changed in
// the window (drift); and beside them every device attribute their DRA claims' CEL selectors
// read, with the values the devices allocated to them carry. It is pure: the store reads the
// pods, nodes and registries (store.DB.Labels).
package labels

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/schedlens/schedlens/internal/events"
)

// Pod is an observed pod: its workload, experiment arm, placement rules and DRA claims.
type Pod struct {
	Namespace, WorkloadKind, WorkloadName string
	Experiment, Arm                       string
	Placement                             *events.Placement
	Claims                                []events.PodClaim
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

// Label is one node label key placement uses, or one device attribute a DRA selector reads.
type Label struct {
	Key string `json:"key"`
	// Kind is KindNodeLabel or KindDeviceAttribute (Key is then domain/name).
	Kind string `json:"kind"`
	// Uses are how the rules use it: nodeSelector, required, preferred; deviceSelector.
	Uses []string `json:"uses"`
	// Values are a node label's values on the nodes now; a device attribute's values on the
	// devices allocated to the window's pods, with those devices' nodes (the attributes of
	// devices no pod was given are in the ResourceSlices, which lab preflight reads).
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
	// UseDeviceSelector: a CEL selector of a DRA claim's request reads the device attribute.
	UseDeviceSelector = "deviceSelector"
)

// Kinds of Label.
const (
	KindNodeLabel       = "node_label"
	KindDeviceAttribute = "device_attribute"
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

// AttributesOf are the device attributes a pod's claims' selectors read, with how (always
// UseDeviceSelector), in KeysOf's shape.
func AttributesOf(claims []events.PodClaim) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, c := range claims {
		for _, sel := range c.Selectors {
			for _, ref := range events.DeviceAttributeRefs(sel) {
				out[ref] = map[string]bool{UseDeviceSelector: true}
			}
		}
	}
	return out
}

// Build answers GET /v1/labels from the window's pods, the nodes and the registries: node labels
// first, then device attributes, each by key.
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
	type key struct{ kind, key string }
	type dep struct{ ns, workload, exp, arm string }
	uses := map[key]map[string]bool{}
	deps := map[key]map[dep]map[string]bool{}
	devices := map[string]map[string]map[string]bool{} // attribute → value → nodes of devices allocated
	for _, p := range pods {
		d := dep{p.Namespace, cmp.Or(p.WorkloadKind, "Pod") + "/" + p.WorkloadName, p.Experiment, p.Arm}
		if d.workload == "Pod/"+p.WorkloadName && p.Experiment != "" {
			d.workload = "" // an experiment's bare pods: the arm is what depends on the label
		}
		add := func(k key, how map[string]bool) {
			if uses[k] == nil {
				uses[k], deps[k] = map[string]bool{}, map[dep]map[string]bool{}
			}
			if deps[k][d] == nil {
				deps[k][d] = map[string]bool{}
			}
			for h := range how {
				uses[k][h] = true
				deps[k][d][h] = true
			}
		}
		for k, how := range KeysOf(p.Placement) {
			add(key{KindNodeLabel, k}, how)
		}
		for k, how := range AttributesOf(p.Claims) {
			add(key{KindDeviceAttribute, k}, how)
		}
		for _, c := range p.Claims {
			for _, dev := range c.Devices {
				for attr, v := range dev.Attributes {
					if devices[attr] == nil {
						devices[attr] = map[string]map[string]bool{}
					}
					if devices[attr][v] == nil {
						devices[attr][v] = map[string]bool{}
					}
					if dev.Node != "" {
						devices[attr][v][dev.Node] = true
					}
				}
			}
		}
	}
	slices.SortFunc(nodes, func(x, y Node) int { return strings.Compare(x.Name, y.Name) })
	keys := slices.SortedFunc(maps.Keys(uses), func(x, y key) int {
		return cmp.Or(strings.Compare(y.kind, x.kind), strings.Compare(x.key, y.key)) // node_label before device_attribute
	})
	for _, k := range keys {
		l := Label{Key: k.key, Kind: k.kind, Uses: slices.Sorted(maps.Keys(uses[k])), Values: []Value{}, NodesWithout: []string{}, Dependents: []Dependent{}, Drift: []Drift{}}
		if k.kind == KindNodeLabel {
			byValue := map[string][]string{}
			for _, n := range nodes {
				if v, ok := n.Labels[k.key]; ok {
					byValue[v] = append(byValue[v], n.Name)
				} else {
					l.NodesWithout = append(l.NodesWithout, n.Name)
				}
				if h := n.History[k.key]; len(h) > 1 {
					l.Drift = append(l.Drift, Drift{Node: n.Name, Values: h})
				}
			}
			for _, v := range slices.Sorted(maps.Keys(byValue)) {
				l.Values = append(l.Values, Value{Value: v, Nodes: byValue[v]})
			}
		} else {
			for _, v := range slices.Sorted(maps.Keys(devices[k.key])) {
				l.Values = append(l.Values, Value{Value: v, Nodes: slices.Sorted(maps.Keys(devices[k.key][v]))})
			}
		}
		ds := slices.Collect(maps.Keys(deps[k]))
		slices.SortFunc(ds, func(x, y dep) int {
			return cmp.Or(strings.Compare(x.ns, y.ns), strings.Compare(x.workload, y.workload), strings.Compare(x.exp, y.exp), strings.Compare(x.arm, y.arm))
		})
		for _, d := range ds {
			l.Dependents = append(l.Dependents, Dependent{Namespace: d.ns, Workload: d.workload, Experiment: d.exp, Arm: d.arm, Uses: slices.Sorted(maps.Keys(deps[k][d]))})
		}
		if doc, ok := docs[k.key]; ok {
			l.Documented = &doc
		}
		a.Labels = append(a.Labels, l)
	}
	return a
}
