package kube

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/schedlens/schedlens/internal/events"
)

// A label registry documents the node labels placement depends on: a ConfigMap labelled
// LabelRegistry whose data key LabelRegistryKey holds one YAML entry per label key
// (docs/preflight.md#label-registry):
//
//	labels: |
//	  nvidia.com/gpu.product:
//	    source: GPU feature discovery (NVIDIA GPU Operator)
//	    owner: platform-gpu@example.com
//	    meaning: the GPU model
//	    use: hard
//	  gpu-model: {source: node-pool provisioner, owner: platform, use: preference, values: [H100, A100]}
const (
	LabelRegistry    = "schedlens.io/label-registry"
	LabelRegistryKey = "labels"
)

// Uses a registry entry may name: a label meant for required rules (nodeSelector, required
// node affinity) or for preferences (preferred node affinity).
const (
	LabelUseHard       = "hard"
	LabelUsePreference = "preference"
)

// LabelDoc is the registry's entry for one node label key.
type LabelDoc = events.LabelDoc

// labelEntry is an entry as written.
type labelEntry struct {
	Source  string   `json:"source"`
	Owner   string   `json:"owner"`
	Meaning string   `json:"meaning"`
	Values  []string `json:"values"`
	Use     string   `json:"use"`
}

// IsLabelRegistry reports whether the ConfigMap is a label registry.
func IsLabelRegistry(cm *corev1.ConfigMap) bool {
	_, ok := cm.Labels[LabelRegistry]
	return ok
}

// LabelRegistryOf reads a registry ConfigMap's entries, sorted by key. Every entry must name a
// valid label key, a source and an owner, and a use of hard, preference or none; unknown fields
// are errors (a misspelt "owner" must not pass as undocumented). Entries that are wrong are
// left out and each is reported; the others are returned.
func LabelRegistryOf(cm *corev1.ConfigMap) ([]LabelDoc, []error) {
	name := cm.Namespace + "/" + cm.Name
	raw, ok := cm.Data[LabelRegistryKey]
	if !ok {
		return nil, []error{fmt.Errorf("label registry %s: no data key %q", name, LabelRegistryKey)}
	}
	var entries map[string]labelEntry
	if err := yaml.UnmarshalStrict([]byte(raw), &entries); err != nil {
		return nil, []error{fmt.Errorf("label registry %s: data.%s: %w", name, LabelRegistryKey, err)}
	}
	var out []LabelDoc
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(entries)) {
		e := entries[key]
		var problems []string
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			problems = append(problems, "not a label key: "+strings.Join(msgs, "; "))
		}
		if strings.TrimSpace(e.Source) == "" {
			problems = append(problems, "no source")
		}
		if strings.TrimSpace(e.Owner) == "" {
			problems = append(problems, "no owner")
		}
		if e.Use != "" && e.Use != LabelUseHard && e.Use != LabelUsePreference {
			problems = append(problems, fmt.Sprintf("use %q: want %s or %s", e.Use, LabelUseHard, LabelUsePreference))
		}
		if len(problems) > 0 {
			errs = append(errs, fmt.Errorf("label registry %s: %s: %s", name, key, strings.Join(problems, ", ")))
			continue
		}
		out = append(out, LabelDoc{Key: key, Source: e.Source, Owner: e.Owner, Meaning: e.Meaning, Values: e.Values, Use: e.Use, Registry: name})
	}
	return out, errs
}

// LabelRegistryEnvelope converts a label registry ConfigMap: id
// "label_registry/<namespace>/<name>/<resourceVersion>" (and "/deleted" when it went), its
// entries and the entries it could not read; occurred_at and observed_at m.Observed.
func LabelRegistryEnvelope(cm *corev1.ConfigMap, deleted bool, m Meta) (*events.Envelope, error) {
	reg := events.LabelRegistry{Namespace: cm.Namespace, Name: cm.Name, Labels: []events.LabelDoc{}, Deleted: deleted}
	if !deleted {
		docs, errs := LabelRegistryOf(cm)
		if docs != nil {
			reg.Labels = docs
		}
		for _, e := range errs {
			reg.Errors = append(reg.Errors, e.Error())
		}
	}
	id := joinID(string(events.KindLabelRegistry), cm.Namespace, cm.Name, cm.ResourceVersion) + deletedSuffix(deleted)
	env, err := envelope(events.KindLabelRegistry, id, m.Observed, nil, "", nil, &reg, m)
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return env, nil
}
