package experiment

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/wait"
)

// disruptionPods is how many pods each disruption scenario runs.
const disruptionPods = 2

// disruption runs one scenario of run on the baseline arm's rules. Its pods are labelled with the
// scenario as their arm (and schedlens.io/scenario), so they never mix with the arms compared.
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
	mk := func(name string) *corev1.Pod {
		p := r.pod(d, base, scenario, run, name)
		p.Labels[events.LabelScenario] = scenario
		return p
	}
	var names []string
	for i := 1; i <= disruptionPods; i++ {
		name := fmt.Sprintf("%s-%s-r%d-%d", d.Name, scenario, run, i)
		if err := r.create(ctx, mk(name)); err != nil {
			return err
		}
		names = append(names, name)
	}
	report("starting", 0, len(names))
	if _, err := r.waitReady(ctx, names, r.Timeout, func(n int) { report("waiting", n, len(names)) }); err != nil {
		return err
	}
	// Serve in the steady state a while first: interruptions are measured against it.
	if !wait.Sleep(ctx, r.Hold) {
		return ctx.Err()
	}
	report("disrupting", len(names), len(names))
	live := names
	var err error
	switch scenario {
	case RollingUpdate:
		live, err = r.rollingUpdate(ctx, names, mk)
	case Drain:
		live, err = r.drain(ctx, names, mk)
	case NodeRejoin:
		err = r.nodeRejoin(ctx, names)
	}
	if err != nil {
		return err
	}
	if !wait.Sleep(ctx, r.Hold) {
		return ctx.Err()
	}
	report("cleaning", len(live), len(live))
	if err := r.deleteAll(ctx, live); err != nil {
		return err
	}
	report("done", len(live), len(live))
	return nil
}

// rollingUpdate replaces each pod by a new revision, one at a time, surge first (maxSurge 1,
// maxUnavailable 0): the new pod must be Ready before the old one is deleted.
func (r *Runner) rollingUpdate(ctx context.Context, names []string, mk func(string) *corev1.Pod) ([]string, error) {
	var next []string
	for _, old := range names {
		name := old + "-v2"
		if err := r.create(ctx, mk(name)); err != nil {
			return nil, err
		}
		if _, err := r.waitReady(ctx, []string{name}, r.Timeout, nil); err != nil {
			return nil, err
		}
		if err := r.deleteAll(ctx, []string{old}); err != nil {
			return nil, err
		}
		next = append(next, name)
	}
	return next, nil
}

// drain cordons the node of the first pod, evicts every scenario pod on it, and (playing the
// ReplicaSet) creates a replacement for each once it is gone; the node is uncordoned after.
func (r *Runner) drain(ctx context.Context, names []string, mk func(string) *corev1.Pod) ([]string, error) {
	pods := map[string]*corev1.Pod{}
	for _, n := range names {
		p, err := r.Client.CoreV1().Pods(r.Namespace).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		pods[n] = p
	}
	node := pods[names[0]].Spec.NodeName
	if err := r.cordon(ctx, node, true); err != nil {
		return nil, err
	}
	defer r.cordon(context.WithoutCancel(ctx), node, false)
	var live, evicted []string
	for _, n := range names {
		if pods[n].Spec.NodeName != node {
			live = append(live, n)
			continue
		}
		if err := r.evict(ctx, n); err != nil {
			return nil, err
		}
		evicted = append(evicted, n)
	}
	for _, n := range evicted {
		if err := r.waitGone(ctx, n); err != nil {
			return nil, err
		}
		if err := r.create(ctx, mk(n+"-r")); err != nil {
			return nil, err
		}
		live = append(live, n+"-r")
	}
	if _, err := r.waitReady(ctx, live, r.Timeout, nil); err != nil {
		return nil, err
	}
	return live, nil
}

// nodeRejoin takes the node of the first pod NotReady for a while, then back.
func (r *Runner) nodeRejoin(ctx context.Context, names []string) error {
	if r.Nodes == nil {
		return fmt.Errorf("no node controller for %s", NodeRejoin)
	}
	p, err := r.Client.CoreV1().Pods(r.Namespace).Get(ctx, names[0], metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := r.Nodes.SetNodeReady(ctx, p.Spec.NodeName, false); err != nil {
		return err
	}
	if !wait.Sleep(ctx, 2*r.Hold) {
		return ctx.Err()
	}
	if err := r.Nodes.SetNodeReady(ctx, p.Spec.NodeName, true); err != nil {
		return err
	}
	_, err = r.waitReady(ctx, names, r.Timeout, nil)
	return err
}

func (r *Runner) cordon(ctx context.Context, node string, unschedulable bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := r.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Unschedulable = unschedulable
		_, err = r.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
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
