package preflight_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/lab/preflight"
)

// registry renders a label registry ConfigMap with entries (YAML, one per line).
func registry(entries string) string {
	return "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: node-labels\n  namespace: platform\n  labels: {schedlens.io/label-registry: \"true\"}\ndata:\n  labels: |\n" + indent(entries, 4)
}

// TestLabelRules: for each label rule, manifests that trigger it and the closest ones that do
// not, against the lab's default cluster (gpu-model H100/A100/T4, accelerator on all but T4).
func TestLabelRules(t *testing.T) {
	const (
		docModel = "gpu-model: {source: node-pool provisioner, owner: platform-gpu, use: preference, values: [H100, A100, T4, B200]}\n"
		docAccel = "accelerator: {source: GPU feature discovery, owner: platform-gpu, use: hard}\n"
		required = "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: %s, operator: In, values: [%s]}]}]}}}\n"
		prefer   = "affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 50, preference: {matchExpressions: [{key: %s, operator: In, values: [%s]}]}}]}}\n"
	)
	for _, tc := range []struct {
		name, rule, manifests string
		want                  []string
		msg                   string
	}{
		{"label the registry lacks", preflight.RuleLabelUndocumented,
			registry(docModel) + "---\n" + deployment("llm", 1, seedAffinity+container, ""),
			[]string{"warning Deployment ai-lab/llm spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"},
			"required rule on node label accelerator, which the label registry does not document"},
		{"every label documented", preflight.RuleLabelUndocumented,
			registry(docModel+docAccel) + "---\n" + deployment("llm", 1, seedAffinity+container, ""), nil, ""},
		{"no registry at all", preflight.RuleLabelUndocumented, deployment("llm", 1, seedAffinity+container, ""), nil, ""},

		{"preference used as a hard rule", preflight.RuleLabelPreferenceRequired,
			registry(docModel) + "---\n" + deployment("llm", 1, "nodeSelector: {gpu-model: H100}\n"+container, ""),
			[]string{"warning Deployment ai-lab/llm spec.template.spec.nodeSelector.gpu-model"},
			"nodeSelector rule on node label gpu-model, which the registry (platform/node-labels, owner platform-gpu) names a preference"},
		{"hard limit only preferred", preflight.RuleLabelPreferenceRequired,
			registry(docAccel) + "---\n" + deployment("llm", 1, fmt.Sprintf(prefer, "accelerator", "nvidia-gpu")+container, ""),
			[]string{"warning Deployment ai-lab/llm spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0]"},
			"names a hard limit, but no required rule uses it"},
		{"the seed's split: hard required, preference preferred", preflight.RuleLabelPreferenceRequired,
			registry(docModel+docAccel) + "---\n" + deployment("llm", 1, seedAffinity+container, ""), nil, ""},

		{"one value no node carries", preflight.RuleLabelValueUnknown,
			registry(docModel) + "---\n" + deployment("llm", 1, fmt.Sprintf(prefer, "gpu-model", "H100, B200")+container, ""),
			[]string{"warning Deployment ai-lab/llm spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0]"},
			"no node carries gpu-model=B200 (nodes carry A100, H100, T4); the registry lists it, but no node has it now"},
		{"a misspelt value", preflight.RuleLabelValueUnknown,
			deployment("llm", 1, fmt.Sprintf(required, "gpu-model", "H100, A10O")+container, ""),
			[]string{"warning Deployment ai-lab/llm spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]"},
			"no node carries gpu-model=A10O"},
		{"every value carried", preflight.RuleLabelValueUnknown,
			deployment("llm", 1, fmt.Sprintf(required, "gpu-model", "H100, A100")+container, ""), nil, ""},
		{"no value carried (affinity-unsatisfiable's)", preflight.RuleLabelValueUnknown,
			deployment("llm", 1, fmt.Sprintf(required, "gpu-model", "B200")+container, ""), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := check(t, tc.manifests)
			got, first := ruleFindings(r, tc.rule, true)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s findings (-want +got):\n%s\nall: %+v", tc.rule, diff, r.Findings)
			}
			if tc.msg != "" && !strings.Contains(first, tc.msg) {
				t.Errorf("message %q lacks %q", first, tc.msg)
			}
		})
	}
}

// A registry entry that is wrong is an input error at its line; the others are read.
func TestLabelRegistryInputErrors(t *testing.T) {
	in := preflight.Load([]string{preflight.Stdin}, strings.NewReader(registry("gpu-model: {source: x, owner: y}\naccelerator: {source: x}\n")), "default")
	if len(in.Errors) != 1 || !strings.Contains(in.Errors[0].Message, "accelerator: no owner") || in.Errors[0].Line != 9 {
		t.Errorf("input errors %+v, want accelerator's missing owner at line 9", in.Errors)
	}
	if len(in.LabelRegistries) != 1 || len(in.LabelRegistries[0].Docs) != 1 || in.LabelRegistries[0].Docs[0].Key != "gpu-model" {
		t.Errorf("registries %+v", in.LabelRegistries)
	}
}
