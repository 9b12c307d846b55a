package kubelet_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/schedlens/schedlens/internal/testenv"
	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/kubelet"
)

// Every node gets a Lease owned by its Node and renewed while the node is alive, and its four
// conditions; a failed node renews nothing until it rejoins.
func TestHeartbeats(t *testing.T) {
	spec, err := cluster.Parse([]byte("pools: [{name: h100, nodes: 2, gpu: {product: NVIDIA-H100-80GB-HBM3, count: 1}}]"))
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, n := range spec.Nodes() {
		n.Status.Conditions = nil // registered without conditions: the kubelet posts them
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	k := kubelet.New(client, spec, kubelet.Config{Heartbeat: 10 * time.Millisecond}, slog.New(slog.DiscardHandler))
	done := make(chan error)
	go func() { done <- k.Run(ctx) }()

	renewed := func(node string) time.Time {
		l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return time.Time{}
		}
		return l.Spec.RenewTime.Time
	}
	advances := func(node string) bool {
		before := renewed(node)
		time.Sleep(100 * time.Millisecond)
		return !before.IsZero() && renewed(node).After(before)
	}
	waitFor(t, "leases", func() bool { return !renewed("gpu-h100-1").IsZero() && !renewed("gpu-h100-2").IsZero() })

	l, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "gpu-h100-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, "gpu-h100-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{fmt.Sprintf("holder %s, owner %s/%s", *l.Spec.HolderIdentity, l.OwnerReferences[0].Kind, l.OwnerReferences[0].Name)}
	for _, c := range n.Status.Conditions {
		got = append(got, fmt.Sprintf("%s=%s %s", c.Type, c.Status, c.Reason))
	}
	want := []string{
		"holder gpu-h100-1, owner Node/gpu-h100-1",
		"MemoryPressure=False KubeletHasSufficientMemory",
		"DiskPressure=False KubeletHasNoDiskPressure",
		"PIDPressure=False KubeletHasSufficientPID",
		"Ready=True KubeletReady",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lease and conditions (-want +got):\n%s", diff)
	}

	if err := k.FailNode("gpu-h100-1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // a renewal under way ends
	if advances("gpu-h100-1") {
		t.Error("failed node: its lease is still renewed")
	}
	if !advances("gpu-h100-2") {
		t.Error("the other node: its lease is not renewed")
	}
	if err := k.RejoinNode(ctx, "gpu-h100-1"); err != nil {
		t.Fatal(err)
	}
	if !advances("gpu-h100-1") {
		t.Error("rejoined node: its lease is not renewed")
	}
	if err := k.FailNode("gpu-none-1"); err == nil {
		t.Error("FailNode of an unknown node: no error")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	if !testenv.Until(10*time.Second, 10*time.Millisecond, ok) {
		t.Fatalf("timed out waiting for %s", what)
	}
}
