package simulate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlens/schedlens/internal/wait"
	"github.com/schedlens/schedlens/lab/preflight"
)

// created is a pod the run created and what it belongs to.
type created struct {
	key      string // namespace/name
	uid      types.UID
	workload *preflight.Workload
	seen     bool // the informer has had it
}

const poll = 40 * time.Millisecond

// group places one group's workloads and reads what happened, then removes them.
func (r *run) group(ctx context.Context, g preflight.SimInputGroup) (*preflight.SimGroup, error) {
	t0 := time.Now()
	existing, err := r.restoreExisting(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.canary(ctx); err != nil {
		return nil, err
	}
	undo, err := r.owners(ctx, g)
	if err != nil {
		return nil, err
	}
	defer undo()
	if err := r.groupClaims(ctx); err != nil {
		return nil, err
	}
	var all []*created
	for _, w := range g.Workloads {
		var batch []*created
		for _, p := range w.Pods() {
			q := sanitizePod(p)
			q.Spec.NodeName = p.Spec.NodeName
			got, err := r.s.client.CoreV1().Pods(q.Namespace).Create(ctx, q, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("create pod %s/%s: %w", q.Namespace, q.Name, err)
			}
			c := &created{key: got.Namespace + "/" + got.Name, uid: got.UID, workload: w}
			r.mu.Lock()
			r.uids[got.UID] = c.key
			r.mu.Unlock()
			batch = append(batch, c)
		}
		all = append(all, batch...)
		if err := r.wait(ctx, batch, 0); err != nil {
			return nil, err
		}
	}
	if err := r.wait(ctx, all, r.s.Settle); err != nil {
		return nil, err
	}

	res := &preflight.SimGroup{Name: g.Name, Pods: []preflight.SimPod{}, Preempted: []preflight.SimVictim{}}
	for _, c := range all {
		ns, name, _ := strings.Cut(c.key, "/")
		sp := preflight.SimPod{Namespace: ns, Name: name, Workload: c.workload.Ref()}
		if fs := r.eventsFor(c.uid, "FailedScheduling"); len(fs) > 0 {
			sp.Message = fs[len(fs)-1].Note
		}
		p := r.current(c)
		switch {
		case p == nil:
			sp.Status = preflight.PodPreempted
		case p.Spec.NodeName != "":
			sp.Status, sp.Node = preflight.PodScheduled, p.Spec.NodeName
			if n := r.nodes[p.Spec.NodeName]; n != nil && r.in.Pool != nil {
				sp.Pool = r.in.Pool(n)
			}
			sp.GPUModel, sp.Sharing = r.gpuOf(p)
		default:
			sp.Status = preflight.PodPending
		}
		res.Pods = append(res.Pods, sp)
	}
	victims := map[types.UID]bool{}
	for uid := range existing {
		victims[uid] = true
	}
	for _, c := range all {
		victims[c.uid] = true
	}
	for uid := range victims {
		evs := r.eventsFor(uid, "Preempted")
		if len(evs) == 0 {
			continue
		}
		v := preflight.SimVictim{Existing: existing[uid] != ""}
		key := existing[uid]
		if key == "" {
			r.mu.Lock()
			key = r.uids[uid]
			r.mu.Unlock()
		}
		v.Namespace, v.Name, _ = strings.Cut(key, "/")
		// "Preempted by pod <uid> on node <node>"
		note := evs[len(evs)-1].Note
		if f := strings.Fields(note); len(f) >= 7 && f[0] == "Preempted" {
			r.mu.Lock()
			v.PreemptedBy = r.uids[types.UID(f[3])]
			r.mu.Unlock()
			v.Node = f[len(f)-1]
		}
		res.Preempted = append(res.Preempted, v)
	}
	sortVictims(res.Preempted)
	if err := r.remove(ctx, all); err != nil {
		return nil, err
	}
	if err := r.removeClaims(ctx); err != nil {
		return nil, err
	}
	res.Seconds = time.Since(t0).Seconds()
	return res, nil
}

// current is the pod as the informer has it, nil once it is gone (preempted or deleted).
func (r *run) current(c *created) *corev1.Pod {
	o, ok, _ := r.pods.GetByKey(c.key)
	if !ok {
		return nil
	}
	p := o.(*corev1.Pod)
	if p.UID != c.uid {
		return nil
	}
	return p
}

// decided reports whether the scheduler has made up its mind about a pod: bound, gone, or
// unschedulable with no preemption under way.
func (r *run) decided(c *created) bool {
	o, ok, _ := r.pods.GetByKey(c.key)
	if ok && o.(*corev1.Pod).UID == c.uid {
		c.seen = true
	}
	if !c.seen {
		return false
	}
	p := r.current(c)
	if p == nil {
		return true
	}
	if p.DeletionTimestamp != nil {
		return false
	}
	if p.Spec.NodeName != "" {
		return true
	}
	fs := r.eventsFor(c.uid, "FailedScheduling")
	if len(fs) == 0 || p.Status.NominatedNodeName != "" {
		return false
	}
	return !strings.Contains(fs[len(fs)-1].Note, "preempting")
}

// wait waits until every pod is decided and nothing is terminating, then for quiet: the same
// state for that long. It gives up after the run's timeout: pods undecided then are reported as
// they are.
func (r *run) wait(ctx context.Context, pods []*created, quiet time.Duration) error {
	deadline := time.Now().Add(r.timeout)
	var last string
	var since time.Time
	for {
		state, done := r.state(pods)
		if done {
			if state != last {
				last, since = state, time.Now()
			}
			if time.Since(since) >= quiet {
				return nil
			}
		} else {
			last = ""
		}
		if time.Now().After(deadline) {
			r.s.logger.Warn("simulation: pods undecided at the timeout", "timeout", r.timeout)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// state fingerprints the pods (node, nomination, events seen) and says whether all are decided
// and no pod anywhere is terminating.
func (r *run) state(pods []*created) (string, bool) {
	var b strings.Builder
	done := true
	for _, c := range pods {
		if !r.decided(c) {
			done = false
		}
		if p := r.current(c); p != nil {
			fmt.Fprintf(&b, "%s=%s/%s/%d;", c.key, p.Spec.NodeName, p.Status.NominatedNodeName, len(r.eventsFor(c.uid, "FailedScheduling")))
		} else {
			fmt.Fprintf(&b, "%s=gone;", c.key)
		}
	}
	for _, o := range r.pods.List() {
		if o.(*corev1.Pod).DeletionTimestamp != nil {
			done = false
		}
	}
	return b.String(), done
}

// restoreExisting makes the cluster's running pods exist as they were (re-creating those a
// previous group preempted), and returns their UIDs.
func (r *run) restoreExisting(ctx context.Context) (map[types.UID]string, error) {
	out := map[types.UID]string{}
	var want []*created
	for key, p := range r.existing {
		if o, ok, _ := r.pods.GetByKey(key); ok && o.(*corev1.Pod).DeletionTimestamp == nil {
			out[o.(*corev1.Pod).UID] = key
			continue
		}
		if err := r.waitGone(ctx, key); err != nil {
			return nil, err
		}
		got, err := r.s.client.CoreV1().Pods(p.Namespace).Create(ctx, p.DeepCopy(), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("create running pod %s: %w", key, err)
		}
		out[got.UID] = key
		want = append(want, &created{key: key, uid: got.UID})
	}
	deadline := time.Now().Add(r.timeout)
	for _, c := range want {
		for r.current(c) == nil {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("running pod %s not seen after %s", c.key, r.timeout)
			}
			if !wait.Sleep(ctx, poll) {
				return nil, ctx.Err()
			}
		}
	}
	return out, nil
}

// canary binds a pod that asks for nothing and tolerates everything on the last node, and
// removes it: once it is bound the scheduler has seen every node and running pod created before.
func (r *run) canary(ctx context.Context) error {
	if len(r.in.Nodes) == 0 {
		return nil
	}
	last := r.in.Nodes[len(r.in.Nodes)-1].Name
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "preflight-canary-", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{last}}}}},
			}}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "canary", Image: "preflight-canary"}},
		},
	}
	got, err := r.s.client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create canary pod: %w", err)
	}
	c := &created{key: got.Namespace + "/" + got.Name, uid: got.UID}
	deadline := time.Now().Add(min(r.timeout, 20*time.Second))
	for {
		if p := r.current(c); p != nil && p.Spec.NodeName != "" {
			break
		}
		if time.Now().After(deadline) {
			r.s.logger.Warn("simulation: the canary pod was not bound; going on", "node", last)
			break
		}
		if !wait.Sleep(ctx, poll) {
			return ctx.Err()
		}
	}
	return r.remove(ctx, []*created{c})
}

// remove deletes pods at once (grace 0) and waits until the informer no longer has them.
func (r *run) remove(ctx context.Context, pods []*created) error {
	zero := int64(0)
	for _, c := range pods {
		ns, name, _ := strings.Cut(c.key, "/")
		err := r.s.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &c.uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete pod %s: %w", c.key, err)
		}
	}
	deadline := time.Now().Add(r.timeout)
	for _, c := range pods {
		for r.current(c) != nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("pod %s still there after %s", c.key, r.timeout)
			}
			if !wait.Sleep(ctx, poll) {
				return ctx.Err()
			}
		}
	}
	return nil
}

// waitGone waits until no pod of that key exists (a terminating one is being reaped).
func (r *run) waitGone(ctx context.Context, key string) error {
	deadline := time.Now().Add(r.timeout)
	for {
		if _, ok, _ := r.pods.GetByKey(key); !ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pod %s still terminating after %s", key, r.timeout)
		}
		if !wait.Sleep(ctx, poll) {
			return ctx.Err()
		}
	}
}

func sortVictims(vs []preflight.SimVictim) {
	slices.SortFunc(vs, func(a, b preflight.SimVictim) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
}
