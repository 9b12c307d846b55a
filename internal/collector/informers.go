package collector

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

// factory returns an informer factory that drops the object bulk the collector never reads
// before it reaches the cache (kube.Transformer), remembered for shutdown.
func (c *Collector) factory(opts ...informers.SharedInformerOption) informers.SharedInformerFactory {
	f := informers.NewSharedInformerFactoryWithOptions(c.client, c.cfg.Resync, append(opts, informers.WithTransform(c.transform.Transform))...)
	c.factories = append(c.factories, f)
	return f
}

// start starts factories and waits until the handlers have seen every object of the first list.
func start(ctx context.Context, fs []informers.SharedInformerFactory, regs ...cache.ResourceEventHandlerRegistration) error {
	for _, f := range fs {
		f.Start(ctx.Done())
	}
	syncs := make([]cache.InformerSynced, 0, len(regs))
	for _, r := range regs {
		syncs = append(syncs, r.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), syncs...) {
		return ctx.Err()
	}
	return nil
}

// shutdownInformers stops every informer. client-go backs off a failed watch-list without
// watching the stop signal, so an informer of an unreachable API server can take its whole
// back-off to stop: do not hold the process for it.
func (c *Collector) shutdownInformers() {
	done := make(chan struct{})
	go func() {
		for _, f := range c.factories {
			f.Shutdown()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		c.logger.Warn("informers still stopping after 5s; not waiting for them")
	}
}

// startNodes watches every node.
func (c *Collector) startNodes(ctx context.Context) error {
	nf := c.factory()
	c.nodes = nf.Core().V1().Nodes().Informer()
	reg, err := c.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onNode(obj, false) },
		UpdateFunc: func(_, obj any) { c.onNode(obj, false) },
		DeleteFunc: func(obj any) { c.onNode(obj, true) },
	})
	if err != nil {
		return fmt.Errorf("node handler: %w", err)
	}
	return start(ctx, []informers.SharedInformerFactory{nf}, reg)
}

// makeScopes makes one scope per watched namespace (or one for all of them).
func (c *Collector) makeScopes() {
	namespaces := c.cfg.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		sw := &scopeWatch{scope: events.Scope{Selector: c.cfg.Selector}}
		if ns != metav1.NamespaceAll {
			sw.scope.Namespaces = []string{ns}
		}
		c.scopes = append(c.scopes, sw)
	}
}

// startConfigMaps watches the experiment ConfigMaps (labelled with the experiment key) of every
// scope.
func (c *Collector) startConfigMaps(ctx context.Context) error {
	var fs []informers.SharedInformerFactory
	var regs []cache.ResourceEventHandlerRegistration
	for _, sw := range c.scopes {
		cf := c.factory(informers.WithNamespace(scopeNamespace(sw)), informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = c.cfg.Labels.Experiment }))
		sw.configMaps = cf.Core().V1().ConfigMaps().Informer()
		reg, err := sw.configMaps.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.onConfigMap(sw, obj) },
			UpdateFunc: func(_, obj any) { c.onConfigMap(sw, obj) },
		})
		if err != nil {
			return fmt.Errorf("configmap handler: %w", err)
		}
		fs, regs = append(fs, cf), append(regs, reg)
	}
	return start(ctx, fs, regs...)
}

// startLabelRegistries watches the label registry ConfigMaps (labelled schedlens.io/label-registry)
// of every scope, and publishes each state and deletion: the node labels placement depends on,
// with their source and owner (GET /v1/labels).
func (c *Collector) startLabelRegistries(ctx context.Context) error {
	var fs []informers.SharedInformerFactory
	var regs []cache.ResourceEventHandlerRegistration
	for _, sw := range c.scopes {
		cf := c.factory(informers.WithNamespace(scopeNamespace(sw)), informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = kube.LabelRegistry }))
		sw.registries = cf.Core().V1().ConfigMaps().Informer()
		reg, err := sw.registries.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.onLabelRegistry(sw, obj, false) },
			UpdateFunc: func(_, obj any) { c.onLabelRegistry(sw, obj, false) },
			DeleteFunc: func(obj any) { c.onLabelRegistry(sw, obj, true) },
		})
		if err != nil {
			return fmt.Errorf("label registry handler: %w", err)
		}
		fs, regs = append(fs, cf), append(regs, reg)
	}
	return start(ctx, fs, regs...)
}

// startWorkloads watches the Deployments, ReplicaSets and StatefulSets of every scope: the
// replicas each wants and the revision it rolls out, so that "desired" at any moment is the
// workload's own. A scope's whole namespace is watched (workloads are few), whatever its pod
// selector. A kind the collector may not list (RBAC without the apps rules, as charts before
// them granted) or the API server does not serve is logged once and left out: pods still
// group into their workloads by their owners, with desired replicas inferred.
func (c *Collector) startWorkloads(ctx context.Context) error {
	var fs []informers.SharedInformerFactory
	var regs []cache.ResourceEventHandlerRegistration
	for _, sw := range c.scopes {
		wf := c.factory(informers.WithNamespace(scopeNamespace(sw)))
		apps := wf.Apps().V1()
		kinds := []struct {
			resource string
			list     func() error
			informer func() cache.SharedIndexInformer
		}{
			{"deployments", func() error {
				_, err := c.client.AppsV1().Deployments(scopeNamespace(sw)).List(ctx, metav1.ListOptions{Limit: 1})
				return err
			}, apps.Deployments().Informer},
			{"replicasets", func() error {
				_, err := c.client.AppsV1().ReplicaSets(scopeNamespace(sw)).List(ctx, metav1.ListOptions{Limit: 1})
				return err
			}, apps.ReplicaSets().Informer},
			{"statefulsets", func() error {
				_, err := c.client.AppsV1().StatefulSets(scopeNamespace(sw)).List(ctx, metav1.ListOptions{Limit: 1})
				return err
			}, apps.StatefulSets().Informer},
		}
		for _, k := range kinds {
			if err := k.list(); err != nil {
				if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
					c.logger.Warn("workload controllers not watched: pods are grouped by their owners, desired replicas inferred",
						"resource", k.resource+".apps", "namespace", scopeNamespace(sw), "error", err)
					continue
				}
				return fmt.Errorf("list %s: %w", k.resource, err)
			}
			inf := k.informer()
			sw.workloads = append(sw.workloads, inf)
			reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(obj any) { c.onWorkload(sw, obj, false) },
				UpdateFunc: func(_, obj any) { c.onWorkload(sw, obj, false) },
				DeleteFunc: func(obj any) { c.onWorkload(sw, obj, true) },
			})
			if err != nil {
				return fmt.Errorf("workload handler: %w", err)
			}
			regs = append(regs, reg)
		}
		fs = append(fs, wf)
	}
	return start(ctx, fs, regs...)
}

// startPods watches the pods of every scope; a watch error ends the scope's live session.
func (c *Collector) startPods(ctx context.Context) error {
	var fs []informers.SharedInformerFactory
	var regs []cache.ResourceEventHandlerRegistration
	for _, sw := range c.scopes {
		pf := c.factory(informers.WithNamespace(scopeNamespace(sw)), informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = c.cfg.Selector }))
		sw.pods = pf.Core().V1().Pods().Informer()
		if err := sw.pods.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			sw.watchFailed()
			cache.DefaultWatchErrorHandler(ctx, r, err)
		}); err != nil {
			return fmt.Errorf("pod watch error handler: %w", err)
		}
		reg, err := sw.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.onPod(sw, obj, false) },
			UpdateFunc: func(_, obj any) { c.onPod(sw, obj, false) },
			DeleteFunc: func(obj any) { c.onPod(sw, obj, true) },
		})
		if err != nil {
			return fmt.Errorf("pod handler: %w", err)
		}
		fs, regs = append(fs, pf), append(regs, reg)
	}
	return start(ctx, fs, regs...)
}

// startEvents watches the events.k8s.io events of every scope, one scope after another.
func (c *Collector) startEvents(ctx context.Context) error {
	for _, sw := range c.scopes {
		ef := c.factory(informers.WithNamespace(scopeNamespace(sw)))
		sw.events = ef.Events().V1().Events().Informer()
		reg, err := sw.events.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { c.onEvent(sw, obj, nil) },
			// Every increase of the series count is a new occurrence; an update that leaves the
			// count alone (a relist, a resync) says nothing new.
			UpdateFunc: func(old, obj any) { c.onEvent(sw, obj, old) },
		})
		if err != nil {
			return fmt.Errorf("event handler: %w", err)
		}
		if err := start(ctx, []informers.SharedInformerFactory{ef}, reg); err != nil {
			return err
		}
	}
	return nil
}

// scopeNamespace is the namespace a scope's informers list (all when the scope names none).
func scopeNamespace(sw *scopeWatch) string {
	if len(sw.scope.Namespaces) == 1 {
		return sw.scope.Namespaces[0]
	}
	return metav1.NamespaceAll
}
