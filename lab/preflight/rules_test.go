package preflight_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/preflight"
)

// container is the inference container every case starts from: one GPU (limit only), a port,
// a readiness probe.
const container = `containers:
- name: model
  image: nvcr.io/nvidia/tritonserver:25.01-py3
  ports: [{containerPort: 8000}]
  resources:
    limits: {nvidia.com/gpu: 1}
  readinessProbe: {httpGet: {path: /v2/health/ready, port: 8000}}
`

// seedAffinity is the seed's affinity block: GPU nodes required, H100 preferred.
const seedAffinity = `affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: accelerator, operator: In, values: [nvidia-gpu]}
    preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 50
      preference:
        matchExpressions:
        - {key: gpu-model, operator: In, values: [H100]}
`

// deployment renders a Deployment whose pod spec is spec (written from column 0); extra is
// added to the Deployment's spec (column 0 too).
func deployment(name string, replicas int, spec, extra string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: ai-lab}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
%s  template:
    metadata: {labels: {app: %s}}
    spec:
%s`, name, replicas, name, indent(extra, 2), name, indent(spec, 6))
}

func indent(s string, n int) string {
	if s == "" {
		return ""
	}
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func withResources(res string) string {
	return strings.Replace(container, "    limits: {nvidia.com/gpu: 1}\n", indent(res, 4), 1)
}

// ruleFindings are a rule's findings in r as "severity object field" (infos too when
// withInfo), and the first one's message.
func ruleFindings(r *preflight.Report, rule string, withInfo bool) (got []string, first string) {
	for _, f := range r.Findings {
		if f.Rule != rule || f.Severity == preflight.Info && !withInfo {
			continue
		}
		got = append(got, fmt.Sprintf("%s %s %s", f.Severity, f.Object.String(), f.Field))
		if first == "" {
			first = f.Message
		}
	}
	return got, first
}

// check runs every rule on manifests against the lab's default cluster.
func check(t *testing.T, manifests string) *preflight.Report {
	t.Helper()
	in := preflight.Load([]string{preflight.Stdin}, strings.NewReader(manifests), "default")
	if len(in.Errors) > 0 {
		t.Fatalf("input errors: %v\n%s", in.Errors, manifests)
	}
	return preflight.Check(in, preflight.FromSpec(cluster.Default(), "test"), preflight.Options{})
}

// TestRules: for every rule, manifests that trigger it and the closest ones that do not. want
// lists the rule's findings as "severity object field"; msg is in the first one's message.
func TestRules(t *testing.T) {
	pdb := func(name, budget string) string {
		return fmt.Sprintf("---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: %s, namespace: ai-lab}\nspec:\n  %s\n  selector: {matchLabels: {app: %s}}\n", name, budget, name)
	}
	experimentCM := func(data string) string {
		return "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: day20-experiment\n  namespace: ai-lab\n  labels: {schedlens.io/experiment: day20}\ndata:\n" + indent(data, 2)
	}
	arm := func(name, spec string) string {
		d := deployment(name, 3, spec, "")
		return "---\n" + strings.Replace(d, "labels: {app: "+name+"}", "labels: {app: "+name+", schedlens.io/experiment: day20, schedlens.io/arm: "+name+"}", 1)
	}
	const thresholds = "change: node affinity\nfixed: image, model, input\nbaseline: control\nthresholds: '{\"p95_latency_ms\": 800}'\n"

	for _, tc := range []struct {
		name, rule, manifests string
		want                  []string
		msg                   string
	}{
		{"gpu request without limit", preflight.RuleGPURequestLimit,
			deployment("llm", 1, withResources("requests: {nvidia.com/gpu: 1}\n"), ""),
			[]string{"error Deployment ai-lab/llm spec.template.spec.containers[0].resources.requests"}, "without a limit"},
		{"gpu request differs from limit", preflight.RuleGPURequestLimit,
			deployment("llm", 1, withResources("requests: {nvidia.com/gpu: 1}\nlimits: {nvidia.com/gpu: 2}\n"), ""),
			[]string{"error Deployment ai-lab/llm spec.template.spec.containers[0].resources.limits"}, "request 1 differs from its limit 2"},
		{"MIG profile no node advertises", preflight.RuleGPURequestLimit,
			deployment("llm", 1, withResources("limits: {nvidia.com/mig-3g.40gb: 1}\n"), ""),
			[]string{"error Deployment ai-lab/llm spec.template.spec.containers[0].resources.limits"}, "nvidia.com/mig-3g.40gb, which no node advertises"},
		{"gpu request equal to limit", preflight.RuleGPURequestLimit,
			deployment("llm", 1, withResources("requests: {nvidia.com/gpu: 1}\nlimits: {nvidia.com/gpu: 1}\n"), ""), nil, ""},
		{"gpu limit only", preflight.RuleGPURequestLimit, deployment("llm", 1, container, ""), nil, ""},

		{"nodeSelector matches no node", preflight.RuleAffinityUnsatisfiable,
			deployment("llm", 1, "nodeSelector: {gpu-model: B200}\n"+container, ""),
			[]string{"error Deployment ai-lab/llm spec.template.spec.nodeSelector"}, "nodes carry gpu-model=A100 (4 nodes), gpu-model=H100 (2 nodes), gpu-model=T4 (2 nodes)"},
		{"matching nodes too small", preflight.RuleAffinityUnsatisfiable,
			deployment("llm", 1, "nodeSelector: {gpu-model: H100}\n"+withResources("limits: {nvidia.com/gpu: 4}\n"), ""),
			[]string{"error Deployment ai-lab/llm spec.template.spec.containers[0].resources"}, "gpu-h100-1 has 2 (short 2)"},
		{"nodeSelector and count that fit", preflight.RuleAffinityUnsatisfiable,
			deployment("llm", 1, "nodeSelector: {gpu-model: H100}\n"+withResources("limits: {nvidia.com/gpu: 2}\n"), ""), nil, ""},

		{"preferred key no node carries", preflight.RuleAffinityPreferredNoop,
			deployment("llm", 1, "affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 10, preference: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [a]}]}}]}}\n"+container, ""),
			[]string{"warning Deployment ai-lab/llm spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0]"}, "no node carries the label topology.kubernetes.io/zone"},
		{"preferred value no node has", preflight.RuleAffinityPreferredNoop,
			deployment("llm", 1, "affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 10, preference: {matchExpressions: [{key: gpu-model, operator: In, values: [B200]}]}}]}}\n"+container, ""),
			[]string{"warning Deployment ai-lab/llm spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"}, "matches no node"},
		{"preferred term some nodes match", preflight.RuleAffinityPreferredNoop,
			deployment("llm", 1, seedAffinity+container, ""), nil, ""},

		{"only tainted nodes fit", preflight.RuleTaintUntolerated,
			deployment("llm", 1, "nodeSelector: {nvidia.com/gpu.sharing-strategy: time-slicing}\n"+container, ""),
			[]string{"error Deployment ai-lab/llm spec.template.spec.tolerations"}, "nvidia.com/gpu.shared=true:NoSchedule on gpu-a100-shared-1"},
		{"tainted nodes tolerated", preflight.RuleTaintUntolerated,
			deployment("llm", 1, "nodeSelector: {nvidia.com/gpu.sharing-strategy: time-slicing}\ntolerations: [{key: nvidia.com/gpu.shared, operator: Exists, effect: NoSchedule}]\n"+container, ""), nil, ""},

		{"priority class nobody defines", preflight.RulePriorityUndefined,
			deployment("llm", 1, "priorityClassName: lab-urgent\n"+container, ""),
			[]string{"error Deployment ai-lab/llm spec.template.spec.priorityClassName"}, "defined: lab-high, lab-low"},
		{"priority class of the cluster", preflight.RulePriorityUndefined,
			deployment("llm", 1, "priorityClassName: lab-high\n"+container, ""), nil, ""},
		{"priority class of the manifests", preflight.RulePriorityUndefined,
			"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: lab-urgent}\nvalue: 5000\n---\n" + deployment("llm", 1, "priorityClassName: lab-urgent\n"+container, ""), nil, ""},

		{"preempts pods a PDB protects", preflight.RulePriorityPreempts,
			deployment("batch", 3, "priorityClassName: lab-low\nnodeSelector: {lab.schedlens.io/pool: h100}\n"+container, "") + pdb("batch", "maxUnavailable: 1") +
				"---\n" + deployment("urgent", 2, "priorityClassName: lab-high\nnodeSelector: {lab.schedlens.io/pool: h100}\n"+container, ""),
			[]string{"warning Deployment ai-lab/urgent spec.template.spec.priorityClassName"}, "PodDisruptionBudget batch"},
		{"high priority beside unprotected pods", preflight.RulePriorityPreempts,
			deployment("batch", 3, "priorityClassName: lab-low\nnodeSelector: {lab.schedlens.io/pool: h100}\n"+container, "") +
				"---\n" + deployment("urgent", 2, "priorityClassName: lab-high\nnodeSelector: {lab.schedlens.io/pool: h100}\n"+container, ""), nil, ""},
		{"high priority with room for both", preflight.RulePriorityPreempts,
			deployment("batch", 2, "priorityClassName: lab-low\nnodeSelector: {lab.schedlens.io/pool: h100}\n"+container, "") + pdb("batch", "maxUnavailable: 1") +
				"---\n" + deployment("urgent", 2, "priorityClassName: lab-high\nnodeSelector: {lab.schedlens.io/pool: h100}\n"+container, ""), nil, ""},

		{"no readiness probe", preflight.RuleProbeReadinessMissing,
			deployment("llm", 1, strings.Replace(container, "  readinessProbe: {httpGet: {path: /v2/health/ready, port: 8000}}\n", "", 1), ""),
			[]string{"warning Deployment ai-lab/llm spec.template.spec.containers[0]"}, "counts as Ready as soon as it runs"},
		{"readiness probe", preflight.RuleProbeReadinessMissing, deployment("llm", 1, container, ""), nil, ""},

		{"liveness kills before the model loads", preflight.RuleProbeStartupShort,
			deployment("llm", 1, container+"  livenessProbe: {httpGet: {path: /v2/health/live, port: 8000}, periodSeconds: 10, failureThreshold: 3}\n", ""),
			[]string{"error Deployment ai-lab/llm spec.template.spec.containers[0].livenessProbe"}, "restarts it after 30s (initialDelaySeconds 0 + periodSeconds 10 × failureThreshold 3) but the model loads in 1m0s"},
		{"startup probe covers the model load", preflight.RuleProbeStartupShort,
			deployment("llm", 1, container+"  livenessProbe: {httpGet: {path: /v2/health/live, port: 8000}, periodSeconds: 10, failureThreshold: 3}\n  startupProbe: {httpGet: {path: /v2/health/ready, port: 8000}, periodSeconds: 10, failureThreshold: 30}\n", ""), nil, ""},

		{"minAvailable equals replicas", preflight.RulePDBBlocksDrain,
			deployment("llm", 3, container, "") + pdb("llm", "minAvailable: 3"),
			[]string{"error PodDisruptionBudget ai-lab/llm spec.minAvailable"}, "minAvailable 3 is 3 of 3 replicas"},
		{"maxUnavailable 0", preflight.RulePDBBlocksDrain,
			deployment("llm", 3, container, "") + pdb("llm", "maxUnavailable: 0"),
			[]string{"error PodDisruptionBudget ai-lab/llm spec.maxUnavailable"}, "maxUnavailable 0 allows no eviction"},
		{"minAvailable 100%", preflight.RulePDBBlocksDrain,
			deployment("llm", 3, container, "") + pdb("llm", `minAvailable: "100%"`),
			[]string{"error PodDisruptionBudget ai-lab/llm spec.minAvailable"}, "minAvailable 100% is 3 of 3 replicas"},
		{"minAvailable below replicas", preflight.RulePDBBlocksDrain,
			deployment("llm", 3, container, "") + pdb("llm", "minAvailable: 2"), nil, ""},

		{"maxSurge 0 and maxUnavailable 0", preflight.RuleRolloutInvalid,
			deployment("llm", 3, container, "strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}\n"),
			[]string{"error Deployment ai-lab/llm spec.strategy.rollingUpdate"}, "both 0"},
		{"maxSurge 0 and maxUnavailable 1", preflight.RuleRolloutInvalid,
			deployment("llm", 3, container, "strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}\n"), nil, ""},

		{"surge pod has no free GPU", preflight.RuleRolloutNoSurge,
			deployment("llm", 4, "nodeSelector: {lab.schedlens.io/pool: h100}\n"+container, "strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}\n"),
			[]string{"error Deployment ai-lab/llm spec.strategy.rollingUpdate.maxSurge"}, "offer 4 free, room for 4 pods, and the 4 replicas take 4"},
		{"surge pod fits", preflight.RuleRolloutNoSurge,
			deployment("llm", 3, "nodeSelector: {lab.schedlens.io/pool: h100}\n"+container, "strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}\n"), nil, ""},
		{"no surge room but maxUnavailable 1", preflight.RuleRolloutNoSurge,
			deployment("llm", 4, "nodeSelector: {lab.schedlens.io/pool: h100}\n"+container, "strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}\n"), nil, ""},

		{"experiment without thresholds or baseline", preflight.RuleExperimentNoRollback,
			experimentCM("change: node affinity\nfixed: image, model, input\n"),
			[]string{"warning ConfigMap ai-lab/day20-experiment data", "warning ConfigMap ai-lab/day20-experiment data"}, "defines no thresholds"},
		{"arms differ in the image", preflight.RuleExperimentNoRollback,
			experimentCM(thresholds) + arm("control", container) + arm("affinity", seedAffinity+strings.Replace(container, "25.01", "24.12", 1)),
			[]string{"error Deployment ai-lab/affinity spec.template"}, "containers[0].image \"nvcr.io/nvidia/tritonserver:24.12-py3\" vs \"nvcr.io/nvidia/tritonserver:25.01-py3\""},
		{"arms differ in the declared change only", preflight.RuleExperimentNoRollback,
			experimentCM(thresholds) + arm("control", container) + arm("affinity", seedAffinity+container), nil, ""},

		{"required GPU label some GPU pools lack", preflight.RuleApplicability,
			deployment("llm", 1, seedAffinity+container, ""),
			[]string{"warning Deployment ai-lab/llm spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"},
			"GPU pools t4 (2 nodes, Tesla-T4) lack the label accelerator"},
		{"GPU label every GPU pool carries", preflight.RuleApplicability,
			deployment("llm", 1, "nodeSelector: {gpu-model: H100}\n"+container, ""), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := check(t, tc.manifests)
			got, first := ruleFindings(r, tc.rule, false)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s findings (-want +got):\n%s\nall: %+v", tc.rule, diff, r.Findings)
			}
			if tc.msg != "" && !strings.Contains(first, tc.msg) {
				t.Errorf("message %q lacks %q", first, tc.msg)
			}
		})
	}
}

// The seed's own experiment ConfigMap and affinity block pass with no error.
func TestSeedPasses(t *testing.T) {
	seed := `apiVersion: v1
kind: ConfigMap
metadata:
  name: day20-experiment
  namespace: ai-lab
  labels: {schedlens.io/experiment: day20}
data:
  change: "node affinity / PriorityClass / GPU sharing"
  fixed: "image, model, input"
  metrics: "placement, Pending, preemption, latency"
  repeats: "3"
---
` + strings.Replace(deployment("day20-affinity", 3, seedAffinity+container, ""), "labels: {app: day20-affinity}", "labels: {app: day20-affinity, schedlens.io/experiment: day20, schedlens.io/arm: affinity}", 1)
	r := check(t, seed)
	for _, f := range r.Findings {
		if f.Severity == preflight.Error {
			t.Errorf("error: %s %s: %s", f.Rule, f.Object.String(), f.Message)
		}
	}
	if r.ExitCode() != 0 || r.Summary.Warnings == 0 {
		t.Errorf("exit %d, summary %+v: want 0 with the warnings (no thresholds, t4 lacks accelerator)", r.ExitCode(), r.Summary)
	}
}

// schedlens.io/preflight-ignore on the object or its pod template suppresses exactly the named
// rules.
func TestSuppression(t *testing.T) {
	noLimit := deployment("llm", 1, "priorityClassName: lab-urgent\n"+withResources("requests: {nvidia.com/gpu: 1}\n"), "")
	onObject := strings.Replace(noLimit, "metadata: {name: llm, namespace: ai-lab}", "metadata: {name: llm, namespace: ai-lab, annotations: {schedlens.io/preflight-ignore: \"gpu-request-limit, applicability\"}}", 1)
	onTemplate := strings.Replace(noLimit, "metadata: {labels: {app: llm}}", "metadata: {labels: {app: llm}, annotations: {schedlens.io/preflight-ignore: gpu-request-limit}}", 1)
	for name, m := range map[string]string{"object": onObject, "template": onTemplate} {
		r := check(t, m)
		var kept, suppressed []string
		for _, f := range r.Findings {
			kept = append(kept, f.Rule)
		}
		for _, f := range r.Suppressed {
			suppressed = append(suppressed, f.Rule)
		}
		if diff := cmp.Diff([]string{preflight.RulePriorityUndefined}, kept); diff != "" {
			t.Errorf("%s: kept (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff([]string{preflight.RuleGPURequestLimit}, suppressed); diff != "" {
			t.Errorf("%s: suppressed (-want +got):\n%s", name, diff)
		}
	}
}
