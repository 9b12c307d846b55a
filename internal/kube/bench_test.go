package kube_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

// BenchmarkPodEnvelope measures converting a recorded pod (Transform applied, as in the
// informer cache) into a validated pod_status envelope; BenchmarkPodJSON, marshalling the same
// pod to JSON, is the baseline a watch decoder pays per object anyway. Compare ns/op:
//
//	go test ./internal/kube -run '^$' -bench 'Pod(Envelope|JSON)' -benchmem
func BenchmarkPodEnvelope(b *testing.B) {
	pod := recordedPods(b)["day20-priority-1"]
	all := nodes(b)
	if _, err := kube.NewTransformer().Transform(pod); err != nil {
		b.Fatal(err)
	}
	node := nodeOf(pod, all)
	m := kube.Meta{Cluster: "lab", Source: "bench", Observed: time.Now(), Labels: events.DefaultLabelKeys,
		Scope: events.Scope{Namespaces: []string{"ai-lab"}, Selector: events.LabelExperiment}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kube.PodEnvelope(pod, node, false, m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPodJSON(b *testing.B) {
	pod := recordedPods(b)["day20-priority-1"]
	if _, err := kube.NewTransformer().Transform(pod); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(pod); err != nil {
			b.Fatal(err)
		}
	}
}
