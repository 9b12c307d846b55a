package preflight

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// affinity: required rules that match no node or no node with enough GPUs; preferred terms
// that change nothing; taints that leave no node.
func (ch *checker) affinity(w *Workload) {
	p := ch.place(w)
	spec := &w.Template.Spec
	var na *corev1.NodeAffinity
	if spec.Affinity != nil {
		na = spec.Affinity.NodeAffinity
	}
	required := na != nil && na.RequiredDuringSchedulingIgnoredDuringExecution != nil
	if len(p.affinity) == 0 && (required || len(spec.NodeSelector) > 0) {
		ch.f.add(RuleAffinityUnsatisfiable, "", w.Object, ch.ruleField(w), "no node matches "+ch.explainRequired(spec), "", "")
	} else if len(p.affinity) > 0 && len(p.fit) == 0 && p.resource != "" && ch.c.advertised()[p.resource] > 0 {
		var short []string
		for _, n := range p.affinity {
			a := allocatable(n, p.resource)
			why := fmt.Sprintf("%s has %d (short %d)", n.Name, a, p.count-a)
			if n.Spec.Unschedulable {
				why = n.Name + " is cordoned"
			}
			short = append(short, why)
			if len(short) == 6 {
				short = append(short, fmt.Sprintf("and %d more", len(p.affinity)-6))
				break
			}
		}
		ch.f.add(RuleAffinityUnsatisfiable, "", w.Object, w.SpecPath(fmt.Sprintf("containers[%d].resources", max(gpuContainer(spec), 0))),
			fmt.Sprintf("one replica needs %d %s, and no matching node has that many allocatable: %s", p.count, p.resource, strings.Join(short, "; ")), "", "")
	}
	if len(p.fit) > 0 && len(p.candidates) == 0 {
		taints := map[string][]string{}
		for _, n := range p.fit {
			t, _ := untoleratedTaint(p.pod, n)
			s := t.ToString()
			taints[s] = append(taints[s], n.Name)
		}
		var parts []string
		for _, t := range slices.Sorted(maps.Keys(taints)) {
			parts = append(parts, fmt.Sprintf("%s on %s", t, strings.Join(taints[t], ", ")))
		}
		ch.f.add(RuleTaintUntolerated, "", w.Object, w.SpecPath("tolerations"),
			"the only nodes that satisfy the GPU request and affinity are tainted: "+strings.Join(parts, "; "), "",
			"tolerate the taint (e.g. tolerations: [{key: "+firstKey(p)+", operator: Exists, effect: NoSchedule}]) or target untainted nodes")
	}
	if na == nil {
		return
	}
	for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		field := w.SpecPath(fmt.Sprintf("affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%d]", i))
		missing := false
		for j, e := range term.Preference.MatchExpressions {
			if !ch.anyNodeHasKey(e.Key) {
				missing = true
				ch.f.add(RuleAffinityPreferredNoop, "", w.Object, fmt.Sprintf("%s.preference.matchExpressions[%d]", field, j),
					fmt.Sprintf("preferred term (weight %d) on %s: no node carries the label %s", term.Weight, renderRequirement(e), e.Key), "", "")
			}
		}
		if missing {
			continue
		}
		matched := false
		for _, n := range ch.c.Nodes {
			if ok, _ := corev1helpers.MatchNodeSelectorTerms(n, &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term.Preference}}); ok {
				matched = true
				break
			}
		}
		if !matched {
			ch.f.add(RuleAffinityPreferredNoop, "", w.Object, field,
				fmt.Sprintf("preferred term (weight %d) %s matches no node", term.Weight, renderTerm(term.Preference)), "", "")
		}
	}
}

func firstKey(p *placement) string {
	if len(p.fit) > 0 {
		if t, ok := untoleratedTaint(p.pod, p.fit[0]); ok {
			return t.Key
		}
	}
	return "<key>"
}

// ruleField is where the required rules are: the required node affinity, else the nodeSelector.
func (ch *checker) ruleField(w *Workload) string {
	spec := &w.Template.Spec
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil && spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		return w.SpecPath("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution")
	}
	return w.SpecPath("nodeSelector")
}

// explainRequired renders the nodeSelector and required terms with the values nodes carry for
// their keys.
func (ch *checker) explainRequired(spec *corev1.PodSpec) string {
	var parts []string
	keys := map[string]bool{}
	if len(spec.NodeSelector) > 0 {
		var sel []string
		for _, k := range slices.Sorted(maps.Keys(spec.NodeSelector)) {
			sel = append(sel, k+"="+spec.NodeSelector[k])
			keys[k] = true
		}
		parts = append(parts, "nodeSelector "+strings.Join(sel, ","))
	}
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil && spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		var terms []string
		for _, t := range spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			terms = append(terms, renderTerm(t))
			for _, e := range t.MatchExpressions {
				keys[e.Key] = true
			}
		}
		parts = append(parts, "required affinity "+strings.Join(terms, " OR "))
	}
	var vals []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		vals = append(vals, ch.labelValues(k))
	}
	return strings.Join(parts, " and ") + ": " + strings.Join(vals, "; ")
}

func (ch *checker) anyNodeHasKey(key string) bool {
	for _, n := range ch.c.Nodes {
		if _, ok := n.Labels[key]; ok {
			return true
		}
	}
	return false
}

func renderTerm(t corev1.NodeSelectorTerm) string {
	var parts []string
	for _, e := range t.MatchExpressions {
		parts = append(parts, renderRequirement(e))
	}
	for _, f := range t.MatchFields {
		parts = append(parts, renderRequirement(f))
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

func renderRequirement(e corev1.NodeSelectorRequirement) string {
	switch e.Operator {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		return e.Key + " " + string(e.Operator)
	}
	return fmt.Sprintf("%s %s [%s]", e.Key, e.Operator, strings.Join(e.Values, ","))
}
