// Package disrupt disrupts the lab's workloads the way operators and failures do, through the
// real controllers of the lab's kube-controller-manager:
//   - a rollout: a change of a Deployment's pod template (as `kubectl set image` or `kubectl
//     rollout restart` make), rolled out by the Deployment controller into a new ReplicaSet;
//   - a drain: the node cordoned, then its pods evicted through the Eviction API (policy/v1),
//     retried while a PodDisruptionBudget refuses, as `kubectl drain` does; the ReplicaSet
//     replaces them elsewhere; the node is uncordoned once the Deployment is whole again;
//   - a node failure: the node's simulated kubelet stops its heartbeats; the node lifecycle
//     controller marks it NotReady and taints it unreachable, the taint-eviction controller
//     deletes its pods, the ReplicaSet replaces them; then the heartbeats resume and the node
//     rejoins.
//
// Each returns a Disruption saying what happened when, as observed through the API (polled
// every 50 ms). Workload runs all three on one unlabelled inference Deployment.
package disrupt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/wait"
)

// poll is how often the waits read the API.
const poll = 50 * time.Millisecond

// Nodes is what a node failure needs of the simulated kubelet (package kubelet).
type Nodes interface {
	// FailNode stops the node's heartbeats.
	FailNode(name string) error
	// RejoinNode resumes them.
	RejoinNode(ctx context.Context, name string) error
}

// Disruptor disrupts Deployments of a lab cluster.
type Disruptor struct {
	Client kubernetes.Interface
	// Nodes fails and rejoins nodes (NodeFailure only).
	Nodes Nodes
	// Timeout bounds each wait (default 60s).
	Timeout time.Duration
}

// Disruption is what one disruption did to a Deployment, with the times it was observed.
type Disruption struct {
	// Kind is report.DisruptionRollout, report.DisruptionDrain or report.DisruptionNodeFailure,
	// the kinds schedlens detects.
	Kind                  string
	Namespace, Deployment string
	// Node is the node drained or failed ("" for a rollout).
	Node string
	// Start: the template changed; the node cordoned; its heartbeats stopped.
	Start time.Time
	// NotReady is when the failed node was seen NotReady (node failure only).
	NotReady time.Time `json:",omitzero"`
	// Evicted is when the first pod was seen terminating (drain: its eviction accepted; node
	// failure: deleted by the taint-eviction controller).
	Evicted time.Time `json:",omitzero"`
	// Recovered is when the Deployment was whole again: every replica updated and Ready.
	Recovered time.Time
	// End: the rollout complete and its old pods gone; the node uncordoned; the node Ready again
	// with its evicted pods gone.
	End time.Time
	// Pods are the pods it took away, Replacements the pods created in their stead.
	Pods, Replacements []string
	// FromReplicaSet and ToReplicaSet are the rollout's old and new ReplicaSets.
	FromReplicaSet, ToReplicaSet string `json:",omitempty"`
}

func (d *Disruptor) timeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return 60 * time.Second
}

// until polls ok until it is true, ctx ends or the timeout passes; what names the wait in the
// error.
func (d *Disruptor) until(ctx context.Context, what string, ok func() (bool, error)) error {
	deadline := time.Now().Add(d.timeout())
	for {
		done, err := ok()
		if err != nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not after %s", what, d.timeout())
		}
		if !wait.Sleep(ctx, poll) {
			return ctx.Err()
		}
	}
}

// WaitComplete waits until the Deployment is whole: its latest template observed, every
// replica of it Ready and available, no pod of an older revision left (terminating ones
// included). It returns when it saw that.
func (d *Disruptor) WaitComplete(ctx context.Context, namespace, name string) (time.Time, error) {
	var at time.Time
	err := d.until(ctx, "deployment "+namespace+"/"+name+" complete", func() (bool, error) {
		dep, pods, ok, err := d.rolledOut(ctx, namespace, name)
		if !ok || err != nil {
			return false, err
		}
		if len(pods) != int(*dep.Spec.Replicas) {
			return false, nil
		}
		at = time.Now()
		return true, nil
	})
	return at, err
}

// rolledOut reads the Deployment and, when its status is complete, its pods; false while it is
// not.
func (d *Disruptor) rolledOut(ctx context.Context, namespace, name string) (*appsv1.Deployment, []corev1.Pod, bool, error) {
	dep, err := d.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || !complete(dep) {
		return dep, nil, false, err
	}
	pods, err := d.pods(ctx, dep)
	return dep, pods, err == nil, err
}

// complete says whether the Deployment's status shows its latest template rolled out to every
// replica, all available.
func complete(dep *appsv1.Deployment) bool {
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	s := dep.Status
	return s.ObservedGeneration >= dep.Generation && s.UpdatedReplicas == want && s.Replicas == want &&
		s.ReadyReplicas == want && s.AvailableReplicas == want
}

// replaced waits until the Deployment is whole again after losing pods: its status complete,
// as many pods not being deleted as it wants, every one Ready, at least minNew of them not
// among before (the replacements). It returns when it saw that.
func (d *Disruptor) replaced(ctx context.Context, namespace, name string, before map[types.UID]string, minNew int) (time.Time, error) {
	var at time.Time
	err := d.until(ctx, "deployment "+namespace+"/"+name+" whole again", func() (bool, error) {
		dep, pods, ok, err := d.rolledOut(ctx, namespace, name)
		if !ok || err != nil {
			return false, err
		}
		active, fresh := 0, 0
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				continue
			}
			if !podReady(&p) {
				return false, nil
			}
			active++
			if _, ok := before[p.UID]; !ok {
				fresh++
			}
		}
		if active != int(*dep.Spec.Replicas) || fresh < minNew {
			return false, nil
		}
		at = time.Now()
		return true, nil
	})
	return at, err
}

// podReady says whether the pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pods lists the Deployment's pods, by name.
func (d *Disruptor) pods(ctx context.Context, dep *appsv1.Deployment) ([]corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("selector of %s: %w", dep.Name, err)
	}
	l, err := d.Client.CoreV1().Pods(dep.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("list pods of %s: %w", dep.Name, err)
	}
	slices.SortFunc(l.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return l.Items, nil
}

// Pods lists the Deployment's pods by name: the pods its selector matches.
func (d *Disruptor) Pods(ctx context.Context, namespace, name string) ([]corev1.Pod, error) {
	dep, err := d.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get deployment %s: %w", name, err)
	}
	return d.pods(ctx, dep)
}

// Rollout changes the Deployment's pod template with change and waits until the Deployment
// controller has rolled it out: every replica of the new ReplicaSet Ready, the old pods gone.
func (d *Disruptor) Rollout(ctx context.Context, namespace, name string, change func(*corev1.PodTemplateSpec)) (Disruption, error) {
	out := Disruption{Kind: report.DisruptionRollout, Namespace: namespace, Deployment: name}
	old, err := d.Pods(ctx, namespace, name)
	if err != nil {
		return out, err
	}
	oldUIDs := uids(old)
	out.Pods = names(old)
	if out.FromReplicaSet, err = d.currentReplicaSet(ctx, namespace, name); err != nil {
		return out, err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep, err := d.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(&dep.Spec.Template)
		_, err = d.Client.AppsV1().Deployments(namespace).Update(ctx, dep, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return out, fmt.Errorf("change the template of %s: %w", name, err)
	}
	out.Start = time.Now()
	if out.Recovered, err = d.WaitComplete(ctx, namespace, name); err != nil {
		return out, err
	}
	if err := d.waitGone(ctx, namespace, oldUIDs); err != nil {
		return out, err
	}
	out.End = time.Now()
	if out.ToReplicaSet, err = d.currentReplicaSet(ctx, namespace, name); err != nil {
		return out, err
	}
	now, err := d.Pods(ctx, namespace, name)
	if err != nil {
		return out, err
	}
	out.Replacements = names(now)
	return out, nil
}

// currentReplicaSet names the ReplicaSet of the Deployment's current revision.
func (d *Disruptor) currentReplicaSet(ctx context.Context, namespace, name string) (string, error) {
	dep, err := d.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("get deployment %s: %w", name, err)
	}
	const revision = "deployment.kubernetes.io/revision"
	l, err := d.Client.AppsV1().ReplicaSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list replicasets: %w", err)
	}
	for _, rs := range l.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == dep.UID && rs.Annotations[revision] == dep.Annotations[revision] {
			return rs.Name, nil
		}
	}
	return "", fmt.Errorf("deployment %s: no replicaset of revision %s", name, dep.Annotations[revision])
}

// Drain cordons node, evicts the Deployment's pods on it through the Eviction API (retrying
// while a PodDisruptionBudget refuses, as kubectl drain does), waits until they are gone and
// the Deployment is whole again, and uncordons the node. Like `kubectl drain`, but limited to
// the Deployment's pods: the lab's other namespaces are left alone.
func (d *Disruptor) Drain(ctx context.Context, namespace, name, node string) (Disruption, error) {
	out := Disruption{Kind: report.DisruptionDrain, Namespace: namespace, Deployment: name, Node: node}
	if err := d.Cordon(ctx, node, true); err != nil {
		return out, err
	}
	out.Start = time.Now()
	uncordoned := false
	defer func() {
		if !uncordoned {
			_ = d.Cordon(context.WithoutCancel(ctx), node, false)
		}
	}()
	before, victims, err := d.onNode(ctx, namespace, name, node)
	if err != nil {
		return out, err
	}
	if len(victims) == 0 {
		return out, fmt.Errorf("drain %s: no pod of %s on it", node, name)
	}
	for _, p := range victims {
		if err := d.Evict(ctx, p); err != nil {
			return out, err
		}
		if out.Evicted.IsZero() {
			out.Evicted = time.Now()
		}
		out.Pods = append(out.Pods, p.Name)
	}
	if err := d.waitGone(ctx, namespace, uids(victims)); err != nil {
		return out, err
	}
	if out.Recovered, err = d.replaced(ctx, namespace, name, before, len(victims)); err != nil {
		return out, err
	}
	if out.Replacements, err = d.newPods(ctx, namespace, name, before); err != nil {
		return out, err
	}
	if err := d.Cordon(ctx, node, false); err != nil {
		return out, err
	}
	uncordoned = true
	out.End = time.Now()
	return out, nil
}

// Evict asks the API server to evict the pod (policy/v1 Eviction), retrying while a
// PodDisruptionBudget refuses (429) until the timeout. A pod already gone counts as evicted.
func (d *Disruptor) Evict(ctx context.Context, p corev1.Pod) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}}
	return d.until(ctx, "eviction of "+p.Name, func() (bool, error) {
		err := d.Client.CoreV1().Pods(p.Namespace).EvictV1(ctx, ev)
		switch {
		case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
			return true, nil
		case apierrors.IsTooManyRequests(err):
			return false, nil // a PodDisruptionBudget allows no disruption now
		}
		return false, fmt.Errorf("evict %s: %w", p.Name, err)
	})
}

// NodeFailure fails node (its heartbeats stop), waits until the node lifecycle controller marks
// it NotReady, the taint-eviction controller deletes the Deployment's pods on it and the
// ReplicaSet's replacements are Ready, then rejoins the node and waits until it is Ready,
// untainted, and its evicted pods are gone.
func (d *Disruptor) NodeFailure(ctx context.Context, namespace, name, node string) (Disruption, error) {
	out := Disruption{Kind: report.DisruptionNodeFailure, Namespace: namespace, Deployment: name, Node: node}
	if d.Nodes == nil {
		return out, errors.New("node failure: no simulated kubelet to stop")
	}
	before, victims, err := d.onNode(ctx, namespace, name, node)
	if err != nil {
		return out, err
	}
	out.Pods = names(victims)
	if len(victims) == 0 {
		return out, fmt.Errorf("node failure of %s: no pod of %s on it", node, name)
	}
	if err := d.Nodes.FailNode(node); err != nil {
		return out, err
	}
	out.Start = time.Now()
	rejoined := false
	defer func() {
		if !rejoined {
			_ = d.Nodes.RejoinNode(context.WithoutCancel(ctx), node)
		}
	}()
	err = d.until(ctx, "node "+node+" NotReady", func() (bool, error) {
		n, err := d.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeReady(n) != corev1.ConditionTrue, nil
	})
	if err != nil {
		return out, err
	}
	out.NotReady = time.Now()
	err = d.until(ctx, "pods on "+node+" evicted", func() (bool, error) {
		for _, v := range victims {
			p, err := d.Client.CoreV1().Pods(namespace).Get(ctx, v.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return false, err
			}
			if p.UID == v.UID && p.DeletionTimestamp == nil {
				return false, nil
			}
			if out.Evicted.IsZero() {
				out.Evicted = time.Now()
			}
		}
		return true, nil
	})
	if err != nil {
		return out, err
	}
	if out.Recovered, err = d.replaced(ctx, namespace, name, before, len(victims)); err != nil {
		return out, err
	}
	if out.Replacements, err = d.newPods(ctx, namespace, name, before); err != nil {
		return out, err
	}
	rejoined = true
	if err := d.Nodes.RejoinNode(ctx, node); err != nil {
		return out, err
	}
	if err := d.WaitNodeReady(ctx, node); err != nil {
		return out, err
	}
	if err := d.waitGone(ctx, namespace, uids(victims)); err != nil {
		return out, err
	}
	out.End = time.Now()
	return out, nil
}

// WaitNodeReady waits until the node is Ready and carries none of the node lifecycle
// controller's taints (not-ready, unreachable), so pods can be scheduled on it again.
func (d *Disruptor) WaitNodeReady(ctx context.Context, node string) error {
	return d.until(ctx, "node "+node+" Ready", func() (bool, error) {
		n, err := d.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if nodeReady(n) != corev1.ConditionTrue {
			return false, nil
		}
		for _, t := range n.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
				return false, nil
			}
		}
		return true, nil
	})
}

func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// Cordon marks the node unschedulable (or schedulable again), as kubectl cordon does.
func (d *Disruptor) Cordon(ctx context.Context, node string, unschedulable bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := d.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Unschedulable = unschedulable
		_, err = d.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("cordon %s: %w", node, err)
	}
	return nil
}

// waitGone waits until none of the pods (by UID) exists any more.
func (d *Disruptor) waitGone(ctx context.Context, namespace string, gone map[types.UID]string) error {
	return d.until(ctx, "pods gone", func() (bool, error) {
		for uid, name := range gone {
			p, err := d.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return false, err
			}
			if p.UID == uid {
				return false, nil
			}
		}
		return true, nil
	})
}

// newPods names the Deployment's pods that were not among before.
func (d *Disruptor) newPods(ctx context.Context, namespace, name string, before map[types.UID]string) ([]string, error) {
	pods, err := d.Pods(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods {
		if _, ok := before[p.UID]; !ok && p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	return out, nil
}

// onNode lists the workload's pods (by UID, to tell replacements later) and those of them on node
// that are not already being deleted.
func (d *Disruptor) onNode(ctx context.Context, namespace, name, node string) (map[types.UID]string, []corev1.Pod, error) {
	pods, err := d.Pods(ctx, namespace, name)
	if err != nil {
		return nil, nil, err
	}
	var victims []corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName == node && p.DeletionTimestamp == nil {
			victims = append(victims, p)
		}
	}
	return uids(pods), victims, nil
}

func uids(pods []corev1.Pod) map[types.UID]string {
	out := map[types.UID]string{}
	for _, p := range pods {
		out[p.UID] = p.Name
	}
	return out
}

func names(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
