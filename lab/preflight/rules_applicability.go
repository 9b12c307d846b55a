package preflight

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// gpuKeys are node label keys that describe a GPU model, product or feature, besides any key
// containing "gpu" or "accelerator" and every nvidia.com/ key.
var gpuKeys = []string{"node.kubernetes.io/instance-type", "cloud.google.com/gke-accelerator", "karpenter.k8s.aws/instance-gpu-name"}

func isGPUKey(k string) bool {
	l := strings.ToLower(k)
	return strings.Contains(l, "gpu") || strings.Contains(l, "accelerator") || strings.HasPrefix(l, "nvidia.com/") || slices.Contains(gpuKeys, k)
}

// rulePart is one requirement of a workload's placement rules and where it is written.
type rulePart struct {
	field, how string
	req        corev1.NodeSelectorRequirement
}

// placementParts are the workload's node placement rules, one requirement each: nodeSelector
// entries (as In), then required and preferred node affinity match expressions.
func placementParts(w *Workload) []rulePart {
	spec := &w.Template.Spec
	var parts []rulePart
	for _, k := range slices.Sorted(maps.Keys(spec.NodeSelector)) {
		parts = append(parts, rulePart{w.SpecPath("nodeSelector." + k), "nodeSelector",
			corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{spec.NodeSelector[k]}}})
	}
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		na := spec.Affinity.NodeAffinity
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			for i, t := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				for j, e := range t.MatchExpressions {
					parts = append(parts, rulePart{w.SpecPath(fmt.Sprintf("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%d].matchExpressions[%d]", i, j)), "required", e})
				}
			}
		}
		for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			for j, e := range t.Preference.MatchExpressions {
				parts = append(parts, rulePart{w.SpecPath(fmt.Sprintf("affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%d].preference.matchExpressions[%d]", i, j)),
					fmt.Sprintf("preferred, weight %d", t.Weight), e})
			}
		}
	}
	return parts
}

// hard reports whether the requirement must hold (nodeSelector, required affinity).
func (p rulePart) hard() bool { return !strings.HasPrefix(p.how, "preferred") }

// applicability: for each rule keyed on a GPU label, the pools where it applies (info) and the
// GPU pools that lack the label (warning).
func (ch *checker) applicability(w *Workload) {
	parts := placementParts(w)
	pools := ch.c.Pools()
	for _, part := range parts {
		if !isGPUKey(part.req.Key) {
			continue
		}
		var applies, lacking []string
		for _, pool := range pools {
			gpu, has, matches := false, false, false
			for _, n := range pool.Nodes {
				if nodeModel(n) != "" {
					gpu = true
				}
				if _, ok := n.Labels[part.req.Key]; ok {
					has = true
				}
				sel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{part.req}}}}
				if ok, _ := corev1helpers.MatchNodeSelectorTerms(n, sel); ok {
					matches = true
				}
			}
			desc := fmt.Sprintf("%s (%s%s)", pool.Name, plural(len(pool.Nodes), "node"), modelSuffix(pool))
			if matches {
				applies = append(applies, desc)
			}
			if gpu && !has {
				lacking = append(lacking, desc)
			}
		}
		rule := fmt.Sprintf("%s %s", part.how, renderRequirement(part.req))
		where := "applies on no pool"
		if len(applies) > 0 {
			where = "applies on " + strings.Join(applies, ", ")
		}
		ch.f.add(RuleApplicability, Info, w.Object, part.field, fmt.Sprintf("%s %s", rule, where), "", "")
		if len(lacking) > 0 {
			effect := "these pods never run there"
			if strings.HasPrefix(part.how, "preferred") {
				effect = "the preference does not distinguish their nodes"
			}
			ch.f.add(RuleApplicability, Warning, w.Object, part.field,
				fmt.Sprintf("%s: GPU pools %s lack the label %s, so the strategy does not apply there (%s)", rule, strings.Join(lacking, ", "), part.req.Key, effect), "", "")
		}
	}
}

func modelSuffix(p Pool) string {
	for _, n := range p.Nodes {
		if m := nodeModel(n); m != "" {
			return ", " + m
		}
	}
	return ""
}
