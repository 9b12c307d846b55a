package preflight

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// pdb: a PodDisruptionBudget of the manifests that allows no eviction of what it selects.
func (ch *checker) pdb(p *PDB) {
	expected, what := 0, ""
	for _, w := range ch.in.Workloads {
		if w.Namespace == p.Namespace && w.Serving && pdbSelects(p.Spec.Selector, w.Template.Labels) {
			expected += int(w.Replicas)
			what = w.Object.String()
		}
	}
	if expected == 0 {
		for _, pod := range ch.c.Pods {
			if pod.Namespace == p.Namespace && pdbSelects(p.Spec.Selector, pod.Labels) {
				expected++
				what = "running pods"
			}
		}
	}
	if msg, field := blocksDrain(p.Spec, expected); msg != "" {
		if expected > 0 {
			msg += fmt.Sprintf(" (it selects %d pods: %s)", expected, what)
		}
		ch.f.add(RulePDBBlocksDrain, "", p.Object, field, msg, "", "")
	}
}

// workloadPDBs: a live cluster's PodDisruptionBudget that would block drains of a workload.
func (ch *checker) workloadPDBs(w *Workload) {
	if !w.Serving {
		return
	}
	for _, p := range ch.c.PDBs {
		if p.Namespace != w.Namespace || !pdbSelects(p.Spec.Selector, w.Template.Labels) {
			continue
		}
		if msg, _ := blocksDrain(p.Spec, int(w.Replicas)); msg != "" {
			ch.f.add(RulePDBBlocksDrain, "", w.Object, "metadata.labels",
				fmt.Sprintf("the cluster's PodDisruptionBudget %s selects its %d pods: %s", p.Name, w.Replicas, msg), "", "")
		}
	}
}

// blocksDrain says why a budget never allows an eviction of expected pods, and which field.
func blocksDrain(s policyv1.PodDisruptionBudgetSpec, expected int) (string, string) {
	if s.MaxUnavailable != nil {
		v, err := intstr.GetScaledValueFromIntOrPercent(s.MaxUnavailable, expected, true)
		if err == nil && v == 0 {
			return fmt.Sprintf("maxUnavailable %s allows no eviction", s.MaxUnavailable.String()), "spec.maxUnavailable"
		}
		return "", ""
	}
	if s.MinAvailable != nil && expected > 0 {
		v, err := intstr.GetScaledValueFromIntOrPercent(s.MinAvailable, expected, true)
		if err == nil && v >= expected {
			return fmt.Sprintf("minAvailable %s is %d of %d replicas: no eviction is ever allowed", s.MinAvailable.String(), v, expected), "spec.minAvailable"
		}
	}
	return "", ""
}

// rollout: a rolling update that cannot proceed, or that the API server rejects.
func (ch *checker) rollout(w *Workload) {
	s := w.Strategy
	if s == nil || s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil {
		return
	}
	field := "spec.strategy.rollingUpdate"
	if isZero(s.RollingUpdate.MaxSurge) && isZero(s.RollingUpdate.MaxUnavailable) {
		ch.f.add(RuleRolloutInvalid, "", w.Object, field, "maxSurge and maxUnavailable are both 0: no pod could ever be replaced", "", "")
		return
	}
	surge, err1 := intstr.GetScaledValueFromIntOrPercent(s.RollingUpdate.MaxSurge, int(w.Replicas), true)
	unavailable, err2 := intstr.GetScaledValueFromIntOrPercent(s.RollingUpdate.MaxUnavailable, int(w.Replicas), false)
	if err1 != nil || err2 != nil || surge == 0 || unavailable > 0 || w.Replicas == 0 {
		return
	}
	p := ch.place(w)
	if p.resource == "" || len(p.candidates) == 0 {
		return
	}
	slots, free := ch.slots(w, p, p.candidates)
	if slots >= int64(w.Replicas)+1 {
		return
	}
	ch.f.add(RuleRolloutNoSurge, "", w.Object, field+".maxSurge",
		fmt.Sprintf("maxSurge %s (%d pod) with maxUnavailable %s (0 pods): the surge pod needs %d %s on %s, which offer %d free, room for %d pods, and the %d replicas take %d",
			s.RollingUpdate.MaxSurge.String(), surge, s.RollingUpdate.MaxUnavailable.String(), p.count, p.resource, nodeNames(p.candidates, 4), free, slots, w.Replicas, w.Replicas), "", "")
}

// isZero reports whether an int-or-percent is literally 0 or "0%" (what the API server rejects).
func isZero(v *intstr.IntOrString) bool {
	if v == nil {
		return false
	}
	if v.Type == intstr.Int {
		return v.IntVal == 0
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	return err == nil && n == 0
}
