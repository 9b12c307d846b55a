// Package labenv starts the whole lab in this process: the control plane with its
// kube-controller-manager (controlplane.DefaultControllers, the fast node-failure settings), the
// GPU nodes of a cluster spec, the simulated kubelet posting their heartbeats, and the inference
// endpoints and dcgm-exporters.
package labenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/internal/dcgm"
	"github.com/schedlens/schedlens/lab/background"
	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/controlplane"
	"github.com/schedlens/schedlens/lab/endpoints"
	"github.com/schedlens/schedlens/lab/kubelet"
)

// Options configure a lab.
type Options struct {
	Dir    string        // control plane state (etcd, certs, kubeconfig, logs)
	Spec   *cluster.Spec // default: cluster.Default()
	Seed   uint64
	Speed  float64 // scales the simulated kubelet's delays (default 1)
	Logger *slog.Logger
}

// Lab is a running lab.
type Lab struct {
	*controlplane.ControlPlane
	Spec      *cluster.Spec
	Kubelet   *kubelet.Kubelet
	Endpoints *endpoints.Server

	cancel context.CancelFunc
	block  net.Listener     // holds the lab's address block against other labs on this machine
	parts  background.Group // the kubelet and the endpoints
}

// Start starts a lab and returns once its nodes are registered, Ready and untainted.
func Start(ctx context.Context, o Options) (*Lab, error) {
	if o.Spec == nil {
		o.Spec = cluster.Default()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cp, err := controlplane.Start(ctx, controlplane.Config{Dir: o.Dir, ControllerManager: &controlplane.ControllerManagerConfig{}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &Lab{ControlPlane: cp, Spec: o.Spec, cancel: cancel}
	block, lock, err := reserveBlock()
	if err != nil {
		l.Stop()
		return nil, err
	}
	l.block = lock
	if err := cluster.Create(ctx, cp.Client, o.Spec); err != nil {
		l.Stop()
		return nil, err
	}
	l.Kubelet = kubelet.New(cp.Client, o.Spec, kubelet.Config{Seed: o.Seed, Speed: o.Speed, IPBlock: block}, o.Logger.With("component", "kubelet"))
	l.Endpoints = endpoints.New(l.Kubelet, endpoints.Config{Seed: o.Seed}, o.Logger.With("component", "endpoints"))
	l.parts.Go("kubelet", func() error { return l.Kubelet.Run(ctx) })
	l.parts.Go("endpoints", func() error { return l.Endpoints.Run(ctx) })
	if err := l.waitNodesReady(ctx, 30*time.Second); err != nil {
		l.Stop()
		return nil, err
	}
	return l, nil
}

// waitNodesReady waits until every node of the spec is Ready and carries none of the node
// lifecycle controller's taints (node.kubernetes.io/…), so that the first pods see the whole
// cluster.
func (l *Lab) waitNodesReady(ctx context.Context, timeout time.Duration) error {
	want := len(l.Spec.Nodes())
	deadline := time.Now().Add(timeout)
	for {
		nodes, err := l.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
		ready := 0
		for _, n := range nodes.Items {
			if nodeUsable(&n) {
				ready++
			}
		}
		if ready >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d nodes Ready and untainted after %s", ready, want, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func nodeUsable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DCGMTargets lists every node's dcgm-exporter endpoint.
func (l *Lab) DCGMTargets() []dcgm.Target {
	var out []dcgm.Target
	for _, n := range l.Kubelet.Nodes() {
		if n.Ready && len(n.GPUs) > 0 {
			out = append(out, dcgm.Target{URL: "http://" + n.IP + ":9400/metrics", Node: n.Name})
		}
	}
	return out
}

// Err reports what stopped early, in the lab or its control plane.
func (l *Lab) Err() error {
	return errors.Join(l.parts.Err(), l.ControlPlane.Err())
}

// Stop stops the simulation, then the control plane.
func (l *Lab) Stop() {
	l.cancel()
	l.parts.Wait()
	l.ControlPlane.Stop()
	if l.block != nil {
		l.block.Close()
	}
}

// reserveBlock picks a block of four second octets of 127.0.0.0/8 no other lab on this machine
// uses, and holds it by listening on 127.B.255.254:65000 for as long as the lab runs.
func reserveBlock() (int, net.Listener, error) {
	start := rand.IntN(60)
	for i := range 60 {
		b := 8 + 4*((start+i)%60)
		l, err := net.Listen("tcp", fmt.Sprintf("127.%d.255.254:65000", b))
		if err == nil {
			return b, l, nil
		}
	}
	return 0, nil, errors.New("no free loopback address block for the lab (60 labs running?)")
}
