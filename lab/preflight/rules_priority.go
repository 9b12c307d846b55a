package preflight

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/schedlens/schedlens/internal/events"
)

// priority: a PriorityClass nobody defines; a priority that would preempt protected pods.
func (ch *checker) priority(w *Workload) {
	spec := &w.Template.Spec
	prio := ch.c.defaultPriority(ch.in)
	if name := spec.PriorityClassName; name != "" {
		v, ok := ch.c.priorityClass(ch.in, name)
		if !ok {
			ch.f.add(RulePriorityUndefined, "", w.Object, w.SpecPath("priorityClassName"),
				fmt.Sprintf("PriorityClass %q is defined neither in the manifests nor in the cluster (%s)", name, ch.knownClasses()), "", "")
			return
		}
		prio = v
	}
	if spec.PreemptionPolicy != nil && *spec.PreemptionPolicy == corev1.PreemptNever {
		return
	}
	p := ch.place(w)
	if p.resource == "" || len(p.candidates) == 0 {
		return
	}
	need := int64(w.Replicas) * p.count
	cand := map[string]bool{}
	for _, n := range p.candidates {
		cand[n.Name] = true
	}
	_, free := ch.slots(w, p, p.candidates)

	// Running pods on the nodes it can use.
	if free < need {
		var victims []string
		for _, v := range ch.c.Pods {
			if !cand[v.Spec.NodeName] || ownPod(w, v) || corev1helpers.PodPriority(v) >= prio {
				continue
			}
			if why := ch.protection(v.Namespace, v.Labels); why != "" {
				victims = append(victims, fmt.Sprintf("%s/%s on %s (%s)", v.Namespace, v.Name, v.Spec.NodeName, why))
			}
		}
		if len(victims) > 0 {
			ch.f.add(RulePriorityPreempts, "", w.Object, w.SpecPath("priorityClassName"),
				fmt.Sprintf("priority %d needs %d %s on nodes with %d free: it would preempt %s", prio, need, p.resource, free, listSome(victims, 5)), "", "")
		}
	}

	// Other workloads of the manifests that would run beside it (arms of one experiment run
	// one after another, so they never compete).
	exp, arm := w.Experiment()
	for _, o := range ch.in.Workloads {
		if o == w || o.Namespace == "" {
			continue
		}
		if oexp, oarm := o.Experiment(); exp != "" && oexp == exp && o.Group() != w.Group() && oarm != arm {
			continue
		}
		op := ch.place(o)
		if op.resource != p.resource || len(op.candidates) == 0 || ch.priorityOf(o) >= prio {
			continue
		}
		why := ch.protection(o.Namespace, o.Template.Labels)
		if why == "" {
			continue
		}
		union := append(slices.Clone(p.candidates), op.candidates...)
		slices.SortFunc(union, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
		union = slices.CompactFunc(union, func(a, b *corev1.Node) bool { return a.Name == b.Name })
		overlap := false
		for _, n := range op.candidates {
			overlap = overlap || cand[n.Name]
		}
		_, freeBoth := ch.slots(nil, p, union)
		if overlap && freeBoth < need+int64(o.Replicas)*op.count {
			ch.f.add(RulePriorityPreempts, "", w.Object, w.SpecPath("priorityClassName"),
				fmt.Sprintf("priority %d: with %s (priority %d, %s) the nodes both can use have %d %s free for %d needed, so it would preempt that workload's pods",
					prio, o.Object, ch.priorityOf(o), why, freeBoth, p.resource, need+int64(o.Replicas)*op.count), "", "")
		}
	}
}

func (ch *checker) priorityOf(w *Workload) int32 {
	if name := w.Template.Spec.PriorityClassName; name != "" {
		v, _ := ch.c.priorityClass(ch.in, name)
		return v
	}
	return ch.c.defaultPriority(ch.in)
}

// protection says why pods with these labels must not be preempted: a PDB selects them, or
// they serve an experiment's baseline arm; "" when nothing protects them.
func (ch *checker) protection(namespace string, l map[string]string) string {
	match := func(sel *metav1.LabelSelector) bool { return pdbSelects(sel, l) }
	for _, p := range ch.in.PDBs {
		if p.Namespace == namespace && match(p.Spec.Selector) {
			return "PodDisruptionBudget " + p.Name
		}
	}
	for _, p := range ch.c.PDBs {
		if p.Namespace == namespace && match(p.Spec.Selector) {
			return "PodDisruptionBudget " + p.Name
		}
	}
	if exp, arm := l[events.LabelExperiment], l[events.LabelArm]; exp != "" && arm != "" && arm == ch.experimentBaseline(exp) {
		return fmt.Sprintf("experiment %s's control arm %s", exp, arm)
	}
	return ""
}

func (ch *checker) knownClasses() string {
	var names []string
	for _, pc := range ch.in.PriorityClasses {
		names = append(names, pc.Name)
	}
	for _, pc := range ch.c.PriorityClasses {
		names = append(names, pc.Name)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		return "none defined"
	}
	return "defined: " + strings.Join(names, ", ")
}

func listSome(items []string, max int) string {
	if len(items) > max {
		return strings.Join(items[:max], ", ") + fmt.Sprintf(" and %d more", len(items)-max)
	}
	return strings.Join(items, ", ")
}

// pdbSelects reports whether a PDB's selector matches labels.
func pdbSelects(sel *metav1.LabelSelector, l map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && !s.Empty() && s.Matches(labels.Set(l))
}
