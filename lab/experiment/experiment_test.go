package experiment_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/lab/experiment"
)

// Every shipped definition parses, and the ConfigMap the runner publishes is read back by the
// collector's conversion without errors and with the definition's values.
func TestDefinitionsRoundTripThroughTheCollector(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("definitions: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			d, err := experiment.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			cm, err := d.ConfigMap("lab")
			if err != nil {
				t.Fatal(err)
			}
			got := kube.ExperimentOf(cm, events.DefaultLabelKeys)
			if len(got.Errors) > 0 {
				t.Fatalf("the collector cannot read the ConfigMap: %v", got.Errors)
			}
			if got.Name != d.Name || got.Repeats != d.Repeats || got.Baseline != d.Baseline || got.Change != d.Change {
				t.Errorf("experiment %+v; want name %s, repeats %d, baseline %s", got, d.Name, d.Repeats, d.Baseline)
			}
			if len(got.Arms) != len(d.Arms) {
				t.Fatalf("arms %#v, want %d", got.Arms, len(d.Arms))
			}
			for i, a := range got.Arms {
				if a.Name != d.Arms[i].Name {
					t.Errorf("arm %d: %v, want %s", i, a.Name, d.Arms[i].Name)
				}
			}
			if got.Fixed == nil || got.Fixed.Image != d.Fixed.Image || got.Fixed.Request == nil || got.Fixed.Request.Port != d.Fixed.Request.Port {
				t.Errorf("fixed %+v, want image %s and the request", got.Fixed, d.Fixed.Image)
			}
			if len(d.Thresholds) > 0 && len(got.Thresholds) != len(d.Thresholds) {
				t.Errorf("thresholds %v, want %v", got.Thresholds, d.Thresholds)
			}
		})
	}
	if d := experiment.Day20(); len(d.Arms) != 4 || d.Repeats != 3 || !slices.Equal(d.Disruptions, []string{"rolling-update", "drain", "node-rejoin"}) {
		t.Errorf("day20: %d arms × %d repeats, disruptions %v; want 4 × 3 and all three", len(d.Arms), d.Repeats, d.Disruptions)
	}
}

func TestParseRejects(t *testing.T) {
	for name, yaml := range map[string]string{
		"no name":          "repeats: 1\nfixed: {image: x, pods: 1}\narms: [{name: a}]",
		"no repeats":       "name: x\nfixed: {image: x, pods: 1}\narms: [{name: a}]",
		"unknown field":    "name: x\nrepeats: 1\nfixed: {image: x, pods: 1}\narms: [{name: a}]\nfrobs: 1",
		"baseline not arm": "name: x\nrepeats: 1\nbaseline: b\nfixed: {image: x, pods: 1}\narms: [{name: a}]",
		"repeated arm":     "name: x\nrepeats: 1\nfixed: {image: x, pods: 1}\narms: [{name: a}, {name: a}]",
		"bad disruption":   "name: x\nrepeats: 1\nfixed: {image: x, pods: 1}\narms: [{name: a}]\ndisruptions: [earthquake]",
	} {
		if _, err := experiment.Parse([]byte(yaml)); err == nil {
			t.Errorf("%s: parsed; want an error", name)
		}
	}
	p := filepath.Join(t.TempDir(), "x.yaml")
	if err := os.WriteFile(p, []byte("name: ["), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := experiment.Load(p); err == nil {
		t.Error("Load of malformed YAML: no error")
	}
}

// A disruption scenario's Deployment runs the baseline's pod with the scenario as its arm, is
// selected by the experiment, arm and run labels (so scenarios and repeats never share pods), and
// rolls out surge first.
func TestScenarioDeployment(t *testing.T) {
	d := experiment.Day20()
	dep := d.Deployment(d.Arms[0], experiment.Drain, "lab", 2, 2)
	tmpl := dep.Spec.Template
	got := []string{
		"name " + dep.Name,
		fmt.Sprintf("replicas %d", *dep.Spec.Replicas),
		fmt.Sprintf("selector %v", dep.Spec.Selector.MatchLabels),
		fmt.Sprintf("strategy %s surge %s unavailable %s", dep.Spec.Strategy.Type, dep.Spec.Strategy.RollingUpdate.MaxSurge, dep.Spec.Strategy.RollingUpdate.MaxUnavailable),
		fmt.Sprintf("pod labels %v", tmpl.Labels),
		fmt.Sprintf("pod annotations %v", tmpl.Annotations),
		fmt.Sprintf("container %s %s gpu %s", tmpl.Spec.Containers[0].Name, tmpl.Spec.Containers[0].Image, tmpl.Spec.Containers[0].Resources.Limits.Name("nvidia.com/gpu", "")),
	}
	want := []string{
		"name day20-drain-r2",
		"replicas 2",
		"selector map[schedlens.io/arm:drain schedlens.io/experiment:day20 schedlens.io/run:2]",
		"strategy RollingUpdate surge 1 unavailable 0",
		"pod labels map[app:day20 schedlens.io/arm:drain schedlens.io/experiment:day20 schedlens.io/run:2 schedlens.io/scenario:drain]",
		"pod annotations map[lab.schedlens.io/model:llama-3-8b]",
		"container model nvcr.io/nvidia/tritonserver:25.01-py3 gpu 1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deployment (-want +got):\n%s", diff)
	}
}
