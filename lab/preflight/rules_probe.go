package preflight

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// probes: serving containers without a readinessProbe; liveness or startup probes that give up
// before the model has loaded.
func (ch *checker) probes(w *Workload) {
	spec := &w.Template.Spec
	g := gpuContainer(spec)
	for i, c := range spec.Containers {
		serves := i == g || len(c.Ports) > 0
		if w.Serving && serves && c.ReadinessProbe == nil {
			ch.f.add(RuleProbeReadinessMissing, "", w.Object, w.SpecPath(fmt.Sprintf("containers[%d]", i)),
				fmt.Sprintf("container %s has no readinessProbe: it counts as Ready as soon as it runs, before its model has loaded", c.Name), "", "")
		}
		if i != g {
			continue
		}
		probe, kind := c.StartupProbe, "startupProbe"
		if probe == nil {
			probe, kind = c.LivenessProbe, "livenessProbe"
		}
		if probe == nil {
			continue
		}
		budget := probeBudget(probe)
		load, source := ch.modelLoad(w)
		if budget >= load {
			continue
		}
		fix := fmt.Sprintf("add a startupProbe with initialDelaySeconds + periodSeconds × failureThreshold above %s (e.g. periodSeconds 10, failureThreshold %d); liveness starts after it succeeds",
			round(load), int(load/(10*time.Second))+2)
		ch.f.add(RuleProbeStartupShort, "", w.Object, w.SpecPath(fmt.Sprintf("containers[%d].%s", i, kind)),
			fmt.Sprintf("container %s: the %s restarts it after %s (initialDelaySeconds %d + periodSeconds %d × failureThreshold %d) but the model loads in %s (%s)",
				c.Name, kind, round(budget), probe.InitialDelaySeconds, orDefault(probe.PeriodSeconds, 10), orDefault(probe.FailureThreshold, 3), round(load), source), "", fix)
	}
}

// probeBudget is how long a probe lets a container start before the kubelet kills it.
func probeBudget(p *corev1.Probe) time.Duration {
	return time.Duration(p.InitialDelaySeconds+orDefault(p.PeriodSeconds, 10)*orDefault(p.FailureThreshold, 3)) * time.Second
}

func orDefault(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

// modelLoad is the model-load time to plan for: the slowest schedlens measured for the
// workload's experiment arm, else its experiment, else the -model-load default.
func (ch *checker) modelLoad(w *Workload) (time.Duration, string) {
	exp, arm := w.Experiment()
	if exp != "" {
		for _, k := range []ModelLoadKey{{exp, arm}, {exp, ""}} {
			if m, ok := ch.opts.ModelLoads[k]; ok {
				return m.Max, fmt.Sprintf("slowest of %d pods schedlens measured for %s; median %s", m.Pods, k, round(m.P50))
			}
		}
	}
	return ch.opts.ModelLoad, "no measurement: the -model-load default"
}

func round(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}
