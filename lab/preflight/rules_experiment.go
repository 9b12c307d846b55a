package preflight

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/lab/kubelet"
)

// experiment: an experiment ConfigMap without rollback conditions (thresholds, a baseline arm),
// or whose arms' workloads differ in more than the declared change.
func (ch *checker) experiment(e *ExperimentConfig) {
	exp := kube.ExperimentOf(e.ConfigMap, events.DefaultLabelKeys)
	for _, msg := range exp.Errors {
		key, _, _ := strings.Cut(msg, ":")
		if key == "fixed" {
			continue // the seed's `fixed: "image, model, input"` names what is fixed: read below
		}
		ch.f.add(RuleExperimentNoRollback, Error, e.Object, "data."+key, "experiment "+exp.Name+": "+msg,
			"schedlens cannot read this key: the comparison goes without it", "write the value as the key expects (YAML or JSON)")
	}
	if len(exp.Thresholds) == 0 {
		ch.f.add(RuleExperimentNoRollback, Warning, e.Object, "data",
			fmt.Sprintf("experiment %s defines no thresholds: nothing says when to roll the change back", exp.Name), "",
			`add data.thresholds, e.g. thresholds: '{"p95_latency_ms": 800, "error_rate": 0.01}'`)
	}
	arms := ch.experimentArms(exp)
	baseline := exp.Baseline
	if baseline == "" && arms["control"] != nil {
		baseline = "control"
	}
	if baseline == "" {
		ch.f.add(RuleExperimentNoRollback, Warning, e.Object, "data",
			fmt.Sprintf("experiment %s names no baseline and has no control arm: there is nothing to compare against or roll back to", exp.Name), "",
			"add data.baseline naming the control arm, and label its pods schedlens.io/arm=<that arm>")
	} else if len(arms) > 0 && arms[baseline] == nil {
		ch.f.add(RuleExperimentNoRollback, Warning, e.Object, "data.baseline",
			fmt.Sprintf("experiment %s: no workload in the manifests serves the baseline arm %s", exp.Name, baseline), "",
			"label the control workload's pods schedlens.io/arm="+baseline)
	}
	if baseline == "" || arms[baseline] == nil {
		return
	}
	fixed, dims := fixedOf(e.ConfigMap.Data["fixed"])
	ignore := changedFields(exp.Change)
	base := arms[baseline]
	for _, name := range slices.Sorted(maps.Keys(arms)) {
		w := arms[name]
		var diffs []string
		if img, ok := fixed["image"].(string); ok {
			for _, c := range w.Template.Spec.Containers {
				if c.Image != img && gpuContainer(&w.Template.Spec) >= 0 && c.Name == w.Template.Spec.Containers[gpuContainer(&w.Template.Spec)].Name {
					diffs = append(diffs, fmt.Sprintf("image %s, but fixed.image is %s", c.Image, img))
				}
			}
		}
		if w == base {
			if len(diffs) > 0 {
				ch.f.add(RuleExperimentNoRollback, Error, w.Object, w.SpecPath("containers"),
					fmt.Sprintf("experiment %s arm %s: %s", exp.Name, name, strings.Join(diffs, "; ")), "the arms must run what the experiment declares fixed", "")
			}
			continue
		}
		if dims["model"] || fixed["model"] != nil {
			if a, b := modelOf(base), modelOf(w); a != b {
				diffs = append(diffs, fmt.Sprintf("model %q vs %q", b, a))
			}
		}
		if !ignore["replicas"] && w.Replicas != base.Replicas {
			diffs = append(diffs, fmt.Sprintf("replicas %d vs %d", w.Replicas, base.Replicas))
		}
		diffs = append(diffs, specDiff(base, w, ignore)...)
		ch.claimSharing(exp, name, baseline, w, base, ignore["gpu"])
		if len(diffs) == 0 {
			continue
		}
		ch.f.add(RuleExperimentNoRollback, Error, w.Object, w.TemplatePath,
			fmt.Sprintf("experiment %s arm %s differs from baseline %s in more than the declared change (%q): %s",
				exp.Name, name, baseline, exp.Change, listSome(diffs, 6)),
			"the comparison would measure these differences too, not only the change", "make the arm's pod template equal to the baseline's outside the change")
	}
}

// experimentArms maps each arm of the experiment to its first workload in the manifests; when
// the ConfigMap lists arms, only those.
func (ch *checker) experimentArms(exp events.Experiment) map[string]*Workload {
	declared := map[string]bool{}
	for _, name := range exp.ArmNames() {
		declared[name] = true
	}
	out := map[string]*Workload{}
	for _, w := range ch.in.Workloads {
		e, arm := w.Experiment()
		if e != exp.Name || arm == "" || out[arm] != nil {
			continue
		}
		if len(declared) > 0 && !declared[arm] || len(declared) == 0 && w.Group() != arm {
			continue
		}
		out[arm] = w
	}
	return out
}

// fixedOf reads the ConfigMap's fixed key: an object of fixed values (the lab's definitions),
// or a list of what is fixed ("image, model, input", as the seed writes it).
func fixedOf(raw string) (map[string]any, map[string]bool) {
	dims := map[string]bool{}
	var v any
	if err := yaml.Unmarshal([]byte(raw), &v); err == nil {
		if m, ok := v.(map[string]any); ok {
			for k := range m {
				dims[k] = true
			}
			return m, dims
		}
	}
	for _, d := range strings.Split(raw, ",") {
		if d = strings.ToLower(strings.TrimSpace(d)); d != "" {
			dims[d] = true
		}
	}
	return map[string]any{}, dims
}

// changedFields are the pod spec fields the declared change covers, from its words.
func changedFields(change string) map[string]bool {
	c := strings.ToLower(change)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(c, w) {
				return true
			}
		}
		return false
	}
	out := map[string]bool{}
	placement := has("placement")
	if placement || has("affinity", "nodeselector", "node selector") {
		out["affinity.nodeAffinity"], out["nodeSelector"] = true, true
	}
	if placement || has("anti-affinity", "pod affinity", "podaffinity") {
		out["affinity.podAffinity"], out["affinity.podAntiAffinity"] = true, true
	}
	if placement || has("priority", "preemption") {
		out["priorityClassName"], out["priority"], out["preemptionPolicy"] = true, true, true
	}
	if placement || has("toleration", "taint") {
		out["tolerations"] = true
	}
	if placement || has("spread", "topology") {
		out["topologySpreadConstraints"] = true
	}
	if has("sharing", "time-slic", "mig", "mps") {
		out["gpu"] = true // GPU resource names and tolerations of nvidia.com/ taints
	}
	if has("gate", "admission", "queue") {
		out["schedulingGates"] = true // Kueue-style admission holds pods behind a gate
	}
	if has("image") {
		out["image"] = true
	}
	if has("replica") {
		out["replicas"] = true
	}
	return out
}

// specDiff lists the leaves of two pod specs that differ outside the ignored fields.
func specDiff(a, b *Workload, ignore map[string]bool) []string {
	fa, fb := flatSpec(a, ignore), flatSpec(b, ignore)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(fa)) {
		if vb, ok := fb[k]; !ok {
			out = append(out, fmt.Sprintf("%s %s vs unset", k, fa[k]))
		} else if vb != fa[k] {
			out = append(out, fmt.Sprintf("%s %s vs %s", k, vb, fa[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fb)) {
		if _, ok := fa[k]; !ok {
			out = append(out, fmt.Sprintf("%s %s vs unset", k, fb[k]))
		}
	}
	return out
}

func flatSpec(w *Workload, ignore map[string]bool) map[string]string {
	spec := w.Template.Spec.DeepCopy()
	if ignore["gpu"] {
		for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for i := range cs {
				for _, l := range []corev1.ResourceList{cs[i].Resources.Requests, cs[i].Resources.Limits} {
					for r := range l {
						if kube.IsGPUResource(r) {
							delete(l, r)
						}
					}
				}
			}
		}
		spec.Tolerations = slices.DeleteFunc(spec.Tolerations, func(t corev1.Toleration) bool { return strings.HasPrefix(t.Key, "nvidia.com/") })
		spec.ResourceClaims = nil // DRA's way of asking for GPUs
		// Node labels GPU feature discovery sets (product, sharing strategy, MIG) select the
		// GPU and its sharing on the device-plugin path.
		for k := range spec.NodeSelector {
			if strings.HasPrefix(k, "nvidia.com/") {
				delete(spec.NodeSelector, k)
			}
		}
		if a := spec.Affinity; a != nil && a.NodeAffinity != nil {
			gpuLabel := func(r corev1.NodeSelectorRequirement) bool { return strings.HasPrefix(r.Key, "nvidia.com/") }
			if req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
				for i := range req.NodeSelectorTerms {
					req.NodeSelectorTerms[i].MatchExpressions = slices.DeleteFunc(req.NodeSelectorTerms[i].MatchExpressions, gpuLabel)
				}
				req.NodeSelectorTerms = slices.DeleteFunc(req.NodeSelectorTerms, func(t corev1.NodeSelectorTerm) bool {
					return len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0
				})
				if len(req.NodeSelectorTerms) == 0 {
					a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
				}
			}
			a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = slices.DeleteFunc(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
				func(t corev1.PreferredSchedulingTerm) bool {
					t.Preference.MatchExpressions = slices.DeleteFunc(t.Preference.MatchExpressions, gpuLabel)
					return len(t.Preference.MatchExpressions) == 0 && len(t.Preference.MatchFields) == 0
				})
			if a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
				a.NodeAffinity = nil
			}
		}
		for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for i := range cs {
				cs[i].Resources.Claims = nil
			}
		}
	}
	if ignore["image"] {
		for i := range spec.Containers {
			spec.Containers[i].Image = ""
		}
	}
	b, _ := json.Marshal(spec)
	var v any
	_ = json.Unmarshal(b, &v)
	out := map[string]string{}
	flatten("", v, ignore, out)
	return out
}

func flatten(path string, v any, ignore map[string]bool, out map[string]string) {
	if ignore[path] {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			flatten(p, x, ignore, out)
		}
	case []any:
		for i, x := range v {
			flatten(fmt.Sprintf("%s[%d]", path, i), x, ignore, out)
		}
	default:
		b, _ := json.Marshal(v)
		out[path] = string(b)
	}
}

// modelOf is the model a workload serves: the lab's model annotation, schedlens.io/model, or
// a MODEL… environment variable of its GPU container.
func modelOf(w *Workload) string {
	for _, k := range []string{kubelet.AnnotationModel, "schedlens.io/model"} {
		if v := w.Template.Annotations[k]; v != "" {
			return v
		}
	}
	if i := gpuContainer(&w.Template.Spec); i >= 0 {
		for _, e := range w.Template.Spec.Containers[i].Env {
			if n := strings.ToUpper(e.Name); n == "MODEL" || n == "MODEL_NAME" || n == "MODEL_ID" {
				return e.Value
			}
		}
	}
	return ""
}
