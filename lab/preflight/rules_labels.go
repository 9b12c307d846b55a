package preflight

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/schedlens/schedlens/internal/kube"
)

// registry is the label registry the check reads: the cluster's ConfigMaps, then the
// manifests' (an entry of the manifests replaces the cluster's for the same key).
func (ch *checker) registry() map[string]kube.LabelDoc {
	out := map[string]kube.LabelDoc{}
	for _, d := range ch.c.Labels {
		out[d.Key] = d
	}
	for _, r := range ch.in.LabelRegistries {
		for _, d := range r.Docs {
			out[d.Key] = d
		}
	}
	return out
}

// hasRegistry reports whether any label registry exists, documented entries or not.
func (ch *checker) hasRegistry() bool { return ch.c.Registries > 0 || len(ch.in.LabelRegistries) > 0 }

// labels: the placement rules' node labels against the registry and the nodes — a label the
// registry lacks (when there is one), a label registered as a preference used as a hard rule or
// registered as hard used only as a preference (the seed's rule: hard limits in required
// affinity, preferences in preferred), and values no node carries.
func (ch *checker) labels(w *Workload) {
	parts := placementParts(w)
	if len(parts) == 0 {
		return
	}
	reg := ch.registry()
	hardUse := map[string]bool{}
	for _, p := range parts {
		if p.hard() {
			hardUse[p.req.Key] = true
		}
	}
	reported := map[string]bool{}
	for _, p := range parts {
		key := p.req.Key
		doc, documented := reg[key]
		switch {
		case !documented && ch.hasRegistry() && !reported["undocumented "+key]:
			reported["undocumented "+key] = true
			ch.f.add(RuleLabelUndocumented, "", w.Object, p.field,
				fmt.Sprintf("%s rule on node label %s, which the label registry does not document (no source, no owner)", p.how, key), "", "")
		case documented && doc.Use == kube.LabelUsePreference && p.hard():
			ch.f.add(RuleLabelPreferenceRequired, "", w.Object, p.field,
				fmt.Sprintf("%s rule on node label %s, which the registry (%s, owner %s) names a preference: it would filter nodes out instead of ranking them",
					p.how, key, doc.Registry, doc.Owner), "", "")
		case documented && doc.Use == kube.LabelUseHard && !p.hard() && !hardUse[key] && !reported["hard "+key]:
			reported["hard "+key] = true
			ch.f.add(RuleLabelPreferenceRequired, "", w.Object, p.field,
				fmt.Sprintf("%s rule on node label %s, which the registry (%s, owner %s) names a hard limit, but no required rule uses it: pods may land where the limit does not hold",
					p.how, key, doc.Registry, doc.Owner), "", "")
		}
		ch.unknownValues(w, p, doc, documented)
	}
}

// unknownValues: the values of an In or NotIn requirement (or a nodeSelector entry) that no node
// carries, when some node carries the key and another value of it (a requirement that matches
// nothing at all is affinity-unsatisfiable's or affinity-preferred-noop's).
func (ch *checker) unknownValues(w *Workload, p rulePart, doc kube.LabelDoc, documented bool) {
	if p.req.Operator != corev1.NodeSelectorOpIn && p.req.Operator != corev1.NodeSelectorOpNotIn {
		return
	}
	carried := map[string]bool{}
	for _, n := range ch.c.Nodes {
		if v, ok := n.Labels[p.req.Key]; ok {
			carried[v] = true
		}
	}
	var unknown []string
	known := false
	for _, v := range p.req.Values {
		if carried[v] {
			known = true
		} else {
			unknown = append(unknown, v)
		}
	}
	if len(unknown) == 0 || !known {
		return
	}
	msg := fmt.Sprintf("%s %s %s %v: no node carries %s=%s (nodes carry %s)", p.how, p.req.Key, p.req.Operator, p.req.Values,
		p.req.Key, strings.Join(unknown, ", "), strings.Join(slices.Sorted(maps.Keys(carried)), ", "))
	if documented && len(doc.Values) > 0 {
		var undocumented []string
		for _, v := range unknown {
			if !slices.Contains(doc.Values, v) {
				undocumented = append(undocumented, v)
			}
		}
		if len(undocumented) > 0 {
			msg += fmt.Sprintf("; the registry lists %s", strings.Join(doc.Values, ", "))
		} else {
			msg += "; the registry lists it, but no node has it now"
		}
	}
	ch.f.add(RuleLabelValueUnknown, "", w.Object, p.field, msg, "", "")
}
