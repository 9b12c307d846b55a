// Package record is an experiment's record: one self-contained, versioned, deterministic JSON
// document holding what the experiment was (its definition, key by key, with when each key
// last changed), what its arms asked of the scheduler (their pods' placement-relevant spec as
// observed), where their runs ran (nodes with labels, taints, GPU model, sharing and kubelet
// version; the cluster's node pools and GPU inventory at the time), the schedlens settings that
// change results, the comparison with every metric, and a digest of the events behind it. The
// record's own digest (SHA-256 of the document with digest empty) is what the next experiment
// chains to (previous).
//
// Build is pure: the store reads the data (store.DB.RecordData), Build arranges it, and the
// same data gives a byte-identical document (Marshal).
package record

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/buildinfo"
	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
)

// SchemaVersion names the record's schema; a change that moves or removes a field changes it.
const SchemaVersion = "schedlens.io/record/v1"

// PreviousKey is the definition key naming the experiment a record chains to.
const PreviousKey = "previous"

// Record is GET /v1/experiments/{name}/record.
type Record struct {
	SchemaVersion string `json:"schema_version"`
	Experiment    string `json:"experiment"`
	Namespace     string `json:"namespace,omitempty"`
	// Digest is "sha256:<hex>" of the document with Digest "".
	Digest string `json:"digest"`
	// Previous is the record this one chains to, nil when the definition names none.
	Previous   *Link              `json:"previous"`
	Definition Definition         `json:"definition"`
	Arms       []Arm              `json:"arms"`
	Cluster    Cluster            `json:"cluster"`
	Schedlens  Schedlens          `json:"schedlens"`
	Comparison compare.Comparison `json:"comparison"`
	Events     Events             `json:"events"`
}

// Link names another experiment's record by its digest ("" when it has none: unknown there).
type Link struct {
	Experiment string `json:"experiment"`
	Digest     string `json:"digest"`
}

// Definition is the experiment's definition, every key of every version received.
type Definition struct {
	// Versions is how many definitions were received; DefinedAt when the one in force was.
	Versions  int        `json:"versions"`
	DefinedAt *time.Time `json:"defined_at"`
	// Keys holds each key as it is in force (null: removed by a later version), when it was
	// first set and when it last changed.
	Keys map[string]Key `json:"keys"`
}

// Key is one definition key's history.
type Key struct {
	Value      json.RawMessage `json:"value"`
	FirstSetAt time.Time       `json:"first_set_at"`
	ChangedAt  time.Time       `json:"changed_at"`
}

// Arm is what an arm's pods asked of the scheduler and where its runs ran.
type Arm struct {
	Name string `json:"name"`
	Pods int    `json:"pods"`
	// Specs are the distinct placement-relevant pod specs observed (one, unless the arm's pods
	// differed), most pods first.
	Specs []Spec `json:"specs"`
	Runs  []Run  `json:"runs"`
}

// Spec is a pod's placement-relevant spec as the collector observed it.
type Spec struct {
	Pods            int               `json:"pods"`
	Placement       *events.Placement `json:"placement"`
	Resources       *events.Resources `json:"resources"`
	Claims          []Claim           `json:"claims"`
	SchedulingGates []string          `json:"scheduling_gates"`
}

// Claim is a pod's DRA claim as asked for: by name or template, its device classes.
type Claim struct {
	Name          string   `json:"name"`
	Claim         string   `json:"claim,omitempty"`
	Template      string   `json:"template,omitempty"`
	Extended      bool     `json:"extended,omitempty"`
	DeviceClasses []string `json:"device_classes"`
}

// Run is one repeat of an arm: its pods and the nodes they ran on.
type Run struct {
	Run   string `json:"run"`
	Pods  int    `json:"pods"`
	Nodes []Node `json:"nodes"`
}

// Node is a node an arm's run used, as its latest snapshot up to the experiment's end says.
type Node struct {
	Name           string            `json:"name"`
	Pods           int               `json:"pods"`
	Pool           string            `json:"pool"`
	GPUModel       string            `json:"gpu_model"`
	Sharing        []string          `json:"sharing"`
	KubeletVersion string            `json:"kubelet_version"`
	Labels         map[string]string `json:"labels"`
	Taints         []string          `json:"taints"`
}

// Cluster is the cluster's nodes at the experiment's end: node pools and GPU inventory.
type Cluster struct {
	At    *time.Time `json:"at"`
	Nodes int        `json:"nodes"`
	Pools []Pool     `json:"pools"`
}

// Pool is the nodes sharing a pool label value (events.NodePoolLabels; else the GPU model).
type Pool struct {
	Name            string           `json:"name"`
	Nodes           int              `json:"nodes"`
	GPUModels       []string         `json:"gpu_models"`
	GPUs            map[string]int64 `json:"gpus"` // allocatable GPU resources, summed
	KubeletVersions []string         `json:"kubelet_versions"`
}

// Schedlens is the version of schedlens that wrote the record and its settings that change
// results.
type Schedlens struct {
	Version  string   `json:"version"`
	Settings Settings `json:"settings"`
}

// Settings change what the comparison says.
type Settings struct {
	Method           string         `json:"method"`
	Alpha            float64        `json:"alpha"`
	Baseline         string         `json:"baseline"`
	Margins          map[string]any `json:"margins"`
	Thresholds       map[string]any `json:"thresholds"`
	GPUIdleThreshold float64        `json:"gpu_idle_threshold"`
	MinGapSeconds    float64        `json:"interruption_min_gap_seconds"`
}

// Events is how many events the record stands on and a digest of their ids.
type Events struct {
	Count  int64  `json:"count"`
	Digest string `json:"digest"`
}

// Data is what the store reads for a record.
type Data struct {
	Experiment, Namespace string
	// Definitions are every definition received, oldest first.
	Definitions []Definitioned
	// Pods are the experiment's pods with their latest snapshot.
	Pods []Pod
	// Nodes are every node's latest snapshot up to the experiment's end (End).
	Nodes map[string]events.NodeStatus
	End   *time.Time
	// EventCount and EventIDsDigest cover the experiment's pods' events and its definitions.
	EventCount     int64
	EventIDsDigest string
	// Previous is the previous experiment's record digest, when the definition names one.
	Previous *Link
}

// Definitioned is one definition and when it was received.
type Definitioned struct {
	At   time.Time
	Data json.RawMessage
}

// Pod is an experiment pod: its arm and run, node and latest snapshot.
type Pod struct {
	Arm, Run, Node string
	Status         events.PodStatus
}

// Settings a record is built with, besides what the comparison says.
type Options struct {
	GPUIdleThreshold float64
	MinGap           time.Duration
}

// Build arranges data and the comparison into a record, its digest computed.
func Build(d Data, c compare.Comparison, o Options) (Record, error) {
	r := Record{SchemaVersion: SchemaVersion, Experiment: d.Experiment, Namespace: d.Namespace, Previous: d.Previous,
		Comparison: c, Events: Events{Count: d.EventCount, Digest: d.EventIDsDigest}}
	var err error
	if r.Definition, err = definition(d.Definitions); err != nil {
		return Record{}, err
	}
	r.Arms = arms(d)
	r.Cluster = cluster(d)
	r.Schedlens = Schedlens{Version: buildinfo.Version(), Settings: Settings{Method: c.Method, Alpha: c.Alpha, Baseline: c.Baseline,
		GPUIdleThreshold: o.GPUIdleThreshold, MinGapSeconds: o.MinGap.Seconds(), Margins: map[string]any{}, Thresholds: map[string]any{}}}
	if len(d.Definitions) > 0 {
		var def events.Experiment
		if err := json.Unmarshal(d.Definitions[len(d.Definitions)-1].Data, &def); err == nil {
			r.Schedlens.Settings.Margins = cmpMap(def.Margins)
			r.Schedlens.Settings.Thresholds = cmpMap(def.Thresholds)
		}
	}
	r.Digest, err = Digest(r)
	return r, err
}

func cmpMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Marshal is the record's canonical JSON (encoding/json sorts map keys; every slice is built
// in a fixed order), indented, with a final newline.
func Marshal(r Record) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Digest is "sha256:<hex>" of the record's canonical JSON with Digest "".
func Digest(r Record) (string, error) {
	r.Digest = ""
	b, err := Marshal(r)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Verify recomputes a record's digest and says whether it is the one it carries.
func Verify(r Record) error {
	d, err := Digest(r)
	if err != nil {
		return err
	}
	if d != r.Digest {
		return fmt.Errorf("record digest %s does not match its content (%s)", r.Digest, d)
	}
	return nil
}

// PreviousOf is the experiment a definition chains to (its previous key), "" when none.
func PreviousOf(def json.RawMessage) string {
	var keys map[string]json.RawMessage
	if json.Unmarshal(def, &keys) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(keys[PreviousKey], &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// definition follows every key through the versions received.
func definition(defs []Definitioned) (Definition, error) {
	out := Definition{Versions: len(defs), Keys: map[string]Key{}}
	for _, d := range defs {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(d.Data, &keys); err != nil {
			return Definition{}, fmt.Errorf("a stored definition: %w", err)
		}
		at := d.At.UTC()
		for k, v := range keys {
			v = compact(v)
			old, ok := out.Keys[k]
			switch {
			case !ok:
				out.Keys[k] = Key{Value: v, FirstSetAt: at, ChangedAt: at}
			case !bytes.Equal(old.Value, v):
				old.Value, old.ChangedAt = v, at
				out.Keys[k] = old
			}
		}
		for k, old := range out.Keys {
			if _, ok := keys[k]; !ok && !bytes.Equal(old.Value, []byte("null")) {
				old.Value, old.ChangedAt = json.RawMessage("null"), at
				out.Keys[k] = old
			}
		}
		out.DefinedAt = &at
	}
	return out, nil
}

// compact re-encodes a JSON value without insignificant space (keys of objects sorted), so
// that equal values compare equal.
func compact(v json.RawMessage) json.RawMessage {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return v
	}
	b, err := json.Marshal(x)
	if err != nil {
		return v
	}
	return b
}

// arms groups the pods by arm: their distinct specs, and per run the nodes they ran on.
func arms(d Data) []Arm {
	by := map[string][]Pod{}
	for _, p := range d.Pods {
		by[p.Arm] = append(by[p.Arm], p)
	}
	var out []Arm
	for _, name := range slices.Sorted(maps.Keys(by)) {
		pods := by[name]
		a := Arm{Name: name, Pods: len(pods), Specs: specs(pods)}
		runs := map[string][]Pod{}
		for _, p := range pods {
			runs[p.Run] = append(runs[p.Run], p)
		}
		for _, run := range slices.SortedFunc(maps.Keys(runs), compare.CompareRuns) {
			rp := runs[run]
			r := Run{Run: run, Pods: len(rp), Nodes: []Node{}}
			onNode := map[string][]Pod{}
			for _, p := range rp {
				if p.Node != "" {
					onNode[p.Node] = append(onNode[p.Node], p)
				}
			}
			for _, n := range slices.Sorted(maps.Keys(onNode)) {
				r.Nodes = append(r.Nodes, node(n, onNode[n], d.Nodes[n]))
			}
			a.Runs = append(a.Runs, r)
		}
		out = append(out, a)
	}
	if out == nil {
		out = []Arm{}
	}
	return out
}

// specs are the distinct placement-relevant specs of pods, most pods first.
func specs(pods []Pod) []Spec {
	count := map[string]int{}
	spec := map[string]Spec{}
	for _, p := range pods {
		s := Spec{Placement: p.Status.Placement, Resources: p.Status.Resources, Claims: []Claim{}, SchedulingGates: p.Status.SchedulingGates}
		if s.SchedulingGates == nil {
			s.SchedulingGates = []string{}
		}
		for _, c := range p.Status.Claims {
			dc := c.DeviceClasses
			if dc == nil {
				dc = []string{}
			}
			s.Claims = append(s.Claims, Claim{Name: c.Name, Claim: claimName(c), Template: c.Template, Extended: c.Extended, DeviceClasses: dc})
		}
		b, _ := json.Marshal(s)
		count[string(b)]++
		spec[string(b)] = s
	}
	keys := slices.Collect(maps.Keys(spec))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(count[b], count[a]), strings.Compare(a, b)) })
	out := make([]Spec, 0, len(keys))
	for _, k := range keys {
		s := spec[k]
		s.Pods = count[k]
		out = append(out, s)
	}
	return out
}

// claimName is the claim a pod names itself (a shared claim); a template's generated claims
// differ per pod and are left out, so that equal specs compare equal.
func claimName(c events.PodClaim) string {
	if c.Template != "" || c.Extended {
		return ""
	}
	return c.Claim
}

// node describes a node from its snapshot and the pods of a run on it.
func node(name string, pods []Pod, s events.NodeStatus) Node {
	n := Node{Name: name, Pods: len(pods), Pool: poolOf(s), Labels: s.Labels, KubeletVersion: s.KubeletVersion, Taints: []string{}, Sharing: []string{}}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	for _, t := range s.Taints {
		n.Taints = append(n.Taints, taint(t))
	}
	sharing := map[string]bool{}
	for _, p := range pods {
		if g := p.Status.GPU; g != nil {
			n.GPUModel = cmp.Or(n.GPUModel, g.Model)
			if g.Sharing != "" {
				sharing[g.Sharing] = true
			}
		}
	}
	n.GPUModel = cmp.Or(n.GPUModel, s.Labels["nvidia.com/gpu.product"])
	n.Sharing = append(n.Sharing, slices.Sorted(maps.Keys(sharing))...)
	return n
}

func taint(t events.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + t.Effect
}

// poolOf names a node's pool: the first pool label it carries, else its GPU model, else "".
func poolOf(s events.NodeStatus) string {
	return cmp.Or(events.NodePool(s.Labels), s.Labels["nvidia.com/gpu.product"])
}

// cluster is the node pools and GPU inventory of every node's latest snapshot.
func cluster(d Data) Cluster {
	c := Cluster{At: d.End, Pools: []Pool{}}
	type acc struct {
		nodes            int
		models, versions map[string]bool
		gpus             map[string]int64
	}
	pools := map[string]*acc{}
	for _, name := range slices.Sorted(maps.Keys(d.Nodes)) {
		s := d.Nodes[name]
		if s.Deleted {
			continue
		}
		c.Nodes++
		p := poolOf(s)
		a := pools[p]
		if a == nil {
			a = &acc{models: map[string]bool{}, versions: map[string]bool{}, gpus: map[string]int64{}}
			pools[p] = a
		}
		a.nodes++
		if m := s.Labels["nvidia.com/gpu.product"]; m != "" {
			a.models[m] = true
		}
		if s.KubeletVersion != "" {
			a.versions[s.KubeletVersion] = true
		}
		for r, q := range s.Allocatable {
			if strings.HasPrefix(r, "nvidia.com/") {
				var n int64
				if _, err := fmt.Sscan(q, &n); err == nil {
					a.gpus[r] += n
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(pools)) {
		a := pools[name]
		c.Pools = append(c.Pools, Pool{Name: name, Nodes: a.nodes, GPUModels: slices.Sorted(maps.Keys(a.models)), GPUs: a.gpus,
			KubeletVersions: slices.Sorted(maps.Keys(a.versions))})
	}
	return c
}
