package experiment

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/wait"
	"github.com/schedlens/schedlens/lab/disrupt"
)

// disruptionPods is how many pods each disruption scenario runs.
const disruptionPods = 2

// disruption runs one scenario of run on the baseline arm's rules, through the real controllers:
// a Deployment of disruptionPods replicas whose pods are labelled with the scenario as their arm
// (and schedlens.io/scenario), so they never mix with the arms compared, rolled out surge first
// (maxSurge 1, maxUnavailable 0), then disrupted (package disrupt):
//   - rolling-update: a template change (the restartedAt annotation `kubectl rollout restart`
//     sets) rolled out into a new ReplicaSet;
//   - drain: the node of the first pod (by name) cordoned, its pods evicted through the Eviction
//     API, replaced by the ReplicaSet, the node uncordoned;
//   - node-rejoin: the node of the first pod stops its heartbeats until the node lifecycle
//     controller marks it NotReady, the taint-eviction controller deletes its pods and their
//     replacements are Ready; then it rejoins.
//
// The Deployment is deleted after (its ReplicaSets and pods by the garbage collector).
func (r *Runner) disruption(ctx context.Context, d *Definition, scenario string, run int) error {
	base := d.Arms[0]
	for _, a := range d.Arms {
		if a.Name == d.Baseline {
			base = a
		}
	}
	base.Background = nil
	start := time.Now()
	report := func(phase string, ready, of int) {
		r.Progress(Progress{Run: run, Runs: d.Repeats, Arm: scenario, Phase: phase, Ready: ready, Of: of, Elapsed: time.Since(start)})
	}
	dep := d.Deployment(base, scenario, r.Namespace, run, disruptionPods)
	if _, err := r.Client.AppsV1().Deployments(r.Namespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create deployment %s: %w", dep.Name, err)
	}
	report("starting", 0, disruptionPods)
	dis := &disrupt.Disruptor{Client: r.Client, Nodes: r.Nodes, Timeout: r.Timeout}
	if _, err := dis.WaitComplete(ctx, r.Namespace, dep.Name); err != nil {
		return err
	}
	// Serve in the steady state a while first: interruptions are measured against it.
	if !wait.Sleep(ctx, r.Hold) {
		return ctx.Err()
	}
	report("disrupting", disruptionPods, disruptionPods)
	var err error
	switch scenario {
	case RollingUpdate:
		_, err = dis.Rollout(ctx, r.Namespace, dep.Name, func(t *corev1.PodTemplateSpec) {
			if t.Annotations == nil {
				t.Annotations = map[string]string{}
			}
			t.Annotations[AnnotationRestartedAt] = time.Now().UTC().Format(time.RFC3339)
		})
	case Drain, NodeRejoin:
		var pods []corev1.Pod
		if pods, err = dis.Pods(ctx, r.Namespace, dep.Name); err != nil {
			return err
		}
		if len(pods) == 0 {
			return fmt.Errorf("%s: deployment %s has no pod", scenario, dep.Name)
		}
		if scenario == Drain {
			_, err = dis.Drain(ctx, r.Namespace, dep.Name, pods[0].Spec.NodeName)
		} else {
			_, err = dis.NodeFailure(ctx, r.Namespace, dep.Name, pods[0].Spec.NodeName)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", scenario, err)
	}
	if !wait.Sleep(ctx, r.Hold) {
		return ctx.Err()
	}
	report("cleaning", disruptionPods, disruptionPods)
	if err := r.deleteDeployment(ctx, dep); err != nil {
		return err
	}
	report("done", disruptionPods, disruptionPods)
	return nil
}

// AnnotationRestartedAt is the pod template annotation `kubectl rollout restart` sets; changing
// it rolls a Deployment out without changing what its pods run.
const AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

// Deployment is the Deployment of a disruption scenario: replicas pods of the fixed workload
// under arm's rules, labelled with the scenario as their arm and schedlens.io/scenario, named
// <experiment>-<scenario>-r<run>, rolled out surge first (maxSurge 1, maxUnavailable 0).
func (d *Definition) Deployment(arm Arm, scenario, namespace string, run, replicas int) *appsv1.Deployment {
	p := d.pod(arm, scenario, namespace, run, "")
	p.Labels[events.LabelScenario] = scenario
	selector := map[string]string{events.LabelExperiment: d.Name, events.LabelArm: scenario, events.LabelRun: strconv.Itoa(run)}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-r%d", d.Name, scenario, run), Namespace: namespace, Labels: maps.Clone(selector)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &zero}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels, Annotations: p.Annotations}, Spec: p.Spec},
		},
	}
}

// deleteDeployment deletes a Deployment in the foreground (its ReplicaSets and pods first,
// finished by the simulated kubelet) and waits until its pods are gone.
func (r *Runner) deleteDeployment(ctx context.Context, dep *appsv1.Deployment) error {
	err := r.Client.AppsV1().Deployments(r.Namespace).Delete(ctx, dep.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete deployment %s: %w", dep.Name, err)
	}
	sel := labels.SelectorFromSet(dep.Spec.Selector.MatchLabels).String()
	deadline := time.Now().Add(60 * time.Second)
	for {
		l, err := r.Client.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return fmt.Errorf("list pods of %s: %w", dep.Name, err)
		}
		if len(l.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pods of deployment %s not gone after 60s", dep.Name)
		}
		if !wait.Sleep(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
}

func (r *Runner) waitGone(ctx context.Context, name string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := r.Client.CoreV1().Pods(r.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pod %s not gone after 60s", name)
		}
		if !wait.Sleep(ctx, 50*time.Millisecond) {
			return ctx.Err()
		}
	}
}
