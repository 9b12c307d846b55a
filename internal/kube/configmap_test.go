package kube_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

func configMaps(t *testing.T) map[string]*corev1.ConfigMap {
	t.Helper()
	var list corev1.ConfigMapList
	readJSON(t, "configmaps.derived.json", &list)
	out := map[string]*corev1.ConfigMap{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

func TestExperimentOf(t *testing.T) {
	cms := configMaps(t)
	tests := []struct {
		configMap string
		edit      func(*corev1.ConfigMap)
		want      events.Experiment
	}{
		{
			configMap: "day20-experiment",
			want: events.Experiment{
				Name:   "day20", // the schedlens.io/experiment label
				Change: "required node affinity and PriorityClass preemption for GPU inference pods",
				Fixed: &events.Workload{
					Model: "llama-3-8b", Image: "nvcr.io/nvidia/tritonserver:25.01-py3",
					// keys the definition does not know, kept as they came
					Extra: map[string]json.RawMessage{"nodes": json.RawMessage("6"), "gpus_per_node": json.RawMessage("2")},
				},
				Metrics: &events.Words{List: []string{"pending", "time_to_first_success", "preemptions"}}, // a YAML list
				Repeats: 3,
				// Not set in the ConfigMap: "control" because an arm has that name.
				Baseline: "control",
				Arms: []events.ArmSpec{{Name: "control", Bare: true}, {Name: "affinity", Bare: true}, {Name: "priority", Bare: true},
					{Name: "background", Bare: true}, {Name: "oversized", Bare: true}}, // comma-separated
				Thresholds: map[string]any{"pending_p50_ms": 500.0, "error_rate": 0.01}, // JSON
			},
		},
		{
			configMap: "day21-experiment",
			want: events.Experiment{
				Name:    "day21", // the label is empty: data "name"
				Change:  "MPS instead of time-slicing",
				Fixed:   &events.Workload{Text: "{model: llama-3-8b, gpu: A100"}, // kept raw
				Metrics: &events.Words{List: []string{"pending", "ttfs", "restarts"}},
				Arms: []events.ArmSpec{
					{Name: "time-slicing", Extra: map[string]json.RawMessage{"sharing": json.RawMessage(`"time-slicing"`)}},
					{Name: "mps", Extra: map[string]json.RawMessage{"sharing": json.RawMessage(`"mps"`)}},
				},
				// No arm named control and none named as baseline: no baseline.
				Errors: []string{
					"fixed: want a YAML or JSON object or list, or prose: error converting YAML to JSON: yaml: line 1: did not find expected ',' or '}'",
					`repeats: want a non-negative integer, got "three"`,
					"thresholds: want a YAML or JSON object: got a list",
				},
			},
		},
		{
			configMap: "day20-experiment",
			edit: func(cm *corev1.ConfigMap) {
				cm.Labels = nil
				cm.Data = map[string]string{"repeats": "-1", "metrics": "[pending,", "baseline": "affinity", "arms": "control\n", "fixed": "just words"}
			},
			want: events.Experiment{
				Name:     "day20-experiment",                   // no label, no data name: the ConfigMap's name
				Fixed:    &events.Workload{Text: "just words"}, // prose, as the seed writes it
				Metrics:  &events.Words{Text: "[pending,", List: []string{"[pending"}},
				Baseline: "affinity", // named: kept even though no arm has it
				Arms:     []events.ArmSpec{{Name: "control", Bare: true}},
				Errors: []string{
					"metrics: error converting YAML to JSON: yaml: line 1: did not find expected node content",
					`repeats: want a non-negative integer, got "-1"`,
				},
			},
		},
		{
			// Keys that are one once written as text: an error, not one of them chosen at random.
			configMap: "day20-experiment",
			edit: func(cm *corev1.ConfigMap) {
				cm.Labels = nil
				cm.Data = map[string]string{"arms": "control", "thresholds": "{1: 0.5, 1.0: 0.9}", "fixed": "{model: m, gpu: {0: a, 0.0: b}}"}
			},
			want: events.Experiment{
				Name:     "day20-experiment",
				Fixed:    &events.Workload{Text: "{model: m, gpu: {0: a, 0.0: b}}"}, // kept raw
				Baseline: "control",
				Arms:     []events.ArmSpec{{Name: "control", Bare: true}},
				Errors: []string{
					"fixed: want a YAML or JSON object or list, or prose: two keys of a mapping read as the same text (such as 0 and 0.0)",
					"thresholds: want a YAML or JSON object: two keys of a mapping read as the same text (such as 0 and 0.0)",
				},
			},
		},
		{
			// fixed as a list, like metrics; margins and alpha read.
			configMap: "day20-experiment",
			edit: func(cm *corev1.ConfigMap) {
				cm.Labels = nil
				cm.Data = map[string]string{"fixed": "- image\n- model\n- input\n", "margins": "{pending: 10%, latency_p95_ms: 50}", "alpha": "0.1"}
			},
			want: events.Experiment{
				Name:    "day20-experiment",
				Fixed:   &events.Workload{List: []string{"image", "model", "input"}},
				Margins: map[string]any{"pending": "10%", "latency_p95_ms": 50.0},
				Alpha:   0.1,
			},
		},
		{
			// previous (the experiment whose record this one's chains to) passes through, as the
			// record reads it.
			configMap: "day20-experiment",
			edit: func(cm *corev1.ConfigMap) {
				cm.Data = map[string]string{"arms": "control", "previous": " day19\n"}
			},
			want: events.Experiment{
				Name: "day20", Baseline: "control", Arms: []events.ArmSpec{{Name: "control", Bare: true}},
				Extra: map[string]json.RawMessage{"previous": json.RawMessage(`"day19"`)},
			},
		},
		{
			// Values that do not read: named in Errors, the rest of the definition kept.
			configMap: "day20-experiment",
			edit: func(cm *corev1.ConfigMap) {
				cm.Labels = nil
				cm.Data = map[string]string{"fixed": "[image, {model: m}]", "margins": "[pending]", "alpha": "2", "repeats": "3", "arms": "control, mps"}
			},
			want: events.Experiment{
				Name:     "day20-experiment",
				Fixed:    &events.Workload{Text: "[image, {model: m}]"}, // kept raw
				Repeats:  3,
				Baseline: "control",
				Arms:     []events.ArmSpec{{Name: "control", Bare: true}, {Name: "mps", Bare: true}},
				Errors: []string{
					"fixed: [1]: want a name, got an object",
					"margins: want a YAML or JSON object: got a list",
					`alpha: want a number in (0, 1), got "2"`,
				},
			},
		},
		{
			configMap: "day20-experiment",
			edit: func(cm *corev1.ConfigMap) {
				cm.Labels = nil
				cm.Data = map[string]string{"fixed": "3", "margins": "10%", "alpha": "five percent"}
			},
			want: events.Experiment{
				Name:  "day20-experiment",
				Fixed: &events.Workload{Text: "3"}, // kept raw
				Errors: []string{
					"fixed: want a YAML or JSON object or list, or prose: got a number",
					"margins: want a YAML or JSON object: got a string",
					`alpha: want a number in (0, 1), got "five percent"`,
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.configMap, func(t *testing.T) {
			cm := cms[tt.configMap].DeepCopy()
			if tt.edit != nil {
				tt.edit(cm)
			}
			if diff := cmp.Diff(tt.want, kube.ExperimentOf(cm, events.DefaultLabelKeys)); diff != "" {
				t.Errorf("ExperimentOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExperimentEnvelope(t *testing.T) {
	cms := configMaps(t)
	tests := []struct {
		configMap string
		want      head
	}{
		{"day20-experiment", head{
			ID: "experiment/ai-lab/day20-experiment/60", Kind: "experiment", Experiment: &events.ExperimentRef{Name: "day20"},
			OccurredAt: "2026-11-30T04:35:00.123456Z", ObservedAt: "2026-11-30T04:35:00.123456Z",
		}},
		{"day21-experiment", head{
			ID: "experiment/ai-lab/day21-experiment/61", Kind: "experiment", Experiment: &events.ExperimentRef{Name: "day21"},
			OccurredAt: "2026-11-30T04:35:00.123456Z", ObservedAt: "2026-11-30T04:35:00.123456Z",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.configMap, func(t *testing.T) {
			cm := cms[tt.configMap]
			env, err := kube.ExperimentEnvelope(cm, meta)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, headOf(env)); diff != "" {
				t.Errorf("envelope (-want +got):\n%s", diff)
			}
			want := kube.ExperimentOf(cm, meta.Labels)
			if diff := cmp.Diff(&want, env.Payload); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
			checkRoundTrip(t, env)
		})
	}
}
