package collector_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natstest"
)

// inferDeployment is an unlabelled inference Deployment of replicas pods in revision 2 (its
// ReplicaSet infer-5d4c7b9f8 holds that revision).
func inferDeployment(replicas int32) (*appsv1.Deployment, *appsv1.ReplicaSet, *corev1.Pod) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "infer", Namespace: ns, UID: "0f0f0f0f-0000-4000-8000-0000000000d1", ResourceVersion: "21",
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "2"}, CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC))},
		Spec:   appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "infer:2"}}}}},
		Status: appsv1.DeploymentStatus{ReadyReplicas: replicas, UpdatedReplicas: replicas, ObservedGeneration: 2},
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "infer-5d4c7b9f8", Namespace: ns, UID: "0f0f0f0f-0000-4000-8000-0000000000d2", ResourceVersion: "22",
			Labels:          map[string]string{"app": "infer", "pod-template-hash": "5d4c7b9f8"},
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": "2"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "infer", UID: d.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "infer-5d4c7b9f8-x2x4q", Namespace: ns, UID: "0f0f0f0f-0000-4000-8000-0000000000d3", ResourceVersion: "23",
			Labels:          map[string]string{"app": "infer", "pod-template-hash": "5d4c7b9f8"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "server"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	return d, rs, pod
}

// With no selector the collector observes every pod of its namespaces, labelled or not, and
// the Deployments, ReplicaSets and StatefulSets that own them: the replicas each wants and its
// revision, on every change.
func TestDefaultScopeObservesWorkloads(t *testing.T) {
	srv := natstest.Start(t)
	d, rs, pod := inferDeployment(3)
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kv", Namespace: ns, UID: "0f0f0f0f-0000-4000-8000-0000000000d4", ResourceVersion: "24"},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
		Status:     appsv1.StatefulSetStatus{UpdateRevision: "kv-6c9f7d", CurrentRevision: "kv-6c9f7d", ReadyReplicas: 2},
	}
	k := newCluster(t, []runtime.Object{d, rs, pod, sts}...)
	everything := ""
	startCollector(t, k, srv.URL(), testOpts{selector: &everything})

	workloads := func() map[string]events.WorkloadStatus {
		out := map[string]events.WorkloadStatus{}
		for _, e := range streamEnvelopes(t, srv.URL()) {
			if w, ok := e.Payload.(*events.WorkloadStatus); ok {
				out[w.Kind+"/"+w.Name+"@"+w.ResourceVersion] = *w
			}
		}
		return out
	}
	var got map[string]events.WorkloadStatus
	waitFor(t, 10*time.Second, "the workloads and the unlabelled pod", func() bool {
		got = workloads()
		return len(got) == 3 && len(ids(streamEnvelopes(t, srv.URL()), events.KindPodStatus)) == 1
	})
	created := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	want := map[string]events.WorkloadStatus{
		"Deployment/infer@21": {Kind: "Deployment", Namespace: ns, Name: "infer", UID: string(d.UID), Replicas: ptr.To[int32](3), Revision: "2",
			ReadyReplicas: 3, UpdatedReplicas: 3, ObservedGen: 2, CreationTimestamp: &created, ResourceVersion: "21"},
		"ReplicaSet/infer-5d4c7b9f8@22": {Kind: "ReplicaSet", Namespace: ns, Name: rs.Name, UID: string(rs.UID), Replicas: ptr.To[int32](3), Revision: "2",
			TemplateHash: "5d4c7b9f8", Owner: &events.Owner{Kind: "Deployment", Name: "infer"}, ResourceVersion: "22"},
		"StatefulSet/kv@24": {Kind: "StatefulSet", Namespace: ns, Name: "kv", UID: string(sts.UID), Replicas: ptr.To[int32](2), Revision: "kv-6c9f7d",
			TemplateHash: "kv-6c9f7d", CurrentRevision: "kv-6c9f7d", ReadyReplicas: 2, ResourceVersion: "24"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("workload_status (-want +got):\n%s", diff)
	}
	checkRBAC(t, k.client.Actions())

	// A scale-down is a new state; a deletion is a last one.
	d2 := d.DeepCopy()
	d2.Spec.Replicas, d2.ResourceVersion = ptr.To[int32](1), "31"
	if _, err := k.client.AppsV1().Deployments(ns).Update(context.Background(), d2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := k.client.AppsV1().StatefulSets(ns).Delete(context.Background(), "kv", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the scale-down and the deletion", func() bool {
		got = workloads()
		_, scaled := got["Deployment/infer@31"]
		return scaled && got["StatefulSet/kv@24"].Deleted
	})
	if w := got["Deployment/infer@31"]; w.Desired() != 1 {
		t.Errorf("after the scale-down the Deployment wants %d pods, want 1", w.Desired())
	}
	for key, w := range got {
		if w.Kind == "StatefulSet" && w.Deleted && w.Desired() != 0 {
			t.Errorf("%s: deleted, yet wants %d pods", key, w.Desired())
		}
	}
}

// A collector that may not list the workload controllers (RBAC from before their rules) still
// becomes ready and observes the pods: it logs the kinds it leaves out and watches the rest.
func TestWorkloadsForbiddenIsNotFatal(t *testing.T) {
	srv := natstest.Start(t)
	d, rs, pod := inferDeployment(3)
	k := newCluster(t, d, rs, pod)
	k.client.PrependReactor("list", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", errors.New("RBAC: access denied"))
	})
	everything := ""
	startCollector(t, k, srv.URL(), testOpts{selector: &everything})
	waitFor(t, 10*time.Second, "the pod and the ReplicaSet", func() bool {
		envs := streamEnvelopes(t, srv.URL())
		return len(ids(envs, events.KindPodStatus)) == 1 && len(ids(envs, events.KindWorkloadStatus)) == 1
	})
	for _, e := range streamEnvelopes(t, srv.URL()) {
		if w, ok := e.Payload.(*events.WorkloadStatus); ok && w.Kind != "ReplicaSet" {
			t.Errorf("published a %s, which it may not list", w.Kind)
		}
	}
}
