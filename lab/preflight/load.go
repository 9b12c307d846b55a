package preflight

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

// Stdin is the path that means standard input.
const Stdin = "-"

// InputError is a document that could not be read: malformed YAML, an unknown field, a kind
// whose fields do not decode. The other documents are still checked.
type InputError struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func (e InputError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message) }

// Object is one manifest object: what it is and where it was read.
type Object struct {
	Kind        string            `json:"kind"`
	Namespace   string            `json:"namespace,omitempty"`
	Name        string            `json:"name"`
	File        string            `json:"file"`
	Line        int               `json:"line"`
	Annotations map[string]string `json:"-"`
	node        *yamlv3.Node      // the object's mapping, for the lines of its fields
	base        int               // the file line of its document's first line
	ignore      map[string]bool
}

// String names the object as kubectl does: Kind namespace/name.
func (o *Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// LineOf returns the line of a field path ("spec.template.spec.containers[0].resources"), or of
// its deepest part the manifest has, or the object's line.
func (o *Object) LineOf(path string) int {
	if o.node == nil || path == "" {
		return o.Line
	}
	n, line := o.node, o.Line
	for _, seg := range splitPath(path) {
		next, at := child(n, seg)
		if next == nil {
			break
		}
		n, line = next, o.base+at-1
	}
	return line
}

// Input is everything read from the manifests.
type Input struct {
	Objects         []*Object
	Workloads       []*Workload
	PDBs            []*PDB
	PriorityClasses []*PriorityClass
	Experiments     []*ExperimentConfig
	// Claims are the ResourceClaims and ResourceClaimTemplates (resource.k8s.io), DeviceClasses
	// the DeviceClasses.
	Claims        []*Claim
	DeviceClasses []*DeviceClass
	// LabelRegistries are the ConfigMaps labelled schedlens.io/label-registry.
	LabelRegistries []*LabelRegistry
	// Ignored counts documents of other kinds (Services, ConfigMaps without the experiment
	// label, custom resources …) by kind.
	Ignored map[string]int
	Errors  []InputError
}

// LabelRegistry is a label registry ConfigMap of the manifests and the entries read from it.
type LabelRegistry struct {
	*Object
	Docs []kube.LabelDoc
}

// PDB is a PodDisruptionBudget of the manifests.
type PDB struct {
	*Object
	Spec policyv1.PodDisruptionBudgetSpec
}

// PriorityClass is a PriorityClass of the manifests.
type PriorityClass struct {
	*Object
	Value         int32
	GlobalDefault bool
}

// ExperimentConfig is an experiment ConfigMap (labelled schedlens.io/experiment).
type ExperimentConfig struct {
	*Object
	ConfigMap *corev1.ConfigMap
}

// Load reads manifests from files and directories (every *.yaml, *.yml and *.json below them,
// in name order) and Stdin from stdin. Multi-document YAML, JSON and List kinds are read;
// documents that cannot be read are collected in Errors and the rest still returned.
// defaultNamespace is given to namespaced objects that name none (as kubectl does with its
// context's namespace).
func Load(paths []string, stdin io.Reader, defaultNamespace string) *Input {
	in := &Input{Ignored: map[string]int{}}
	for _, p := range paths {
		if p == Stdin {
			b, err := io.ReadAll(stdin)
			if err != nil {
				in.Errors = append(in.Errors, InputError{File: "<stdin>", Message: fmt.Sprintf("read: %v", err)})
				continue
			}
			in.parse("<stdin>", b, defaultNamespace)
			continue
		}
		files, err := manifestFiles(p)
		if err != nil {
			in.Errors = append(in.Errors, InputError{File: p, Message: err.Error()})
			continue
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				in.Errors = append(in.Errors, InputError{File: f, Message: err.Error()})
				continue
			}
			in.parse(f, b, defaultNamespace)
		}
	}
	return in
}

// manifestFiles expands a path: a file is itself, a directory every manifest below it.
func manifestFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				out = append(out, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no .yaml, .yml or .json files")
	}
	slices.Sort(out)
	return out, nil
}

// document is one YAML document of a stream and the line it starts on.
type document struct {
	text []byte
	line int // 1-based line of the document's first line in its file
}

// splitDocuments splits a YAML stream at "---" and "..." lines, keeping each document's first
// line number, so an error inside one names the file's line.
func splitDocuments(b []byte) []document {
	var docs []document
	var cur bytes.Buffer
	start := 1
	flush := func(next int) {
		if strings.TrimSpace(stripComments(cur.String())) != "" {
			docs = append(docs, document{text: bytes.Clone(cur.Bytes()), line: start})
		}
		cur.Reset()
		start = next
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	for i, l := range lines {
		s := strings.TrimRight(string(l), "\r\n")
		if s == "---" || strings.HasPrefix(s, "--- ") || strings.HasPrefix(s, "---\t") || s == "..." {
			flush(i + 2)
			if rest := strings.TrimSpace(strings.TrimPrefix(s, "---")); rest != "" && !strings.HasPrefix(rest, "#") && s != "..." {
				start = i + 1
				cur.WriteString(rest + "\n")
			}
			continue
		}
		cur.Write(l)
	}
	flush(0)
	return docs
}

func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

var lineInError = regexp.MustCompile(`line (\d+)`)

// Parse reads every document of b, named file in reports, into in.
func (in *Input) Parse(file string, b []byte, defaultNamespace string) {
	in.parse(file, b, defaultNamespace)
}

// parse reads every document of one file.
func (in *Input) parse(file string, b []byte, defaultNamespace string) {
	for _, d := range splitDocuments(b) {
		// sigs.k8s.io/yaml (what kubectl reads with) decides and names the line; yaml.v3 only
		// maps fields to lines (its parser errors count lines from 0).
		js, err := yaml.YAMLToJSON(d.text)
		if err != nil {
			in.Errors = append(in.Errors, InputError{File: file, Line: errorLine(err, d.line), Message: "malformed YAML: " + cleanYAMLError(err)})
			continue
		}
		var root yamlv3.Node
		_ = yamlv3.Unmarshal(d.text, &root)
		node := &root
		if node.Kind == yamlv3.DocumentNode && len(node.Content) > 0 {
			node = node.Content[0]
		}
		in.object(file, d.line, js, node, defaultNamespace)
	}
}

func errorLine(err error, base int) int {
	if m := lineInError.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return base + n - 1
	}
	return base
}

func cleanYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "error converting YAML to JSON: ")
	s = strings.TrimPrefix(s, "yaml: ")
	return strings.TrimPrefix(lineInError.ReplaceAllString(s, ""), ": ")
}

// object decodes one object (or the items of a List) by kind.
func (in *Input) object(file string, base int, js []byte, node *yamlv3.Node, defaultNamespace string) {
	var meta struct {
		metav1.TypeMeta
		Metadata metav1.ObjectMeta `json:"metadata"`
		Items    []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &meta); err != nil {
		in.Errors = append(in.Errors, InputError{File: file, Line: nodeLine(node, base), Message: "not a Kubernetes object: " + err.Error()})
		return
	}
	line := nodeLine(node, base)
	if meta.Kind == "" || meta.APIVersion == "" {
		in.Errors = append(in.Errors, InputError{File: file, Line: line, Message: "not a Kubernetes object: apiVersion and kind are required"})
		return
	}
	if strings.HasSuffix(meta.Kind, "List") && meta.Items != nil {
		items, _ := child(node, "items")
		for i, item := range meta.Items {
			var itemNode *yamlv3.Node
			if items != nil && i < len(items.Content) {
				itemNode = items.Content[i]
			}
			in.object(file, base, item, itemNode, defaultNamespace)
		}
		return
	}
	o := &Object{Kind: meta.Kind, Namespace: meta.Metadata.Namespace, Name: meta.Metadata.Name, File: file, Line: line,
		Annotations: meta.Metadata.Annotations, node: node, base: base, ignore: map[string]bool{}}
	parseIgnore(o.ignore, o.Annotations)
	namespaced := meta.Kind != "PriorityClass" && meta.Kind != "DeviceClass"
	if namespaced && o.Namespace == "" {
		o.Namespace = defaultNamespace
	}
	group := strings.Split(meta.APIVersion, "/")[0]
	decode := func(v any) bool {
		strict, err := kjson.UnmarshalStrict(js, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
		if err != nil {
			in.Errors = append(in.Errors, InputError{File: file, Line: line, Message: fmt.Sprintf("%s: %v", o, err)})
			return false
		}
		for _, e := range strict {
			msg := e.Error()
			path := ""
			if m := quotedField.FindStringSubmatch(msg); m != nil {
				path = m[1]
			}
			in.Errors = append(in.Errors, InputError{File: file, Line: o.LineOf(path), Message: fmt.Sprintf("%s: %s", o, msg)})
		}
		return true // unknown fields are reported, the object is still checked
	}
	workload := func(obj any) {
		if decode(obj) {
			in.addWorkload(o, obj)
		}
	}
	switch {
	case meta.Kind == "Deployment" && group == "apps":
		workload(&appsv1.Deployment{})
	case meta.Kind == "StatefulSet" && group == "apps":
		workload(&appsv1.StatefulSet{})
	case meta.Kind == "Job" && group == "batch":
		workload(&batchv1.Job{})
	case meta.Kind == "Pod" && meta.APIVersion == "v1":
		workload(&corev1.Pod{})
	case meta.Kind == "PodDisruptionBudget" && group == "policy":
		var p policyv1.PodDisruptionBudget
		if decode(&p) {
			in.Objects = append(in.Objects, o)
			in.PDBs = append(in.PDBs, &PDB{Object: o, Spec: p.Spec})
		}
	case meta.Kind == "PriorityClass" && group == "scheduling.k8s.io":
		var p schedulingv1.PriorityClass
		if decode(&p) {
			in.Objects = append(in.Objects, o)
			in.PriorityClasses = append(in.PriorityClasses, &PriorityClass{Object: o, Value: p.Value, GlobalDefault: p.GlobalDefault})
		}
	case meta.Kind == "ConfigMap" && meta.APIVersion == "v1" && meta.Metadata.Labels[events.LabelExperiment] != "":
		var c corev1.ConfigMap
		if decode(&c) {
			c.Namespace = o.Namespace
			in.Objects = append(in.Objects, o)
			in.Experiments = append(in.Experiments, &ExperimentConfig{Object: o, ConfigMap: &c})
		}
	case meta.Kind == "ConfigMap" && meta.APIVersion == "v1" && kube.IsLabelRegistry(&corev1.ConfigMap{ObjectMeta: meta.Metadata}):
		var c corev1.ConfigMap
		if decode(&c) {
			c.Namespace = o.Namespace
			docs, errs := kube.LabelRegistryOf(&c)
			for _, err := range errs {
				in.Errors = append(in.Errors, InputError{File: file, Line: o.LineOf("data." + kube.LabelRegistryKey), Message: err.Error()})
			}
			in.Objects = append(in.Objects, o)
			in.LabelRegistries = append(in.LabelRegistries, &LabelRegistry{Object: o, Docs: docs})
		}
	case meta.Kind == "ResourceClaim" && draVersion(meta.APIVersion):
		var c resourcev1.ResourceClaim
		if decode(&c) {
			in.Objects = append(in.Objects, o)
			in.Claims = append(in.Claims, &Claim{Object: o, Spec: c.Spec, SpecPath: "spec"})
		}
	case meta.Kind == "ResourceClaimTemplate" && draVersion(meta.APIVersion):
		var c resourcev1.ResourceClaimTemplate
		if decode(&c) {
			in.Objects = append(in.Objects, o)
			in.Claims = append(in.Claims, &Claim{Object: o, Spec: c.Spec.Spec, SpecPath: "spec.spec"})
		}
	case meta.Kind == "DeviceClass" && draVersion(meta.APIVersion):
		var c resourcev1.DeviceClass
		if decode(&c) {
			in.Objects = append(in.Objects, o)
			in.DeviceClasses = append(in.DeviceClasses, &DeviceClass{Object: o, Class: c})
		}
	default:
		in.Ignored[meta.Kind]++
	}
}

// draVersion: the DRA objects are read as resource.k8s.io/v1; v1beta2 has the same shape.
// Older versions (v1beta1, v1alpha3) are counted as ignored kinds.
func draVersion(apiVersion string) bool {
	return apiVersion == "resource.k8s.io/v1" || apiVersion == "resource.k8s.io/v1beta2"
}

var quotedField = regexp.MustCompile(`field "([^"]*)"`)

func nodeLine(n *yamlv3.Node, base int) int {
	if n == nil {
		return base
	}
	return base + n.Line - 1
}

// splitPath splits "a.b[0].c" into a, b, [0], c.
func splitPath(path string) []string {
	var out []string
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			i := strings.IndexByte(part, '[')
			switch {
			case i < 0:
				out = append(out, part)
				part = ""
			case i > 0:
				out = append(out, part[:i])
				part = part[i:]
			default:
				j := strings.IndexByte(part, ']')
				if j < 0 {
					out = append(out, part)
					part = ""
				} else {
					out = append(out, part[:j+1])
					part = part[j+1:]
				}
			}
		}
	}
	return out
}

// child finds a mapping key or a "[i]" sequence item, and the line it is on (relative to the
// document: Object.LineOf adds the document's first line).
func child(n *yamlv3.Node, seg string) (*yamlv3.Node, int) {
	if n == nil {
		return nil, 0
	}
	if n.Kind == yamlv3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if strings.HasPrefix(seg, "[") {
		i, err := strconv.Atoi(strings.Trim(seg, "[]"))
		if err != nil || n.Kind != yamlv3.SequenceNode || i < 0 || i >= len(n.Content) {
			return nil, 0
		}
		return n.Content[i], n.Content[i].Line
	}
	if n.Kind != yamlv3.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == seg {
			return n.Content[i+1], n.Content[i].Line
		}
	}
	return nil, 0
}
