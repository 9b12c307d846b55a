package preflight_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/experiment"
	"github.com/schedlens/schedlens/lab/preflight"
)

// A malformed document is reported with its file and line, an unknown field with the line of
// the field, and the other documents are still checked (with the lines of their fields).
func TestLoadBadInput(t *testing.T) {
	in := preflight.Load([]string{"testdata/bad/manifests.yaml"}, nil, "default")
	var errs []string
	for _, e := range in.Errors {
		errs = append(errs, fmt.Sprintf("%s:%d", e.File, e.Line))
	}
	if diff := cmp.Diff([]string{"testdata/bad/manifests.yaml:18", "testdata/bad/manifests.yaml:29"}, errs); diff != "" {
		t.Errorf("input errors (-want +got):\n%s\n%v", diff, in.Errors)
	}
	if len(in.Errors) == 2 && !strings.Contains(in.Errors[1].Message, `unknown field "spec.template.spec.nodeselector"`) {
		t.Errorf("unknown field message: %s", in.Errors[1].Message)
	}
	var names []string
	for _, w := range in.Workloads {
		names = append(names, fmt.Sprintf("%s@%d", w.Name, w.Line))
	}
	if diff := cmp.Diff([]string{"good@2", "typo@21"}, names); diff != "" {
		t.Errorf("workloads (-want +got):\n%s", diff)
	}
	if in.Ignored["Service"] != 1 {
		t.Errorf("ignored kinds %v: want the Service counted", in.Ignored)
	}
	r := preflight.Check(in, preflight.FromSpec(cluster.Default(), "test"), preflight.Options{})
	found := false
	for _, f := range r.Findings {
		if f.Rule == preflight.RuleGPURequestLimit && f.Object.Name == "good" {
			found = true
			if f.Line != 14 {
				t.Errorf("finding line %d, want 14 (the requests field)", f.Line)
			}
		}
	}
	if !found {
		t.Errorf("the good document was not checked: %+v", r.Findings)
	}
	if r.ExitCode() != 2 {
		t.Errorf("exit %d, want 2 for bad input", r.ExitCode())
	}
}

// Lists (kubectl get -o json), JSON files and directories are read.
func TestLoadListsAndDirectories(t *testing.T) {
	in := preflight.Load([]string{"testdata/list.json"}, nil, "default")
	if len(in.Errors) > 0 || len(in.PDBs) != 1 || in.PDBs[0].Name != "llm" {
		t.Fatalf("list: errors %v, pdbs %v", in.Errors, in.PDBs)
	}
	in = preflight.Load([]string{"testdata"}, nil, "default")
	if len(in.PDBs) != 1 || len(in.Workloads) < 2 {
		t.Errorf("directory: %d PDBs, %d workloads", len(in.PDBs), len(in.Workloads))
	}
	in = preflight.Load([]string{"testdata/none.yaml"}, nil, "default")
	if len(in.Errors) != 1 {
		t.Errorf("missing file: %v", in.Errors)
	}
}

// Workloads expand into every replica, named and labelled as their controllers would.
func TestPods(t *testing.T) {
	m := deployment("llm", 2, container, "") + "---\n" + `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: ai-lab}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: pg}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: warm, namespace: ai-lab}
spec:
  parallelism: 3
  completions: 2
  template:
    metadata: {labels: {app: warm}}
    spec: {restartPolicy: Never, containers: [{name: w, image: warm}]}
`
	in := preflight.Load([]string{preflight.Stdin}, strings.NewReader(m), "default")
	var got []string
	for _, w := range in.Workloads {
		for _, p := range w.Pods() {
			got = append(got, fmt.Sprintf("%s/%s app=%s hash=%t owner=%s", p.Namespace, p.Name[:len(w.Name)], p.Labels["app"],
				p.Labels["pod-template-hash"] != "", p.OwnerReferences[0].Kind))
		}
	}
	want := []string{
		"ai-lab/llm app=llm hash=true owner=ReplicaSet", "ai-lab/llm app=llm hash=true owner=ReplicaSet",
		"ai-lab/db app=db hash=false owner=StatefulSet", "ai-lab/db app=db hash=false owner=StatefulSet",
		"ai-lab/warm app=warm hash=false owner=Job", "ai-lab/warm app=warm hash=false owner=Job",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	pods := in.Workloads[1].Pods()
	if pods[0].Name != "db-0" || pods[1].Name != "db-1" {
		t.Errorf("stateful set pods %s, %s", pods[0].Name, pods[1].Name)
	}
	d := in.Workloads[0].Pods()
	if d[0].Name == d[1].Name || !strings.HasPrefix(d[0].Name, "llm-"+d[0].Labels["pod-template-hash"]+"-") {
		t.Errorf("deployment pods %s, %s", d[0].Name, d[1].Name)
	}
}

// testdata/day20-arms.yaml is what ExperimentManifests renders for day20 (go test -run
// TestDay20Manifests -update rewrites it), and it reads back without error.
func TestDay20Manifests(t *testing.T) {
	b, err := preflight.ExperimentManifests(experiment.Day20(), "ai-lab", 1)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/day20-arms.yaml", b)
	in := preflight.Load([]string{"testdata/day20-arms.yaml"}, nil, "default")
	if len(in.Errors) > 0 {
		t.Fatal(in.Errors)
	}
	groups := map[string]int{}
	for _, w := range in.Workloads {
		groups[w.Group()]++
	}
	if diff := cmp.Diff(map[string]int{"control": 3, "affinity": 3, "priority": 7, "sharing": 3}, groups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	r := preflight.Check(in, preflight.FromSpec(cluster.Default(), "test"), preflight.Options{})
	if r.ExitCode() != 0 {
		t.Errorf("day20 on the lab's cluster: exit %d, %+v", r.ExitCode(), r.Findings)
	}
}

// helm template output: "---" then a "# Source:" comment per document, empty documents, a
// document end marker; every object keeps the line it starts on.
func TestLoadHelmOutput(t *testing.T) {
	helm := "---\n# Source: llm/templates/pdb.yaml\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: llm\nspec:\n  maxUnavailable: 1\n  selector: {matchLabels: {app: llm}}\n" +
		"---\n# Source: llm/templates/empty.yaml\n---\n# Source: llm/templates/deployment.yaml\n" + deployment("llm", 1, container, "") + "...\n"
	in := preflight.Load([]string{preflight.Stdin}, strings.NewReader(helm), "default")
	if len(in.Errors) > 0 || len(in.PDBs) != 1 || len(in.Workloads) != 1 {
		t.Fatalf("errors %v, %d PDBs, %d workloads", in.Errors, len(in.PDBs), len(in.Workloads))
	}
	if in.PDBs[0].Line != 3 || in.Workloads[0].Line != 14 || in.Workloads[0].File != "<stdin>" {
		t.Errorf("lines: PDB %d (want 3), Deployment %s:%d (want <stdin>:14)", in.PDBs[0].Line, in.Workloads[0].File, in.Workloads[0].Line)
	}
}
