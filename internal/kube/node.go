package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/schedlens/schedlens/internal/events"
)

// NodeStatus converts a node to a node_status payload: labels, taints, unschedulable, ready (the
// Ready condition is True), allocatable and capacity as canonical quantity strings.
func NodeStatus(node *corev1.Node) events.NodeStatus {
	ns := events.NodeStatus{
		Labels:         cloneMap(node.Labels),
		Unschedulable:  node.Spec.Unschedulable,
		Allocatable:    quantityStrings(node.Status.Allocatable),
		Capacity:       quantityStrings(node.Status.Capacity),
		KubeletVersion: node.Status.NodeInfo.KubeletVersion,
	}
	for _, t := range node.Spec.Taints {
		ns.Taints = append(ns.Taints, events.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ns.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return ns
}

// NodeEnvelope wraps NodeStatus in a node_status envelope: id "node_status/<name>/<resourceVersion>"
// (+ "/deleted" for the snapshot taken at deletion), node the node's name, no pod, occurred_at and
// observed_at the snapshot time m.Observed.
func NodeEnvelope(node *corev1.Node, deleted bool, m Meta) (*events.Envelope, error) {
	ns := NodeStatus(node)
	ns.Deleted = deleted
	id := joinID(string(events.KindNodeStatus), node.Name, node.ResourceVersion) + deletedSuffix(deleted)
	env, err := envelope(events.KindNodeStatus, id, m.Observed, nil, node.Name, nil, &ns, m)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node.Name, err)
	}
	return env, nil
}
