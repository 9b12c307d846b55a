package kubelet

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/schedlens/schedlens/lab/cluster"
)

// Node heartbeats, as a real kubelet posts them: the node's Lease in kube-node-lease renewed
// every Config.Heartbeat (a real kubelet: 10 s) and its NodeStatus — the four conditions with a
// fresh lastHeartbeatTime — every Config.StatusEvery (a real kubelet: on change, else 5 min). The
// node lifecycle controller counts a node alive while either changes within its grace period.
//
// FailNode stops them, as a node that lost power or its network: no heartbeats, no pod status,
// no deletions finished; the node's containers go on locally. RejoinNode resumes them: Ready at
// once, then the node catches up with its pods (the status they reached meanwhile, readiness the
// controller took away, deletions requested meanwhile, pods bound to it meanwhile).

// Default heartbeat intervals, in real time (Config.Speed does not scale them: the controller's
// grace period is real time too).
const (
	defaultHeartbeat   = time.Second
	defaultStatusEvery = 10 * time.Second
)

func (c Config) heartbeat() time.Duration {
	if c.Heartbeat > 0 {
		return c.Heartbeat
	}
	return defaultHeartbeat
}

func (c Config) statusEvery() time.Duration {
	if c.StatusEvery > 0 {
		return c.StatusEvery
	}
	return defaultStatusEvery
}

// heartbeats posts every node's status once, then renews each node's Lease and status in a
// goroutine of its own until ctx ends.
func (k *Kubelet) heartbeats(ctx context.Context) {
	var wg sync.WaitGroup
	for _, nd := range k.nodeList() {
		wg.Go(func() { k.beat(ctx, nd) })
	}
	wg.Wait()
}

func (k *Kubelet) nodeList() []*node {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]*node, 0, len(k.nodes))
	for _, nd := range k.nodes {
		out = append(out, nd)
	}
	return out
}

// beat is one node's heartbeat loop.
func (k *Kubelet) beat(ctx context.Context, nd *node) {
	if err := k.postStatus(ctx, nd); err != nil && ctx.Err() == nil {
		k.logger.Warn("node status", "node", nd.name, "error", err)
	}
	k.renewLease(ctx, nd)
	lease := time.NewTicker(k.cfg.heartbeat())
	defer lease.Stop()
	status := time.NewTicker(k.cfg.statusEvery())
	defer status.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lease.C:
			k.renewLease(ctx, nd)
		case <-status.C:
			if k.alive(nd) {
				if err := k.postStatus(ctx, nd); err != nil && ctx.Err() == nil {
					k.logger.Warn("node status", "node", nd.name, "error", err)
				}
			}
		}
	}
}

func (k *Kubelet) alive(nd *node) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !nd.failed
}

// renewLease creates or renews the node's Lease, as the kubelet's node lease controller does:
// holder the node, owned by the Node (the garbage collector deletes it with the Node). A failed
// renewal is retried at the next tick.
func (k *Kubelet) renewLease(ctx context.Context, nd *node) {
	k.mu.Lock()
	l, failed := nd.lease, nd.failed
	k.mu.Unlock()
	if failed {
		return
	}
	now := metav1.NowMicro()
	var err error
	if l == nil {
		l, err = k.createLease(ctx, nd, now)
	} else {
		next := l.DeepCopy()
		next.Spec.RenewTime = &now
		l, err = k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, next, metav1.UpdateOptions{})
	}
	if err != nil {
		l = nil // read again (or created) at the next tick
		if ctx.Err() == nil {
			k.logger.Debug("renew lease", "node", nd.name, "error", err)
		}
	}
	k.mu.Lock()
	nd.lease = l
	k.mu.Unlock()
}

// createLease creates the node's Lease, or reads the one that exists.
func (k *Kubelet) createLease(ctx context.Context, nd *node, now metav1.MicroTime) (*coordinationv1.Lease, error) {
	leases := k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	n, err := k.client.CoreV1().Nodes().Get(ctx, nd.name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get node: %w", err)
	}
	l, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: nd.name, Namespace: corev1.NamespaceNodeLease, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID,
		}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(nd.name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return leases.Get(ctx, nd.name, metav1.GetOptions{})
	}
	return l, err
}

// postStatus writes the node's conditions with a fresh heartbeat, keeping the transition time
// of a condition whose status did not change.
func (k *Kubelet) postStatus(ctx context.Context, nd *node) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := k.client.CoreV1().Nodes().Get(ctx, nd.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		want := cluster.NodeConditions(now)
		for i := range want {
			for _, c := range n.Status.Conditions {
				if c.Type == want[i].Type && c.Status == want[i].Status && !c.LastTransitionTime.IsZero() {
					want[i].LastTransitionTime = c.LastTransitionTime
				}
			}
		}
		for _, c := range n.Status.Conditions {
			if !hasCondition(want, c.Type) {
				want = append(want, c)
			}
		}
		n.Status.Conditions = want
		_, err = k.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

func hasCondition(cs []corev1.NodeCondition, t corev1.NodeConditionType) bool {
	for _, c := range cs {
		if c.Type == t {
			return true
		}
	}
	return false
}

// FailNode stops the node's heartbeats and everything its kubelet writes, as a node that lost
// power or its network would: after the controller manager's grace period the node is
// NotReady (Unknown), tainted unreachable, and its pods are evicted. Its pods lose readiness in
// the simulation at once (their endpoints answer 503; its dcgm-exporter stops).
func (k *Kubelet) FailNode(name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	nd := k.nodes[name]
	if nd == nil {
		return fmt.Errorf("no simulated node %s", name)
	}
	nd.failed = true
	return nil
}

// RejoinNode resumes the node's heartbeats: it posts Ready at once and renews its Lease, then
// catches up with its pods — the status each reached meanwhile and the readiness the node
// lifecycle controller took away, the deletions requested meanwhile (the pods the taint-eviction
// controller deleted are removed now), and the pods bound to it meanwhile.
func (k *Kubelet) RejoinNode(ctx context.Context, name string) error {
	k.mu.Lock()
	nd := k.nodes[name]
	if nd == nil {
		k.mu.Unlock()
		return fmt.Errorf("no simulated node %s", name)
	}
	if !nd.failed {
		k.mu.Unlock()
		return nil
	}
	nd.failed = false
	store := k.store
	k.mu.Unlock()
	if err := k.postStatus(ctx, nd); err != nil {
		return fmt.Errorf("node %s status: %w", name, err)
	}
	k.renewLease(ctx, nd)
	// Deletions requested and pods bound meanwhile first, so that a pod being deleted is not
	// brought back to Ready.
	if store != nil {
		for _, obj := range store.List() {
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == name {
				k.observe(p)
			}
		}
	}
	k.mu.Lock()
	var known []*pod
	for _, st := range k.pods {
		if st.node == nd && !st.deleting {
			known = append(known, st)
		}
	}
	k.mu.Unlock()
	for _, st := range known {
		k.catchUp(st)
	}
	return nil
}

// catchUp writes what happened to a pod while its node was away: the status changes it could
// not write, then its readiness as the kubelet sees it (the controller marked it not Ready).
func (k *Kubelet) catchUp(st *pod) {
	k.mu.Lock()
	pending := st.pending
	st.pending = nil
	ready, running := st.ready, st.running
	k.mu.Unlock()
	if len(pending) == 0 && !running {
		return
	}
	now := metav1.Now()
	k.updateStatus(st, func(p *corev1.Pod) {
		for _, m := range pending {
			m(p)
		}
		if running {
			status, reason := corev1.ConditionFalse, "ContainersNotReady"
			if ready {
				status, reason = corev1.ConditionTrue, ""
			}
			setCondition(p, corev1.ContainersReady, status, reason, now)
			setCondition(p, corev1.PodReady, status, reason, now)
		}
	})
}
