package collector

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/internal/prober"
)

func (c *Collector) meta(sw *scopeWatch) kube.Meta {
	m := kube.Meta{Cluster: c.cfg.Cluster, Source: c.cfg.Source, Observed: c.cfg.Clock().UTC(), Labels: c.cfg.Labels}
	if sw != nil {
		m.Scope = sw.scope
	}
	if c.dra != nil {
		m.DRA = c.dra
	}
	return m
}

func (c *Collector) node(name string) *corev1.Node {
	if name == "" || c.nodes == nil {
		return nil
	}
	obj, ok, err := c.nodes.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil
	}
	n, _ := obj.(*corev1.Node)
	return n
}

// podEnvelope converts an informer's object into its pod_status envelope; false for an object
// that is not a pod or does not convert (counted as a conversion error).
func (c *Collector) podEnvelope(sw *scopeWatch, obj any, deleted bool) (*corev1.Pod, *events.Envelope, bool) {
	pod, ok := kube.PodOf(obj)
	if !ok {
		return nil, nil, false
	}
	env, err := kube.PodEnvelope(pod, c.node(pod.Spec.NodeName), deleted, c.meta(sw))
	if err != nil {
		c.convertError("pod", pod.Namespace+"/"+pod.Name, err)
		return nil, nil, false
	}
	return pod, env, true
}

func (c *Collector) onPod(sw *scopeWatch, obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		// The pod vanished during a relist: its deletion was not seen. An inventory ends it in
		// the correlator, bounded by when it was last seen.
		if pod, ok := kube.PodOf(tomb.Obj); ok {
			c.mu.Lock()
			c.known[pod.UID] = c.cfg.Clock()
			c.mu.Unlock()
			c.prober.Observe(pod, true, nil)
		}
		c.askInventory(sw)
		return
	}
	pod, env, ok := c.podEnvelope(sw, obj, deleted)
	if !ok {
		return
	}
	c.mu.Lock()
	if deleted {
		c.known[pod.UID] = c.cfg.Clock()
	} else {
		c.known[pod.UID] = time.Time{}
	}
	waiting := c.pending[pod.UID]
	delete(c.pending, pod.UID)
	c.mu.Unlock()
	c.pub.Offer(env)
	c.prober.Observe(pod, deleted || !c.probed.Matches(labels.Set(pod.Labels)), c.requestFor(pod))
	for _, pe := range waiting {
		c.offerEvent(pe.sw, pe.ev)
	}
}

func (c *Collector) onEvent(sw *scopeWatch, obj, old any) {
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		return
	}
	if prev, ok := old.(*eventsv1.Event); ok && kube.EventCount(ev) <= kube.EventCount(prev) {
		return
	}
	switch ev.Regarding.Kind {
	case "Node":
		c.offerEvent(sw, ev)
	case "Pod":
		c.mu.Lock()
		_, known := c.known[ev.Regarding.UID]
		if !known {
			c.pending[ev.Regarding.UID] = append(c.pending[ev.Regarding.UID], pendingEvent{ev: ev, sw: sw, since: c.cfg.Clock()})
		}
		c.mu.Unlock()
		if known {
			c.offerEvent(sw, ev)
		}
	}
}

func (c *Collector) offerEvent(sw *scopeWatch, ev *eventsv1.Event) {
	env, ok, err := kube.EventEnvelope(ev, c.meta(sw))
	if err != nil {
		c.convertError("event", ev.Namespace+"/"+ev.Name, err)
		return
	}
	if ok {
		c.pub.Offer(env)
	}
}

// onNode publishes every node state (id name + resourceVersion). Kubelets write the node object
// only on change or every few minutes (leases carry the heartbeats), so this is cheap, and it
// keeps ids the same across restarts: skipping unchanged content would make a restarted
// collector publish the same state under the newer resourceVersion.
func (c *Collector) onNode(obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	env, err := kube.NodeEnvelope(node, deleted, c.meta(nil))
	if err != nil {
		c.convertError("node", node.Name, err)
		return
	}
	c.pub.Offer(env)
}

// workloadEnvelope converts an informer's Deployment, ReplicaSet or StatefulSet; false for
// anything else or what does not convert (counted as a conversion error).
func (c *Collector) workloadEnvelope(sw *scopeWatch, obj any, deleted bool) (*events.Envelope, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	var w events.WorkloadStatus
	switch o := obj.(type) {
	case *appsv1.Deployment:
		w = kube.Deployment(o)
	case *appsv1.ReplicaSet:
		w = kube.ReplicaSet(o)
	case *appsv1.StatefulSet:
		w = kube.StatefulSet(o)
	default:
		return nil, false
	}
	env, err := kube.WorkloadEnvelope(w, deleted, c.meta(sw))
	if err != nil {
		c.convertError(w.Kind, w.Namespace+"/"+w.Name, err)
		return nil, false
	}
	return env, true
}

// onWorkload publishes every state of a workload controller (id kind, name and
// resourceVersion), as onNode does for nodes.
func (c *Collector) onWorkload(sw *scopeWatch, obj any, deleted bool) {
	if env, ok := c.workloadEnvelope(sw, obj, deleted); ok {
		c.pub.Offer(env)
	}
}

func (c *Collector) onConfigMap(sw *scopeWatch, obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	exp := kube.ExperimentOf(cm, c.cfg.Labels)
	req, err := prober.RequestOf(&exp, c.cfg.Probe.Default)
	if err != nil {
		c.logger.Warn("the experiment's fixed request cannot be sent safely: its pods are not probed", "experiment", exp.Name, "configmap", cm.Namespace+"/"+cm.Name, "error", err)
	}
	c.mu.Lock()
	c.requests[requestKey{cm.Namespace, exp.Name}] = req
	c.mu.Unlock()
	env, err := kube.ExperimentEnvelope(cm, c.meta(sw))
	if err != nil {
		c.convertError("configmap", cm.Namespace+"/"+cm.Name, err)
		return
	}
	c.pub.Offer(env)
}

// labelRegistryEnvelope converts a label registry ConfigMap (a deleted one may come as a
// tombstone).
func (c *Collector) labelRegistryEnvelope(sw *scopeWatch, obj any, deleted bool) (*events.Envelope, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, false
	}
	env, err := kube.LabelRegistryEnvelope(cm, deleted, c.meta(sw))
	if err != nil {
		c.convertError("configmap", cm.Namespace+"/"+cm.Name, err)
		return nil, false
	}
	return env, true
}

func (c *Collector) onLabelRegistry(sw *scopeWatch, obj any, deleted bool) {
	if env, ok := c.labelRegistryEnvelope(sw, obj, deleted); ok {
		c.pub.Offer(env)
	}
}

// requestKey names an experiment's fixed request: the namespace of its ConfigMap and the
// experiment's name. A pod is probed with the request its own namespace defines, so a ConfigMap
// in one namespace cannot choose what is sent to the pods of another.
type requestKey struct{ namespace, experiment string }

// requestFor is the probe request of the pod's experiment as its namespace defines it, nil for
// the default.
func (c *Collector) requestFor(pod *corev1.Pod) *prober.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests[requestKey{pod.Namespace, pod.Labels[c.cfg.Labels.Experiment]}]
}

func (c *Collector) convertError(kind, name string, err error) {
	c.m.convertErrors.WithLabelValues(kind).Inc()
	c.logger.Warn("cannot convert object", "kind", kind, "name", name, "error", err)
}

// PodUID implements dcgm.Resolver (for the GPU sampling) from the pod caches: a sample names its pod by namespace and
// name, the envelope needs the UID.
func (c *Collector) PodUID(namespace, name string) (string, bool) {
	for _, sw := range c.scopes {
		if sw.pods == nil {
			continue
		}
		obj, ok, err := sw.pods.GetStore().GetByKey(namespace + "/" + name)
		if err == nil && ok {
			if uid, ok := kube.PodUID(obj); ok {
				return string(uid), true
			}
		}
	}
	return "", false
}
