package collector

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/schedlens/schedlens/internal/dcgm"
	"github.com/schedlens/schedlens/internal/events"
)

// DCGMConfig says where the GPU samples come from. An Interval of zero disables them.
type DCGMConfig struct {
	Interval time.Duration
	// Targets, when set, is a static list of dcgm-exporter endpoints (called every round).
	Targets func() []dcgm.Target
	// Otherwise exporter pods are discovered: those matching Selector (in Namespace, all when
	// empty), scraped on their pod IP at Port.
	Selector  string
	Namespace string
	Port      int
	// PrometheusURL, when set, reads the DCGM series from a Prometheus server's HTTP API
	// instead of scraping the exporters.
	PrometheusURL string
}

// DefaultDCGMConfig scrapes the NVIDIA GPU Operator's dcgm-exporter pods every 15 s.
func DefaultDCGMConfig() DCGMConfig {
	return DCGMConfig{Interval: 15 * time.Second, Selector: "app=nvidia-dcgm-exporter", Port: 9400}
}

// PodUID implements dcgm.Resolver from the pod caches: a sample names its pod by namespace and
// name, the envelope needs the UID.
func (c *Collector) PodUID(namespace, name string) (string, bool) {
	for _, sw := range c.scopes {
		if sw.pods == nil {
			continue
		}
		obj, ok, err := sw.pods.GetStore().GetByKey(namespace + "/" + name)
		if err == nil && ok {
			if p, ok := obj.(*corev1.Pod); ok {
				return string(p.UID), true
			}
		}
	}
	return "", false
}

// runGPU publishes GPU samples until ctx ends.
func (c *Collector) runGPU(ctx context.Context) error {
	d := c.cfg.DCGM
	if d.Interval <= 0 {
		return nil
	}
	logger := c.logger.With("component", "dcgm")
	publish := func(env *events.Envelope) { _ = c.pub.Put(ctx, env) }
	if d.PrometheusURL != "" {
		return c.runPrometheus(ctx, publish)
	}
	targets := d.Targets
	if targets == nil {
		var err error
		if targets, err = c.discoverExporters(ctx); err != nil {
			return err
		}
	}
	s := &dcgm.Scraper{
		Targets: targets, Interval: d.Interval, Cluster: c.cfg.Cluster, Source: c.cfg.Source + "/dcgm",
		Resolver: c, Publish: publish, Logger: logger, Clock: c.cfg.Clock,
	}
	return s.Run(ctx)
}

// discoverExporters watches dcgm-exporter pods and returns their endpoints.
func (c *Collector) discoverExporters(ctx context.Context) (func() []dcgm.Target, error) {
	d := c.cfg.DCGM
	f := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(d.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = d.Selector }))
	inf := f.Core().V1().Pods().Informer()
	f.Start(ctx.Done())
	go func() { <-ctx.Done(); f.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, ctx.Err()
	}
	return func() []dcgm.Target {
		var out []dcgm.Target
		for _, obj := range inf.GetStore().List() {
			p, ok := obj.(*corev1.Pod)
			if !ok || p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning {
				continue
			}
			out = append(out, dcgm.Target{URL: "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(d.Port)) + "/metrics", Node: p.Spec.NodeName})
		}
		return out
	}, nil
}

// runPrometheus reads the DCGM series from Prometheus every interval.
func (c *Collector) runPrometheus(ctx context.Context, publish func(*events.Envelope)) error {
	d := c.cfg.DCGM
	t := time.NewTicker(d.Interval)
	defer t.Stop()
	for {
		samples, at, err := dcgm.QueryPrometheus(ctx, nil, d.PrometheusURL)
		if err != nil {
			c.logger.Warn("query prometheus for DCGM series", "url", d.PrometheusURL, "error", err)
		} else if !at.IsZero() {
			envs, err := dcgm.EnvelopesEvery(d.Interval, samples, c.cfg.Cluster, c.cfg.Source+"/dcgm", "", at, c.cfg.Clock(), c)
			if err != nil {
				c.logger.Warn("DCGM samples", "error", fmt.Errorf("from prometheus: %w", err))
			}
			for _, env := range envs {
				publish(env)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
