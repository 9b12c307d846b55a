// Package collector watches a Kubernetes cluster with client-go informers and publishes what
// happens to the pods in its scope as schedlens envelopes (pod_status, k8s_event, node_status,
// workload_status, experiment, inventory, heartbeat). The conversions are the pure functions of package kube; the
// publishing is package publisher's, the probing package prober's, the GPU sampling package
// gpusample's. This package owns the informers (informers.go), what their handlers publish
// (handlers.go), the scopes' inventories and heartbeats (inventory.go) and re-publishing the
// state after an outage (resync.go). See docs/collector.md for event series, relists, the event
// TTL and the id scheme.
package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/gpusample"
	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/internal/prober"
	"github.com/schedlens/schedlens/internal/publisher"
)

// Config says what the collector watches and how its envelopes are labelled.
type Config struct {
	Cluster    string
	Source     string   // envelope source, e.g. collector/<hostname>
	Namespaces []string // watched namespaces; empty means all
	Selector   string   // pod label selector; empty means every pod of the watched namespaces
	Labels     events.LabelKeys

	Resync         time.Duration // informer resync period (0: none; relists still happen)
	InventoryEvery time.Duration // inventory period besides the ones after lists (0: none)
	// InventoryChunk is the most pod UIDs in one inventory envelope; larger scopes are published
	// in parts (0: kube.DefaultInventoryChunk, 10,000).
	InventoryChunk int
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
	// Probe configures the prober (Interval 0 disables it); it probes the pods in scope that
	// ProbeSelector matches ("": every one).
	Probe         prober.Config
	ProbeSelector string
	// DCGM configures the GPU samples (Interval 0 disables them).
	DCGM gpusample.Config
}

// DefaultConfig watches every pod of every namespace and probes those labelled
// schedlens.io/experiment.
func DefaultConfig() Config {
	return Config{
		Cluster: "default", Source: "collector", Labels: events.DefaultLabelKeys, ProbeSelector: events.LabelExperiment,
		InventoryEvery: 5 * time.Minute, HeartbeatEvery: 5 * time.Second, PendingTTL: 30 * time.Second, ForgetAfter: 2 * time.Hour,
		Probe: prober.DefaultConfig(), DCGM: gpusample.DefaultConfig(),
	}
}

// Collector is the in-cluster observer: one pod, event and ConfigMap informer per watched
// namespace (each its own scope), and one node informer.
type Collector struct {
	client kubernetes.Interface
	pub    *publisher.Publisher
	cfg    Config
	logger *slog.Logger
	m      *metrics

	nodes  cache.SharedIndexInformer
	scopes []*scopeWatch
	dra    *draCache // nil when the cluster serves no resource.k8s.io/v1 to the collector
	// factories are every informer factory started, for shutdown.
	factories []informers.SharedInformerFactory
	// transform shrinks what every informer caches; its pods share the values they repeat.
	transform *kube.Transformer

	mu       sync.Mutex
	known    map[types.UID]time.Time // pods seen in scope → when they were deleted (zero: present)
	pending  map[types.UID][]pendingEvent
	requests map[requestKey]*prober.Request // ConfigMap namespace and experiment name → its fixed request
	prober   *prober.Prober
	probed   labels.Selector // the pods in scope the prober probes

	inventoryDue chan struct{}
	resyncMu     sync.Mutex
	ready        atomic.Bool
}

type pendingEvent struct {
	ev    *eventsv1.Event
	sw    *scopeWatch
	since time.Time
}

// New returns a collector; Run starts it. pub is shared with the caller, which runs it; the
// collector's metrics (and its prober's) are registered with reg.
func New(client kubernetes.Interface, pub *publisher.Publisher, cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Collector, error) {
	def := DefaultConfig()
	if cfg.Labels == (events.LabelKeys{}) {
		cfg.Labels = def.Labels
	}
	if _, err := labels.Parse(cfg.Selector); err != nil {
		return nil, fmt.Errorf("pod selector %q: %w", cfg.Selector, err)
	}
	probed, err := labels.Parse(cfg.ProbeSelector)
	if err != nil {
		return nil, fmt.Errorf("probe selector %q: %w", cfg.ProbeSelector, err)
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
		client: client, pub: pub, cfg: cfg, logger: logger, m: newMetrics(reg),
		known: map[types.UID]time.Time{}, pending: map[types.UID][]pendingEvent{}, requests: map[requestKey]*prober.Request{},
		inventoryDue: make(chan struct{}, 1), transform: kube.NewTransformer(), probed: probed,
	}
	c.prober = prober.New(cfg.Probe, pub, cfg.Cluster, cfg.Source, logger.With("component", "prober"), reg)
	return c, nil
}

// Ready reports whether every informer has listed its objects once and the state is published.
func (c *Collector) Ready() error {
	if !c.ready.Load() {
		return errors.New("informers not synced yet")
	}
	return nil
}

// Run starts the informers — nodes first (a pod's GPU sharing mode needs its node's labels),
// experiment ConfigMaps next (they say which request the prober sends to their pods), label
// registries (what the node labels placement uses are and who owns them), workload
// controllers (what the pods' owners want), DRA claims, slices and classes (what a pod's
// claims got), then pods,
// then events (published only about pods known to be in scope) — publishes an inventory per
// scope once the pods are listed, then follows changes, probes pods and samples GPUs until ctx
// ends.
func (c *Collector) Run(ctx context.Context) error {
	c.prober.Start(ctx)
	defer c.prober.Stop()
	defer c.shutdownInformers()
	// After an outage or an overflow, the current state is published again.
	c.pub.OnRecover(func() {
		if !c.ready.Load() {
			return // Run publishes everything once synced
		}
		if err := c.Resync(ctx); err != nil && !errors.Is(err, context.Canceled) {
			c.logger.Warn("re-publish state", "error", err)
		}
	})
	if err := c.startNodes(ctx); err != nil {
		return err
	}
	c.makeScopes()
	if err := c.startConfigMaps(ctx); err != nil {
		return err
	}
	if err := c.startLabelRegistries(ctx); err != nil {
		return err
	}
	if err := c.startWorkloads(ctx); err != nil {
		return err
	}
	if err := c.startDRA(ctx); err != nil {
		return err
	}
	if err := c.startPods(ctx); err != nil {
		return err
	}
	// Every pod that exists was just published: what the correlator believed alive and is not
	// listed was deleted while no collector watched.
	for _, sw := range c.scopes {
		if err := c.inventory(ctx, sw); err != nil {
			return err
		}
	}
	if err := c.startEvents(ctx); err != nil {
		return err
	}
	c.ready.Store(true)
	c.logger.Info("collector watching", "scopes", len(c.scopes), "selector", c.cfg.Selector)
	sampler := &gpusample.Sampler{Config: c.cfg.DCGM, Client: c.client, Cluster: c.cfg.Cluster, Source: c.cfg.Source + "/dcgm",
		Resolver: c, Publish: func(env *events.Envelope) { _ = c.pub.Put(ctx, env) }, Logger: c.logger.With("component", "dcgm"), Clock: c.cfg.Clock}
	gpuDone := make(chan error, 1)
	go func() { gpuDone <- sampler.Run(ctx) }()
	err := c.loop(ctx)
	if gerr := <-gpuDone; gerr != nil && err == nil && ctx.Err() == nil {
		err = gerr
	}
	return err
}
