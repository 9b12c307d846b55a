package experiment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/lab/kubelet"
	"github.com/schedlens/schedlens/lab/manifest"
)

// ArmBackground is the arm label of the background load an arm's manifests may bring.
const ArmBackground = "background"

// Manifests is an experiment written as Kustomize manifests (deploy/examples/day20): the
// definition read from its experiment ConfigMap, each arm's pod from its overlay's Deployment,
// and the other objects (PriorityClasses) to apply before running it.
type Manifests struct {
	Definition *Definition
	Objects    []*unstructured.Unstructured
}

// LoadManifests builds dir/experiment (the namespace, the experiment ConfigMap, PriorityClasses)
// and dir/arms/<arm> for every arm the ConfigMap names: one Deployment labelled with the arm
// (its pod template and replicas are the arm's pods), and optionally one labelled
// schedlens.io/arm=background (low-priority load started first).
func LoadManifests(dir string) (*Manifests, error) {
	objs, err := manifest.Kustomize(filepath.Join(dir, "experiment"))
	if err != nil {
		return nil, err
	}
	m := &Manifests{}
	for _, u := range objs {
		switch {
		case u.GetKind() == "ConfigMap" && u.GetLabels()[events.LabelExperiment] != "":
			if m.Definition != nil {
				return nil, errors.New("experiment manifests: more than one experiment ConfigMap")
			}
			var cm corev1.ConfigMap
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cm); err != nil {
				return nil, fmt.Errorf("experiment ConfigMap: %w", err)
			}
			if m.Definition, err = FromConfigMap(&cm); err != nil {
				return nil, err
			}
		case u.GetKind() == "Namespace":
			// The runner's namespace replaces it.
		default:
			m.Objects = append(m.Objects, u)
		}
	}
	if m.Definition == nil {
		return nil, fmt.Errorf("%s/experiment: no ConfigMap labelled %s", dir, events.LabelExperiment)
	}
	d := m.Definition
	for i := range d.Arms {
		arm := &d.Arms[i]
		armDir := filepath.Join(dir, "arms", arm.Name)
		if _, err := os.Stat(armDir); err != nil {
			return nil, fmt.Errorf("arm %s: %w", arm.Name, err)
		}
		objs, err := manifest.Kustomize(armDir)
		if err != nil {
			return nil, err
		}
		for _, u := range objs {
			if u.GetKind() != "Deployment" {
				m.Objects = append(m.Objects, u)
				continue
			}
			var dep appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &dep); err != nil {
				return nil, fmt.Errorf("arm %s: %s: %w", arm.Name, u.GetName(), err)
			}
			replicas := 1
			if dep.Spec.Replicas != nil {
				replicas = int(*dep.Spec.Replicas)
			}
			switch label := dep.Spec.Template.Labels[events.LabelArm]; label {
			case arm.Name:
				if arm.Template != nil {
					return nil, fmt.Errorf("arm %s: more than one Deployment labelled %s=%s", arm.Name, events.LabelArm, label)
				}
				if replicas != d.Fixed.Pods {
					return nil, fmt.Errorf("arm %s: Deployment %s has %d replicas, the experiment's fixed workload %d pods", arm.Name, dep.Name, replicas, d.Fixed.Pods)
				}
				arm.Template = &dep.Spec.Template
			case ArmBackground:
				arm.Background = &Background{Pods: replicas, PriorityClass: dep.Spec.Template.Spec.PriorityClassName, Template: &dep.Spec.Template}
			default:
				return nil, fmt.Errorf("arm %s: Deployment %s is labelled %s=%q, want %q or %q", arm.Name, dep.Name, events.LabelArm, label, arm.Name, ArmBackground)
			}
		}
		if arm.Template == nil {
			return nil, fmt.Errorf("arm %s: no Deployment labelled %s=%s in %s", arm.Name, events.LabelArm, arm.Name, armDir)
		}
	}
	return m, nil
}

// FromConfigMap reads a definition from an experiment ConfigMap as ConfigMap writes it: the
// experiment's name from its label, change, baseline and repeats as text, fixed, metrics, arms
// and thresholds as YAML.
func FromConfigMap(cm *corev1.ConfigMap) (*Definition, error) {
	d := map[string]any{"name": cm.Labels[events.LabelExperiment], "change": cm.Data["change"], "baseline": cm.Data["baseline"]}
	if v := cm.Data["repeats"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("experiment ConfigMap %s: repeats %q: %w", cm.Name, v, err)
		}
		d["repeats"] = n
	}
	if v := cm.Data["previous"]; v != "" {
		d["previous"] = v
	}
	for _, key := range []string{"fixed", "metrics", "arms", "thresholds"} {
		if v := cm.Data[key]; v != "" {
			var x any
			if err := yaml.Unmarshal([]byte(v), &x); err != nil {
				return nil, fmt.Errorf("experiment ConfigMap %s: %s: %w", cm.Name, key, err)
			}
			d[key] = x
		}
	}
	b, err := yaml.Marshal(d)
	if err != nil {
		return nil, err
	}
	def, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("experiment ConfigMap %s: %w", cm.Name, err)
	}
	def.Source = cm
	return def, nil
}

// podFromTemplate is one pod of a template (an arm's Deployment), labelled with the run.
func (d *Definition) podFromTemplate(t *corev1.PodTemplateSpec, armLabel, namespace string, run int, name string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: *t.ObjectMeta.DeepCopy(), Spec: *t.Spec.DeepCopy()}
	p.Name, p.Namespace = name, namespace
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[events.LabelExperiment], p.Labels[events.LabelArm], p.Labels[events.LabelRun] = d.Name, armLabel, strconv.Itoa(run)
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	if p.Annotations[kubelet.AnnotationModel] == "" {
		p.Annotations[kubelet.AnnotationModel] = d.Fixed.Model
	}
	return p
}
