package collector

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"

	"github.com/schedlens/schedlens/internal/kube"
)

// Resync publishes the whole current state again — every node, pod, event about a known pod
// or node, workload controller, experiment ConfigMap, label registry, and an inventory per scope — waiting for buffer room. Ids
// make it idempotent: JetStream and Postgres drop what they already hold. Call it only once
// Ready.
func (c *Collector) Resync(ctx context.Context) error {
	c.resyncMu.Lock()
	defer c.resyncMu.Unlock()
	c.m.resyncs.Inc()
	for _, obj := range c.nodes.GetStore().List() {
		if node, ok := obj.(*corev1.Node); ok {
			env, err := kube.NodeEnvelope(node, false, c.meta(nil))
			if err != nil {
				c.convertError("node", node.Name, err)
				continue
			}
			if err := c.pub.Put(ctx, env); err != nil {
				return err
			}
		}
	}
	for _, sw := range c.scopes {
		for _, obj := range sw.pods.GetStore().List() {
			_, env, ok := c.podEnvelope(sw, obj, false)
			if !ok {
				continue
			}
			if err := c.pub.Put(ctx, env); err != nil {
				return err
			}
		}
		if err := c.inventory(ctx, sw); err != nil {
			return err
		}
		for _, obj := range sw.events.GetStore().List() {
			ev, ok := obj.(*eventsv1.Event)
			if !ok {
				continue
			}
			c.mu.Lock()
			_, known := c.known[ev.Regarding.UID]
			c.mu.Unlock()
			if ev.Regarding.Kind == "Node" || (ev.Regarding.Kind == "Pod" && known) {
				env, ok, err := kube.EventEnvelope(ev, c.meta(sw))
				if err != nil || !ok {
					continue
				}
				if err := c.pub.Put(ctx, env); err != nil {
					return err
				}
			}
		}
		for _, obj := range sw.registries.GetStore().List() {
			if env, ok := c.labelRegistryEnvelope(sw, obj, false); ok {
				if err := c.pub.Put(ctx, env); err != nil {
					return err
				}
			}
		}
		for _, inf := range sw.workloads {
			for _, obj := range inf.GetStore().List() {
				if env, ok := c.workloadEnvelope(sw, obj, false); ok {
					if err := c.pub.Put(ctx, env); err != nil {
						return err
					}
				}
			}
		}
		for _, obj := range sw.configMaps.GetStore().List() {
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				env, err := kube.ExperimentEnvelope(cm, c.meta(sw))
				if err != nil {
					continue
				}
				if err := c.pub.Put(ctx, env); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
