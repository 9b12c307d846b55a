// Package collector watches a Kubernetes cluster with client-go informers and publishes what
// happens to the pods in its scope as schedlens envelopes (pod_status, k8s_event, node_status,
// experiment, inventory, heartbeat), through a bounded, retrying publisher. The conversions are the pure
// functions of package kube; this package owns the informers, scope, recovery and publishing.
// See docs/collector.md for event series, relists, the event TTL and the id scheme.
package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

// Config says what the collector watches and how its envelopes are labelled.
type Config struct {
	Cluster    string
	Source     string   // envelope source, e.g. collector/<hostname>
	Namespaces []string // watched namespaces; empty means all
	Selector   string   // pod label selector; empty means "the experiment label is set"
	Labels     events.LabelKeys

	Resync         time.Duration // informer resync period (0: none; relists still happen)
	InventoryEvery time.Duration // inventory period besides the ones after lists (0: none)
	// HeartbeatEvery is how often a heartbeat says each scope's watch is still live (0: none):
	// it extends the observation of pods that are still there, Pending ones above all.
	HeartbeatEvery time.Duration
	// PendingTTL is how long an event about a pod not yet seen waits for that pod: the event
	// and pod watches are separate streams, so a Scheduled event can arrive first.
	PendingTTL time.Duration
	// ForgetAfter is how long a deleted pod's UID is remembered, so late events about it (a
	// Preempted event, a series update) are still published. One hour is the API server's
	// default event TTL.
	ForgetAfter time.Duration
	Clock       func() time.Time
	// Probe configures the prober (Interval 0 disables it).
	Probe ProbeConfig
	// DCGM configures the GPU samples (Interval 0 disables them).
	DCGM DCGMConfig
}

// DefaultConfig watches every namespace for pods labelled schedlens.io/experiment.
func DefaultConfig() Config {
	return Config{
		Cluster: "default", Source: "collector", Labels: events.DefaultLabelKeys,
		InventoryEvery: 5 * time.Minute, HeartbeatEvery: 5 * time.Second, PendingTTL: 30 * time.Second, ForgetAfter: 2 * time.Hour,
		Probe: DefaultProbeConfig(), DCGM: DefaultDCGMConfig(),
	}
}

// Collector is the in-cluster observer: one pod, event and ConfigMap informer per watched
// namespace (each its own scope), and one node informer.
type Collector struct {
	client kubernetes.Interface
	pub    *Publisher
	cfg    Config
	logger *slog.Logger
	m      *Metrics

	nodes  cache.SharedIndexInformer
	scopes []*scopeWatch

	mu       sync.Mutex
	known    map[types.UID]time.Time // pods seen in scope → when they were deleted (zero: present)
	pending  map[types.UID][]pendingEvent
	requests map[string]*ProbeRequest // experiment name → its fixed request
	prober   *Prober

	inventoryDue chan struct{}
	resyncMu     sync.Mutex
	runCtx       context.Context
	ready        atomic.Bool
}

// scopeWatch is what one namespace (or all of them) contributes.
type scopeWatch struct {
	scope      events.Scope
	pods       cache.SharedIndexInformer
	events     cache.SharedIndexInformer
	configMaps cache.SharedIndexInformer
	due        atomic.Bool // an inventory was asked for (a pod vanished in a relist)

	// live is the watch session heartbeats speak for: since is the list time of the inventory
	// it began with (zero while no session is live); after a watch error, brokenRV is the
	// resource version the informer had, and a new session starts once it moves on.
	liveMu   sync.Mutex
	since    time.Time
	broken   bool
	brokenRV string
}

// watchFailed ends the scope's live session: until the informer has listed or watched again,
// no heartbeat speaks for it.
func (sw *scopeWatch) watchFailed() {
	sw.liveMu.Lock()
	defer sw.liveMu.Unlock()
	sw.since, sw.broken, sw.brokenRV = time.Time{}, true, sw.pods.LastSyncResourceVersion()
}

type pendingEvent struct {
	ev    *eventsv1.Event
	sw    *scopeWatch
	since time.Time
}

// New returns a collector; Run starts it. pub is shared with the caller, which runs it.
func New(client kubernetes.Interface, pub *Publisher, cfg Config, logger *slog.Logger, m *Metrics) (*Collector, error) {
	def := DefaultConfig()
	if cfg.Labels == (events.LabelKeys{}) {
		cfg.Labels = def.Labels
	}
	if cfg.Selector == "" {
		cfg.Selector = cfg.Labels.Experiment
	}
	if _, err := labels.Parse(cfg.Selector); err != nil {
		return nil, fmt.Errorf("pod selector %q: %w", cfg.Selector, err)
	}
	if cfg.PendingTTL <= 0 {
		cfg.PendingTTL = def.PendingTTL
	}
	if cfg.ForgetAfter <= 0 {
		cfg.ForgetAfter = def.ForgetAfter
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	c := &Collector{
		client: client, pub: pub, cfg: cfg, logger: logger, m: m,
		known: map[types.UID]time.Time{}, pending: map[types.UID][]pendingEvent{}, requests: map[string]*ProbeRequest{},
		inventoryDue: make(chan struct{}, 1),
	}
	c.prober = NewProber(cfg.Probe, pub, cfg.Cluster, cfg.Source, logger.With("component", "prober"), m)
	pub.OnRecover(func() {
		if !c.ready.Load() {
			return // Run publishes everything once synced
		}
		if err := c.Resync(c.runCtx); err != nil && !errors.Is(err, context.Canceled) {
			c.logger.Warn("re-publish state", "error", err)
		}
	})
	return c, nil
}

// Ready reports whether every informer has listed its objects once and the state is published.
func (c *Collector) Ready() error {
	if !c.ready.Load() {
		return errors.New("informers not synced yet")
	}
	return nil
}

// Run starts the informers, publishes the current state and an inventory per scope once the
// pods are listed, then follows changes until ctx ends.
func (c *Collector) Run(ctx context.Context) error {
	c.runCtx = ctx
	c.prober.Start(ctx)
	defer c.prober.Stop()
	var factories []informers.SharedInformerFactory
	defer func() {
		// client-go backs off a failed watch-list without watching the stop signal, so an
		// informer of an unreachable API server can take its whole back-off to stop: do not
		// hold the process for it.
		done := make(chan struct{})
		go func() {
			for _, f := range factories {
				f.Shutdown()
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			c.logger.Warn("informers still stopping after 5s; not waiting for them")
		}
	}()
	factory := func(opts ...informers.SharedInformerOption) informers.SharedInformerFactory {
		f := informers.NewSharedInformerFactoryWithOptions(c.client, c.cfg.Resync, append(opts, informers.WithTransform(kube.Transform))...)
		factories = append(factories, f)
		return f
	}
	start := func(ctx context.Context, fs []informers.SharedInformerFactory, regs ...cache.ResourceEventHandlerRegistration) error {
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

	// Nodes first: a pod's GPU sharing mode needs its node's labels.
	nf := factory()
	c.nodes = nf.Core().V1().Nodes().Informer()
	nreg, err := c.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onNode(obj, false) },
		UpdateFunc: func(_, obj any) { c.onNode(obj, false) },
		DeleteFunc: func(obj any) { c.onNode(obj, true) },
	})
	if err != nil {
		return fmt.Errorf("node handler: %w", err)
	}
	if err := start(ctx, []informers.SharedInformerFactory{nf}, nreg); err != nil {
		return err
	}

	namespaces := c.cfg.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	// Experiment ConfigMaps next: they say which request the prober sends to their pods.
	var cmFactories []informers.SharedInformerFactory
	var cmRegs []cache.ResourceEventHandlerRegistration
	for _, ns := range namespaces {
		sw := &scopeWatch{scope: events.Scope{Selector: c.cfg.Selector}}
		if ns != metav1.NamespaceAll {
			sw.scope.Namespaces = []string{ns}
		}
		cf := factory(informers.WithNamespace(ns), informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = c.cfg.Labels.Experiment }))
		sw.configMaps = cf.Core().V1().ConfigMaps().Informer()
		creg, err := sw.configMaps.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.onConfigMap(sw, obj) },
			UpdateFunc: func(_, obj any) { c.onConfigMap(sw, obj) },
		})
		if err != nil {
			return fmt.Errorf("configmap handler: %w", err)
		}
		c.scopes = append(c.scopes, sw)
		cmFactories, cmRegs = append(cmFactories, cf), append(cmRegs, creg)
	}
	if err := start(ctx, cmFactories, cmRegs...); err != nil {
		return err
	}

	// Pods next: events are published only about pods known to be in scope.
	var podFactories []informers.SharedInformerFactory
	var podRegs []cache.ResourceEventHandlerRegistration
	for _, sw := range c.scopes {
		ns := scopeNamespace(sw)
		pf := factory(informers.WithNamespace(ns), informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = c.cfg.Selector }))
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
		podFactories, podRegs = append(podFactories, pf), append(podRegs, reg)
	}
	if err := start(ctx, podFactories, podRegs...); err != nil {
		return err
	}
	// Every pod that exists was just published: what the correlator believed alive and is not
	// listed was deleted while no collector watched.
	for _, sw := range c.scopes {
		if err := c.inventory(ctx, sw); err != nil {
			return err
		}
	}

	for _, sw := range c.scopes {
		ef := factory(informers.WithNamespace(scopeNamespace(sw)))
		sw.events = ef.Events().V1().Events().Informer()
		ereg, err := sw.events.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { c.onEvent(sw, obj, nil) },
			// Every increase of the series count is a new occurrence; an update that leaves the
			// count alone (a relist, a resync) says nothing new.
			UpdateFunc: func(old, obj any) { c.onEvent(sw, obj, old) },
		})
		if err != nil {
			return fmt.Errorf("event handler: %w", err)
		}
		if err := start(ctx, []informers.SharedInformerFactory{ef}, ereg); err != nil {
			return err
		}
	}
	c.ready.Store(true)
	c.logger.Info("collector watching", "scopes", len(c.scopes), "selector", c.cfg.Selector)
	gpuDone := make(chan error, 1)
	go func() { gpuDone <- c.runGPU(ctx) }()
	err = c.loop(ctx)
	if gerr := <-gpuDone; gerr != nil && err == nil && ctx.Err() == nil {
		err = gerr
	}
	return err
}

// scopeNamespace is the namespace a scope's informers list (all when the scope names none).
func scopeNamespace(sw *scopeWatch) string {
	if len(sw.scope.Namespaces) == 1 {
		return sw.scope.Namespaces[0]
	}
	return metav1.NamespaceAll
}

// loop publishes inventories when asked and periodically, and expires waiting events.
func (c *Collector) loop(ctx context.Context) error {
	var periodic <-chan time.Time
	if c.cfg.InventoryEvery > 0 {
		t := time.NewTicker(c.cfg.InventoryEvery)
		defer t.Stop()
		periodic = t.C
	}
	var heartbeat <-chan time.Time
	if c.cfg.HeartbeatEvery > 0 {
		t := time.NewTicker(c.cfg.HeartbeatEvery)
		defer t.Stop()
		heartbeat = t.C
	}
	janitor := time.NewTicker(max(c.cfg.PendingTTL/4, 100*time.Millisecond))
	defer janitor.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-heartbeat:
			for _, sw := range c.scopes {
				if err := c.heartbeat(ctx, sw); err != nil {
					return nil
				}
			}
		case <-c.inventoryDue:
			for _, sw := range c.scopes {
				if sw.due.Swap(false) {
					if err := c.inventory(ctx, sw); err != nil {
						return nil
					}
				}
			}
		case <-periodic:
			for _, sw := range c.scopes {
				if sw.watchBroken() {
					continue // its cache may be stale: the recovery starts a new session
				}
				if err := c.inventory(ctx, sw); err != nil {
					return nil
				}
			}
		case <-janitor.C:
			c.expire()
		}
	}
}

func (c *Collector) meta(sw *scopeWatch) kube.Meta {
	m := kube.Meta{Cluster: c.cfg.Cluster, Source: c.cfg.Source, Observed: c.cfg.Clock().UTC(), Labels: c.cfg.Labels}
	if sw != nil {
		m.Scope = sw.scope
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

func (c *Collector) onPod(sw *scopeWatch, obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		// The pod vanished during a relist: its deletion was not seen. An inventory ends it in
		// the correlator, bounded by when it was last seen.
		if pod, ok := tomb.Obj.(*corev1.Pod); ok {
			c.mu.Lock()
			c.known[pod.UID] = c.cfg.Clock()
			c.mu.Unlock()
			c.prober.Observe(pod, true, nil)
		}
		c.askInventory(sw)
		return
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	env, err := kube.PodEnvelope(pod, c.node(pod.Spec.NodeName), deleted, c.meta(sw))
	if err != nil {
		c.convertError("pod", pod.Namespace+"/"+pod.Name, err)
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
	c.prober.Observe(pod, deleted, c.requestFor(pod))
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

func (c *Collector) onConfigMap(sw *scopeWatch, obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	exp := kube.ExperimentOf(cm, c.cfg.Labels)
	c.mu.Lock()
	c.requests[exp.Name] = probeRequestOf(&exp, c.cfg.Probe.Default)
	c.mu.Unlock()
	env, err := kube.ExperimentEnvelope(cm, c.meta(sw))
	if err != nil {
		c.convertError("configmap", cm.Namespace+"/"+cm.Name, err)
		return
	}
	c.pub.Offer(env)
}

// requestFor is the probe request of the pod's experiment, nil for the default.
func (c *Collector) requestFor(pod *corev1.Pod) *ProbeRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests[pod.Labels[c.cfg.Labels.Experiment]]
}

func (c *Collector) convertError(kind, name string, err error) {
	c.m.convertErrors.WithLabelValues(kind).Inc()
	c.logger.Warn("cannot convert object", "kind", kind, "name", name, "error", err)
}

func (c *Collector) askInventory(sw *scopeWatch) {
	sw.due.Store(true)
	select {
	case c.inventoryDue <- struct{}{}:
	default:
	}
}

func (sw *scopeWatch) watchBroken() bool {
	sw.liveMu.Lock()
	defer sw.liveMu.Unlock()
	return sw.broken
}

// heartbeat says sw's watch is still live, or, when a watch error ended its session and the
// informer has since listed or watched again, starts a new session with an inventory.
func (c *Collector) heartbeat(ctx context.Context, sw *scopeWatch) error {
	sw.liveMu.Lock()
	since, recovered := sw.since, sw.broken && sw.pods.LastSyncResourceVersion() != sw.brokenRV
	sw.liveMu.Unlock()
	if since.IsZero() {
		if recovered {
			return c.inventory(ctx, sw)
		}
		return nil
	}
	env, err := kube.HeartbeatEnvelope(since, c.meta(sw))
	if err != nil {
		c.convertError("heartbeat", sw.scope.Key(), err)
		return nil
	}
	if err := c.pub.Put(ctx, env); err != nil {
		return err
	}
	c.m.heartbeats.Inc()
	return nil
}

// inventory publishes the UIDs of every pod in sw's informer cache. The time is taken before
// the cache is read: a pod whose snapshot was published earlier is in the cache (the cache is
// updated before handlers run) unless its deletion was published too. The first inventory of a
// watch session starts what its heartbeats speak for.
func (c *Collector) inventory(ctx context.Context, sw *scopeWatch) error {
	m := c.meta(sw)
	sw.liveMu.Lock()
	if sw.since.IsZero() {
		sw.since, sw.broken = m.Observed, false
	}
	sw.liveMu.Unlock()
	var uids []string
	for _, obj := range sw.pods.GetStore().List() {
		if pod, ok := obj.(*corev1.Pod); ok {
			uids = append(uids, string(pod.UID))
		}
	}
	env, err := kube.InventoryEnvelope(uids, m.Observed, m)
	if err != nil {
		c.convertError("inventory", sw.scope.Key(), err)
		return nil
	}
	if err := c.pub.Put(ctx, env); err != nil {
		return err
	}
	c.m.inventories.Inc()
	return nil
}

// expire drops events that waited too long for their pod (pods outside the scope) and forgets
// pods deleted long ago.
func (c *Collector) expire() {
	now := c.cfg.Clock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid, list := range c.pending {
		kept := list[:0]
		for _, pe := range list {
			if now.Sub(pe.since) < c.cfg.PendingTTL {
				kept = append(kept, pe)
			} else {
				c.m.unattributed.Inc()
			}
		}
		if len(kept) == 0 {
			delete(c.pending, uid)
		} else {
			c.pending[uid] = kept
		}
	}
	for uid, gone := range c.known {
		if !gone.IsZero() && now.Sub(gone) > c.cfg.ForgetAfter {
			delete(c.known, uid)
		}
	}
}

// Resync publishes the whole current state again — every node, pod, event about a known pod
// or node, experiment ConfigMap, and an inventory per scope — waiting for buffer room. Ids
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
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				continue
			}
			env, err := kube.PodEnvelope(pod, c.node(pod.Spec.NodeName), false, c.meta(sw))
			if err != nil {
				c.convertError("pod", pod.Namespace+"/"+pod.Name, err)
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
