package preflight

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/schedlens/schedlens/internal/kube"
)

// gpuRequestLimit: a GPU request without a limit or with a different one, and GPU resource
// names no node advertises.
func (ch *checker) gpuRequestLimit(w *Workload) {
	spec := &w.Template.Spec
	advertised := ch.c.advertised()
	ch.draAdvertised(advertised)
	check := func(kind string, cs []corev1.Container) {
		for i, c := range cs {
			field := w.SpecPath(fmt.Sprintf("%s[%d].resources", kind, i))
			for _, r := range slices.Sorted(maps.Keys(c.Resources.Requests)) {
				if !kube.IsGPUResource(r) {
					continue
				}
				req := c.Resources.Requests[r]
				lim, ok := c.Resources.Limits[r]
				switch {
				case !ok:
					ch.f.add(RuleGPURequestLimit, "", w.Object, field+".requests",
						fmt.Sprintf("container %s requests %s: %s without a limit", c.Name, r, req.String()), "", "")
				case lim.Cmp(req) != 0:
					ch.f.add(RuleGPURequestLimit, "", w.Object, field+".limits",
						fmt.Sprintf("container %s: %s request %s differs from its limit %s", c.Name, r, req.String(), lim.String()), "", "")
				}
			}
			names := map[corev1.ResourceName]bool{}
			for _, list := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for r, q := range list {
					if kube.IsGPUResource(r) && q.Value() > 0 {
						names[r] = true
					}
				}
			}
			for _, r := range slices.Sorted(maps.Keys(names)) {
				if advertised[r] > 0 {
					continue
				}
				ch.f.add(RuleGPURequestLimit, "", w.Object, field+".limits",
					fmt.Sprintf("container %s asks for %s, which no node advertises; %s", c.Name, r, describeAdvertised(advertised)), "", "")
			}
		}
	}
	check("initContainers", spec.InitContainers)
	check("containers", spec.Containers)
}

func describeAdvertised(adv map[corev1.ResourceName]int) string {
	if len(adv) == 0 {
		return "no node advertises any GPU resource"
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(adv)) {
		parts = append(parts, fmt.Sprintf("%s (%s)", r, plural(adv[r], "node")))
	}
	return "nodes advertise " + strings.Join(parts, ", ")
}
