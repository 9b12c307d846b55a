package kube_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/internal/kube"
)

func TestLabelRegistryOf(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "labels", Labels: map[string]string{kube.LabelRegistry: "true"}},
		Data: map[string]string{kube.LabelRegistryKey: `
nvidia.com/gpu.product: {source: GPU feature discovery, owner: platform-gpu, meaning: the GPU model, use: hard}
gpu-model: {source: node-pool provisioner, owner: platform, use: preference, values: [H100, A100]}
accelerator: {source: a person, owner: ""}
"bad key!": {source: x, owner: y}
zone: {source: cloud, owner: infra, use: soft}
`}}
	if !kube.IsLabelRegistry(cm) {
		t.Fatal("not a registry")
	}
	docs, errs := kube.LabelRegistryOf(cm)
	want := []kube.LabelDoc{
		{Key: "gpu-model", Source: "node-pool provisioner", Owner: "platform", Use: "preference", Values: []string{"H100", "A100"}, Registry: "ops/labels"},
		{Key: "nvidia.com/gpu.product", Source: "GPU feature discovery", Owner: "platform-gpu", Meaning: "the GPU model", Use: "hard", Registry: "ops/labels"},
	}
	if diff := cmp.Diff(want, docs); diff != "" {
		t.Errorf("docs (-want +got):\n%s", diff)
	}
	got := fmt.Sprint(errs)
	for _, w := range []string{"bad key!: not a label key", "accelerator: no owner", `zone: use "soft": want hard or preference`} {
		if !strings.Contains(got, w) {
			t.Errorf("errors %s lack %q", got, w)
		}
	}
	// A misspelt field is an error, not an undocumented owner.
	cm.Data[kube.LabelRegistryKey] = "gpu-model: {source: x, onwer: y}\n"
	if _, errs := kube.LabelRegistryOf(cm); len(errs) != 1 || !strings.Contains(errs[0].Error(), `unknown field "onwer"`) {
		t.Errorf("misspelt field: %v", errs)
	}
}
