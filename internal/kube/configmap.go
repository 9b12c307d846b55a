package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/schedlens/schedlens/internal/events"
)

// Keys of an experiment ConfigMap's data.
const (
	keyName       = "name"
	keyChange     = "change"
	keyFixed      = "fixed"
	keyMetrics    = "metrics"
	keyRepeats    = "repeats"
	keyBaseline   = "baseline"
	keyArms       = "arms"
	keyThresholds = "thresholds"
	keyMargins    = "margins"
	keyAlpha      = "alpha"
	keyPrevious   = "previous" // the experiment whose record this one's chains to (docs/records.md)
)

// defaultBaseline is the arm compared against when the ConfigMap names none and an arm has it.
const defaultBaseline = "control"

// ExperimentOf reads an experiment definition from its ConfigMap. The name is the keys.Experiment
// label, else data "name", else the ConfigMap's name. Structured values are YAML or JSON and come
// out as JSON decodes them (objects map[string]any, lists []any, numbers float64), so the payload
// is the same before and after the wire; "metrics" and "arms" may also be comma-separated lists,
// "fixed" an object, a list or prose. "margins" is an object, "alpha" a number in (0, 1) (0: the
// default). A value that cannot be read is kept raw where its field allows, and named in Errors
// ("repeats: …"): the definition is still published.
func ExperimentOf(cm *corev1.ConfigMap, keys events.LabelKeys) events.Experiment {
	data := cm.Data
	exp := events.Experiment{Name: cm.Name, Change: strings.TrimSpace(data[keyChange])}
	if v := strings.TrimSpace(data[keyName]); v != "" {
		exp.Name = v
	}
	if v := cm.Labels[keys.Experiment]; keys.Experiment != "" && v != "" {
		exp.Name = v
	}
	fail := func(key, format string, args ...any) {
		exp.Errors = append(exp.Errors, key+": "+fmt.Sprintf(format, args...))
	}

	if raw, ok := present(data, keyFixed); ok {
		v, err := parseYAML(raw)
		switch prose := v.(type) {
		case map[string]any, []any:
			err = retype(v, &exp.Fixed)
		case string:
			exp.Fixed = &events.Workload{Text: prose} // as the seed writes it
		default:
			err = fmt.Errorf("want a YAML or JSON object or list, or prose: %s", whyNot(v, err))
		}
		if err != nil {
			exp.Fixed = &events.Workload{Text: raw}
			fail(keyFixed, "%v", err)
		}
	}
	if raw, ok := present(data, keyMetrics); ok {
		v, err := parseList(raw)
		if err == nil {
			err = retype(v, &exp.Metrics)
		}
		if err != nil {
			_ = retype(raw, &exp.Metrics) // kept as written (a string reads as comma-separated words)
			fail(keyMetrics, "%v", err)
		}
	}
	if raw, ok := present(data, keyRepeats); ok {
		n, err := strconv.Atoi(raw)
		switch {
		case err == nil && n > events.MaxCount:
			fail(keyRepeats, "want at most %d, got %q", events.MaxCount, raw)
		case err != nil || n < 0:
			fail(keyRepeats, "want a non-negative integer, got %q", raw)
		default:
			exp.Repeats = n
		}
	}
	if raw, ok := present(data, keyArms); ok {
		v, err := parseList(raw)
		if err == nil {
			err = retype(v, &exp.Arms)
		}
		if err != nil {
			// Kept as it was written, beside the fields the definition understands.
			exp.Arms = nil
			exp.Extra = map[string]json.RawMessage{keyArms: mustJSON(raw)}
			fail(keyArms, "%v", err)
		}
	}
	exp.Baseline = strings.TrimSpace(data[keyBaseline])
	if exp.Baseline == "" && slices.Contains(exp.ArmNames(), defaultBaseline) {
		exp.Baseline = defaultBaseline
	}
	if raw, ok := present(data, keyThresholds); ok {
		v, err := parseYAML(raw)
		if m, isObject := v.(map[string]any); err != nil || !isObject {
			fail(keyThresholds, "want a YAML or JSON object: %s", whyNot(v, err))
		} else if len(m) > 0 {
			exp.Thresholds = m
		}
	}
	if raw, ok := present(data, keyMargins); ok {
		v, err := parseYAML(raw)
		if m, isObject := v.(map[string]any); err != nil || !isObject {
			fail(keyMargins, "want a YAML or JSON object: %s", whyNot(v, err))
		} else if len(m) > 0 {
			exp.Margins = m
		}
	}
	if raw, ok := present(data, keyAlpha); ok {
		v, err := parseYAML(raw)
		if a, isNumber := v.(float64); err == nil && isNumber && a >= 0 && a < 1 {
			exp.Alpha = a
		} else {
			fail(keyAlpha, "want a number in (0, 1), got %q", raw)
		}
	}
	if raw, ok := present(data, keyPrevious); ok {
		// Passed through as a key the definition does not type (the record reads it).
		if exp.Extra == nil {
			exp.Extra = map[string]json.RawMessage{}
		}
		exp.Extra[keyPrevious] = mustJSON(raw)
	}
	return exp
}

// ExperimentEnvelope converts an experiment ConfigMap: id "experiment/<namespace>/<name>/<resourceVersion>",
// occurred_at and observed_at m.Observed, experiment ref {name}, no pod.
func ExperimentEnvelope(cm *corev1.ConfigMap, m Meta) (*events.Envelope, error) {
	exp := ExperimentOf(cm, m.Labels)
	id := joinID(string(events.KindExperiment), cm.Namespace, cm.Name, cm.ResourceVersion)
	env, err := envelope(events.KindExperiment, id, m.Observed, nil, "", &events.ExperimentRef{Name: exp.Name}, &exp, m)
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return env, nil
}

// present returns a data value, trimmed, and whether it says anything.
func present(data map[string]string, key string) (string, bool) {
	v := strings.TrimSpace(data[key])
	return v, v != ""
}

// parseYAML reads YAML (JSON included) the way JSON decodes it. Two keys of one mapping that
// are the same once written as text (0 and 0.0, 1 and "1") are an error: the conversion keeps
// one of them, and which one changes from run to run (found by FuzzExperimentOf).
func parseYAML(raw string) (any, error) {
	var v any
	if err := yaml.Unmarshal([]byte(raw), &v); err != nil {
		return nil, err
	}
	var typed any // the same document with its keys as YAML typed them
	if err := yamlv2.Unmarshal([]byte(raw), &typed); err == nil && entries(typed) != entries(v) {
		return nil, errors.New("two keys of a mapping read as the same text (such as 0 and 0.0)")
	}
	return v, nil
}

// entries counts the keys of every mapping in a parsed document, YAML's or JSON's.
func entries(v any) int {
	n := 0
	switch v := v.(type) {
	case map[any]any:
		for _, e := range v {
			n += 1 + entries(e)
		}
	case map[string]any:
		for _, e := range v {
			n += 1 + entries(e)
		}
	case []any:
		for _, e := range v {
			n += entries(e)
		}
	}
	return n
}

// parseList reads a YAML or JSON list, kept as parsed, or a comma-separated list of names.
func parseList(raw string) ([]any, error) {
	v, err := parseYAML(raw)
	if list, ok := v.([]any); ok {
		return list, nil
	}
	if _, ok := v.(map[string]any); ok {
		return nil, fmt.Errorf("want a list, got an object")
	}
	if err != nil && strings.ContainsAny(raw[:1], "[{-") {
		return nil, err // meant as YAML or JSON, but broken: do not read it as names
	}
	out := []any{} // "," is an empty list, not null on the wire (found by FuzzExperimentOf)
	for _, item := range strings.Split(raw, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out, nil
}

// retype turns a parsed YAML value into a typed field through its JSON form, the way the
// definition travels.
func retype(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// whyNot says why a parsed value is not an object.
func whyNot(v any, err error) string {
	if err != nil {
		return err.Error()
	}
	switch v.(type) {
	case []any:
		return "got a list"
	case string:
		return "got a string"
	case float64:
		return "got a number"
	case bool:
		return "got a boolean"
	case nil:
		return "got null"
	default:
		return fmt.Sprintf("got %T", v)
	}
}
