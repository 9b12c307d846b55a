package manifest_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/lab/experiment"
	"github.com/schedlens/schedlens/lab/manifest"
)

const day20Dir = "../../deploy/examples/day20"

var day20Arms = []string{"control", "affinity", "priority", "timeslice", "mig"}

// The day20 manifests — the experiment (namespace ai-lab, its ConfigMap, PriorityClasses) and
// every arm's overlay — pass the real API server's validation, and every pod they would run
// carries the schedlens labels of its arm.
func TestDay20ManifestsApply(t *testing.T) {
	ctx := context.Background()
	a, err := manifest.NewApplier(cp.REST)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Kustomize(filepath.Join(day20Dir, "experiment"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(ctx, objs, "ai-lab"); err != nil {
		t.Fatalf("experiment: %v", err)
	}
	for _, arm := range day20Arms {
		objs, err := manifest.Kustomize(filepath.Join(day20Dir, "arms", arm))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objs {
			if u.GetNamespace() != "ai-lab" {
				t.Errorf("arm %s: %s %s in namespace %q, want ai-lab", arm, u.GetKind(), u.GetName(), u.GetNamespace())
			}
			labels, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
			if labels[events.LabelExperiment] != "day20" || labels[events.LabelRun] == "" ||
				(labels[events.LabelArm] != arm && labels[events.LabelArm] != experiment.ArmBackground) {
				t.Errorf("arm %s: %s %s pod labels %v", arm, u.GetKind(), u.GetName(), labels)
			}
		}
		if err := a.Apply(ctx, objs, "ai-lab"); err != nil {
			t.Errorf("arm %s: %v", arm, err)
		}
	}
	deps, err := cp.Client.AppsV1().Deployments("ai-lab").List(ctx, metav1.ListOptions{LabelSelector: events.LabelExperiment + "=day20"})
	if err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != len(day20Arms)+1 {
		t.Errorf("%d Deployments in ai-lab, want one per arm and the background load", len(deps.Items))
	}

	// The ConfigMap as stored is what the collector reads, with the keys the seed writes.
	cm, err := cp.Client.CoreV1().ConfigMaps("ai-lab").Get(ctx, "day20-experiment", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"change", "fixed", "metrics", "repeats", "baseline", "thresholds", "arms"} {
		if cm.Data[key] == "" {
			t.Errorf("experiment ConfigMap lacks %q", key)
		}
	}
	got := kube.ExperimentOf(cm, events.DefaultLabelKeys)
	if len(got.Errors) > 0 || got.Name != "day20" || got.Repeats != 3 || got.Baseline != "control" {
		t.Errorf("the collector reads %+v", got)
	}
}

// LoadManifests (what `lab demo -manifests` runs) reads the same experiment as the lab's own
// day20 — the fixed workload, metrics, repeats, baseline, thresholds — with five arms, each
// pod from its overlay.
func TestDay20ManifestsMatchTheLabsDay20(t *testing.T) {
	m, err := experiment.LoadManifests(day20Dir)
	if err != nil {
		t.Fatal(err)
	}
	d, lab := m.Definition, experiment.Day20()
	if diff := cmp.Diff(lab.Fixed, d.Fixed); diff != "" {
		t.Errorf("fixed workload (-lab +manifests):\n%s", diff)
	}
	if !cmp.Equal(lab.Metrics, d.Metrics) || lab.Repeats != d.Repeats || lab.Baseline != d.Baseline || !cmp.Equal(lab.Thresholds, d.Thresholds) {
		t.Errorf("manifests: metrics %v, repeats %d, baseline %s, thresholds %v; lab: %v %d %s %v",
			d.Metrics, d.Repeats, d.Baseline, d.Thresholds, lab.Metrics, lab.Repeats, lab.Baseline, lab.Thresholds)
	}
	var names []string
	for _, a := range d.Arms {
		names = append(names, a.Name)
		if a.Template == nil {
			t.Errorf("arm %s: no pod template", a.Name)
			continue
		}
		if c := a.Template.Spec.Containers[0]; c.Image != d.Fixed.Image || c.Resources.Limits.Name("nvidia.com/gpu", "").String() != "1" {
			t.Errorf("arm %s: container %s %v, want the fixed image with one GPU", a.Name, c.Image, c.Resources.Limits)
		}
	}
	if !cmp.Equal(names, day20Arms) {
		t.Errorf("arms %v, want %v", names, day20Arms)
	}
	pri := d.Arms[2]
	if pri.Template.Spec.PriorityClassName != "day20-high" || pri.Background == nil || pri.Background.Pods != 4 || pri.Background.PriorityClass != "day20-low" {
		t.Errorf("priority arm: class %q, background %+v", pri.Template.Spec.PriorityClassName, pri.Background)
	}
	for _, a := range d.Arms[3:] {
		if len(a.Template.Spec.Tolerations) != 1 || a.Template.Spec.Tolerations[0].Key != "nvidia.com/gpu.shared" || a.Template.Spec.Tolerations[0].Effect != corev1.TaintEffectNoSchedule {
			t.Errorf("arm %s tolerations %v, want the shared-GPU taint tolerated", a.Name, a.Template.Spec.Tolerations)
		}
	}
}
