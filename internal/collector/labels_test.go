package collector_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/pipetest"
)

// A label registry ConfigMap is published as it is listed, again on every edit (the new state,
// live, within a watch event), and once more when it is deleted; a ConfigMap without the label
// is not.
func TestLabelRegistriesPublishedLive(t *testing.T) {
	srv := natstest.Start(t)
	registry := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ai-lab", Name: "node-labels", ResourceVersion: "1",
		Labels: map[string]string{kube.LabelRegistry: "true"}},
		Data: map[string]string{kube.LabelRegistryKey: "gpu-model: {source: provisioner, owner: platform, use: preference}\n"}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ai-lab", Name: "settings", ResourceVersion: "2"},
		Data: map[string]string{kube.LabelRegistryKey: "x: {source: a, owner: b}\n"}}
	k := newCluster(t, registry, other)
	startCollector(t, k, srv.URL(), testOpts{})
	registries := func() []*events.LabelRegistry {
		var out []*events.LabelRegistry
		for _, e := range streamEnvelopes(t, srv.URL()) {
			if r, ok := e.Payload.(*events.LabelRegistry); ok {
				out = append(out, r)
			}
		}
		return out
	}
	waitFor(t, 10*time.Second, "the registry", func() bool { return len(registries()) == 1 })
	if r := registries()[0]; r.Name != "node-labels" || len(r.Labels) != 1 || r.Labels[0].Key != "gpu-model" || r.Labels[0].Use != "preference" {
		t.Fatalf("registry %+v", r)
	}

	edited := registry.DeepCopy()
	edited.ResourceVersion = k.nextRV()
	edited.Data[kube.LabelRegistryKey] += "accelerator: {source: GPU feature discovery, owner: platform-gpu, use: hard}\nzone: {source: cloud}\n"
	if _, err := k.client.CoreV1().ConfigMaps("ai-lab").Update(context.Background(), edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the edit", func() bool { return len(registries()) == 2 })
	if r := registries()[1]; len(r.Labels) != 2 || r.Labels[0].Key != "accelerator" || len(r.Errors) != 1 {
		t.Fatalf("edited registry %+v: want accelerator and gpu-model, zone's missing owner as an error", r)
	}

	if err := k.client.CoreV1().ConfigMaps("ai-lab").Delete(context.Background(), "node-labels", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the deletion", func() bool { return len(registries()) == 3 })
	if r := registries()[2]; !r.Deleted || r.Name != "node-labels" {
		t.Fatalf("deleted registry %+v", r)
	}
}

// Through the pipeline — collector, JetStream, correlator — an edited registry is the one the
// store answers (GET /v1/labels reads it) as soon as the correlator has the watch event.
func TestLabelRegistryEditReachesTheStore(t *testing.T) {
	p := pipetest.Start(t)
	registry := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ai-lab", Name: "node-labels", ResourceVersion: "1",
		Labels: map[string]string{kube.LabelRegistry: "true"}},
		Data: map[string]string{kube.LabelRegistryKey: "gpu-model: {source: provisioner, owner: platform}\n"}}
	k := newCluster(t, registry)
	startCollector(t, k, p.NATSURL, testOpts{})
	owners := func() string {
		regs, err := p.DB.LabelRegistries(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range regs {
			for _, l := range r.Labels {
				out = append(out, l.Key+"="+l.Owner)
			}
		}
		return strings.Join(out, ",")
	}
	waitFor(t, 10*time.Second, "the registry stored", func() bool { return owners() == "gpu-model=platform" })
	edited := registry.DeepCopy()
	edited.ResourceVersion = k.nextRV()
	edited.Data[kube.LabelRegistryKey] = "gpu-model: {source: provisioner, owner: gpu-team}\n"
	if _, err := k.client.CoreV1().ConfigMaps("ai-lab").Update(context.Background(), edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the edit stored", func() bool { return owners() == "gpu-model=gpu-team" })
	if err := k.client.CoreV1().ConfigMaps("ai-lab").Delete(context.Background(), "node-labels", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the deletion stored", func() bool { return owners() == "" })
}
