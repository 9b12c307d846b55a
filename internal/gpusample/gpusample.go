// Package gpusample is the collector's GPU sampling: where the DCGM series come from — static
// dcgm-exporter endpoints, exporter pods discovered by label, or a Prometheus server — and the
// loop that turns them into gpu_sample envelopes every interval (the parsing is package dcgm's).
package gpusample

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/schedlens/schedlens/internal/dcgm"
	"github.com/schedlens/schedlens/internal/events"
)

// Config says where the GPU samples come from. An Interval of zero disables them.
type Config struct {
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

// DefaultConfig scrapes the NVIDIA GPU Operator's dcgm-exporter pods every 15 s.
func DefaultConfig() Config {
	return Config{Interval: 15 * time.Second, Selector: "app=nvidia-dcgm-exporter", Port: 9400}
}

// Sampler runs the sampling.
type Sampler struct {
	Config  Config
	Client  kubernetes.Interface // for discovering exporter pods
	Cluster string
	Source  string // envelope source (the collector's + "/dcgm")
	// Resolver names a sample's pod by UID (the collector's pod caches).
	Resolver dcgm.Resolver
	// Publish takes each envelope.
	Publish func(*events.Envelope)
	Logger  *slog.Logger
	Clock   func() time.Time
}

// Run publishes GPU samples until ctx ends.
func (s *Sampler) Run(ctx context.Context) error {
	d := s.Config
	if d.Interval <= 0 {
		return nil
	}
	if d.PrometheusURL != "" {
		return s.runPrometheus(ctx)
	}
	targets := d.Targets
	if targets == nil {
		var err error
		if targets, err = s.discoverExporters(ctx); err != nil {
			return err
		}
	}
	sc := &dcgm.Scraper{
		Targets: targets, Interval: d.Interval, Cluster: s.Cluster, Source: s.Source,
		Resolver: s.Resolver, Publish: s.Publish, Logger: s.Logger, Clock: s.Clock,
	}
	return sc.Run(ctx)
}

// discoverExporters watches dcgm-exporter pods and returns their endpoints.
func (s *Sampler) discoverExporters(ctx context.Context) (func() []dcgm.Target, error) {
	d := s.Config
	f := informers.NewSharedInformerFactoryWithOptions(s.Client, 0, informers.WithNamespace(d.Namespace),
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
func (s *Sampler) runPrometheus(ctx context.Context) error {
	d := s.Config
	t := time.NewTicker(d.Interval)
	defer t.Stop()
	for {
		samples, at, err := dcgm.QueryPrometheus(ctx, nil, d.PrometheusURL)
		if err != nil {
			s.Logger.Warn("query prometheus for DCGM series", "url", d.PrometheusURL, "error", err)
		} else if !at.IsZero() {
			envs, err := dcgm.EnvelopesEvery(d.Interval, samples, s.Cluster, s.Source, "", at, s.Clock(), s.Resolver)
			if err != nil {
				s.Logger.Warn("DCGM samples", "error", fmt.Errorf("from prometheus: %w", err))
			}
			for _, env := range envs {
				s.Publish(env)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
