package controlplane_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/schedlens/schedlens/lab/controlplane"
)

// One control plane per process (kube-apiserver keeps process-wide state), shared by the tests.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "schedlens-controlplane-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cp, err = controlplane.Start(context.Background(), controlplane.Config{Dir: dir, ControllerManager: &controlplane.ControllerManagerConfig{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	fmt.Fprintf(os.Stderr, "controller manager started in %.3fs\n", cp.ControllerManagerStartup.Seconds())
	return m.Run()
}

// The real scheduler binds a pod to the only node that has room for it.
func TestControlPlaneSchedules(t *testing.T) {
	ctx := context.Background()
	for name, gpus := range map[string]string{"small": "0", "big": "2"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		node.Status = corev1.NodeStatus{
			Capacity:    corev1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("32Gi"), "pods": resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse(gpus)},
			Allocatable: corev1.ResourceList{"cpu": resource.MustParse("8"), "memory": resource.MustParse("32Gi"), "pods": resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse(gpus)},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
		if _, err := cp.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createNamespace(t, "lab")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "lab"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "model", Image: "model:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
	}
	if _, err := cp.Client.CoreV1().Pods("lab").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the pod bound", func() bool {
		p, err := cp.Client.CoreV1().Pods("lab").Get(ctx, "gpu", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" && p.Spec.NodeName != "big" {
			t.Errorf("bound to %s, want big (the only node with a GPU)", p.Spec.NodeName)
		}
		return p.Spec.NodeName != ""
	})
	// The API server gives pods the lab's short default tolerations of the node taints.
	p, err := cp.Client.CoreV1().Pods("lab").Get(ctx, "gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tol := range p.Spec.Tolerations {
		got = append(got, fmt.Sprintf("%s:%s %ds", tol.Key, tol.Effect, ptr.Deref(tol.TolerationSeconds, -1)))
	}
	slices.Sort(got)
	want := []string{"node.kubernetes.io/not-ready:NoExecute 2s", "node.kubernetes.io/unreachable:NoExecute 2s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("default tolerations (-want +got):\n%s", diff)
	}
}

// The controller manager turns a Deployment into a ReplicaSet and its pods; stopped, it does
// nothing; started again, it catches up; deleting the Deployment deletes its ReplicaSet and pods
// (garbage collector).
func TestControllerManager(t *testing.T) {
	ctx := context.Background()
	ns := "deploy"
	createNamespace(t, ns)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				// Pending: bound, they would stay Terminating when deleted (no kubelet here).
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"lab.schedlens.io/none": "none"}, Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
			},
		},
	}
	if _, err := cp.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := func() []string {
		l, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range l.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "ReplicaSet" {
				out = append(out, p.Name)
			}
		}
		return out
	}
	waitFor(t, 30*time.Second, "2 pods of the ReplicaSet", func() bool { return len(pods()) == 2 })

	cp.StopControllerManager()
	scale := func(n int32) {
		t.Helper()
		s, err := cp.Client.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.Replicas = n
		if _, err := cp.Client.AppsV1().Deployments(ns).UpdateScale(ctx, "web", s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scale(3)
	time.Sleep(time.Second)
	if n := len(pods()); n != 2 {
		t.Errorf("controller manager stopped: %d pods, want still 2", n)
	}
	t0 := time.Now()
	if err := cp.StartControllerManager(); err != nil {
		t.Fatal(err)
	}
	t.Logf("controller manager restarted in %.3fs", time.Since(t0).Seconds())
	waitFor(t, 30*time.Second, "3 pods after the restart", func() bool { return len(pods()) == 3 })

	if err := cp.Client.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the ReplicaSet and its pods deleted", func() bool {
		rs, err := cp.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(rs.Items) == 0 && len(pods()) == 0
	})
	if err := cp.Err(); err != nil {
		t.Errorf("control plane: %v", err)
	}
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
