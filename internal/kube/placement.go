package kube

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/schedlens/schedlens/internal/events"
)

// PlacementOf summarises placement rules; nil when the pod has none worth naming (no selector,
// affinity, priority class, non-zero priority, non-default preemption policy or toleration).
// The rendering rules are in the package doc.
func PlacementOf(pod *corev1.Pod) *events.Placement {
	spec := &pod.Spec
	p := &events.Placement{
		NodeSelector:  cloneMap(spec.NodeSelector),
		PriorityClass: spec.PriorityClassName,
		Tolerations:   tolerations(spec.Tolerations),
	}
	if a := spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil {
			if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
				for _, term := range req.NodeSelectorTerms {
					p.Required = append(p.Required, nodeSelectorTerm(term))
				}
			}
			for _, pref := range na.PreferredDuringSchedulingIgnoredDuringExecution {
				p.Preferred = append(p.Preferred, strconv.Itoa(int(pref.Weight))+": "+nodeSelectorTerm(pref.Preference))
			}
		}
		if pa := a.PodAffinity; pa != nil {
			p.PodAffinity = len(pa.RequiredDuringSchedulingIgnoredDuringExecution) + len(pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			p.PodAntiAffinity = len(pa.RequiredDuringSchedulingIgnoredDuringExecution) + len(pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	if spec.Priority != nil && (spec.PriorityClassName != "" || *spec.Priority != 0) {
		prio := *spec.Priority
		p.Priority = &prio
	}
	if spec.PreemptionPolicy != nil && *spec.PreemptionPolicy != corev1.PreemptLowerPriority {
		p.PreemptionPolicy = string(*spec.PreemptionPolicy)
	}
	if len(p.NodeSelector) == 0 && len(p.Required) == 0 && len(p.Preferred) == 0 &&
		p.PodAffinity == 0 && p.PodAntiAffinity == 0 && p.PriorityClass == "" && p.Priority == nil &&
		p.PreemptionPolicy == "" && len(p.Tolerations) == 0 {
		return nil
	}
	return p
}

// nodeSelectorTerm renders one term: its requirements ANDed, matchExpressions first.
func nodeSelectorTerm(term corev1.NodeSelectorTerm) string {
	parts := make([]string, 0, len(term.MatchExpressions)+len(term.MatchFields))
	for _, r := range term.MatchExpressions {
		parts = append(parts, requirement(r))
	}
	for _, r := range term.MatchFields {
		parts = append(parts, requirement(r))
	}
	if len(parts) == 0 {
		return "(empty term)" // matches no node
	}
	return strings.Join(parts, " && ")
}

func requirement(r corev1.NodeSelectorRequirement) string {
	switch r.Operator {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		return r.Key + " " + string(r.Operator)
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		return r.Key + " " + string(r.Operator) + " " + strings.Join(r.Values, ",")
	default:
		return r.Key + " " + string(r.Operator) + " (" + strings.Join(r.Values, ",") + ")"
	}
}

// tolerations renders a pod's tolerations, sorted (admission plugins and webhooks append them in
// no particular order), without the two every pod gets from DefaultTolerationSeconds.
func tolerations(tols []corev1.Toleration) []string {
	var out []string
	for _, t := range tols {
		if defaultToleration(t) {
			continue
		}
		key := t.Key
		if key == "" {
			key = "*"
		}
		op := t.Operator
		if op == "" {
			op = corev1.TolerationOpEqual
		}
		s := key + " " + string(op)
		if t.Value != "" {
			s += " " + t.Value
		}
		if t.Effect != "" {
			s += ":" + string(t.Effect)
		}
		if t.TolerationSeconds != nil {
			s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func defaultToleration(t corev1.Toleration) bool {
	return (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable) &&
		t.Operator == corev1.TolerationOpExists && t.Value == "" &&
		t.Effect == corev1.TaintEffectNoExecute &&
		t.TolerationSeconds != nil && *t.TolerationSeconds == 300
}
