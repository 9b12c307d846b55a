// Command collector publishes what happens to GPU pods as schedlens envelopes on NATS JetStream.
// `collector run` (the default) watches a cluster; `collector replay FILE` publishes recorded
// envelopes (JSONL; - for stdin).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/collector"
	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/dcgm"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/ingest"
	"github.com/schedlens/schedlens/internal/ops"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

const usageText = `usage: collector [run] [flags]
       collector replay [flags] FILE
       collector import vegeta|ndjson [flags] FILE

commands:
  run           (default) watch the cluster — pods in scope, events.k8s.io events about them and
                about nodes, nodes, experiment ConfigMaps — and publish envelopes until stopped
  replay FILE   publish every envelope of a JSONL file (- for stdin) and exit once JetStream
                has acknowledged them all; invalid lines are reported with their line numbers,
                the valid ones are still published, and the exit status is then 1
  import vegeta FILE
                publish vegeta's results (vegeta encode -to json; - for stdin) as request
                envelopes: each is attributed to the pod that held its URL's IP at the time
                (-host-pod maps host names); bad lines are reported with their numbers, good ones
                published, and the exit status is then 1
  import ndjson FILE
                the same for NDJSON rows as POST /v1/ingest/requests takes (see README)

flags:
`

// options are the collector's settings; flags with SCHEDLENS_* environment defaults.
type options struct {
	natsURL, cluster, source string
	stream                   bus.StreamConfig
	log                      config.Logging

	kubeconfig, namespaces, selector string
	labels                           events.LabelKeys
	metricsAddr                      string
	resync, inventoryEvery           time.Duration
	buffer                           int
	probe                            collector.ProbeConfig
	hostPods                         map[string]events.PodRef
	dcgm                             collector.DCGMConfig
	dcgmTargets                      []dcgm.Target
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	var o options
	fs := config.New("collector", getenv, stderr)
	fs.String(&o.natsURL, "nats-url", config.EnvNATSURL, config.DefaultNATSURL, "NATS server URL")
	fs.String(&o.cluster, "cluster", config.EnvCluster, "", "cluster name in envelopes (run: default \"default\"; replay: given to envelopes that name none)")
	sdef := bus.DefaultStreamConfig()
	fs.Duration(&o.stream.MaxAge, "stream-max-age", "SCHEDLENS_STREAM_MAX_AGE", sdef.MaxAge, "drop stream messages older than this")
	fs.Int64(&o.stream.MaxBytes, "stream-max-bytes", "SCHEDLENS_STREAM_MAX_BYTES", sdef.MaxBytes, "most bytes the stream holds")
	fs.Duration(&o.stream.Duplicates, "stream-duplicate-window", "SCHEDLENS_STREAM_DUPLICATE_WINDOW", sdef.Duplicates, "window in which JetStream drops a repeated message id")
	o.log.Define(fs)
	fs.String(&o.kubeconfig, "kubeconfig", "KUBECONFIG", "", "kubeconfig file (run; default: in-cluster config, else ~/.kube/config)")
	fs.String(&o.namespaces, "namespaces", "SCHEDLENS_NAMESPACES", "", "comma-separated namespaces to watch (run; default all)")
	fs.String(&o.selector, "selector", "SCHEDLENS_POD_SELECTOR", "", "pod label selector (run; default: the experiment label key is set)")
	config.Labels(fs, &o.labels)
	fs.String(&o.metricsAddr, "metrics-addr", config.EnvMetricsAddr, "127.0.0.1:9101", "address of /metrics, /healthz and /readyz (run)")
	fs.String(&o.source, "source", "SCHEDLENS_SOURCE", "", "envelope source (default collector/<hostname>; import: vegeta or ingest)")
	ddef := collector.DefaultDCGMConfig()
	fs.Duration(&o.dcgm.Interval, "dcgm-interval", "SCHEDLENS_DCGM_INTERVAL", ddef.Interval, "GPU samples: scrape interval (run; 0 disables)")
	fs.String(&o.dcgm.Selector, "dcgm-selector", "SCHEDLENS_DCGM_SELECTOR", ddef.Selector, "GPU samples: label selector of the dcgm-exporter pods (run)")
	fs.String(&o.dcgm.Namespace, "dcgm-namespace", "SCHEDLENS_DCGM_NAMESPACE", "", "GPU samples: namespace of the dcgm-exporter pods (run; default all)")
	fs.Int(&o.dcgm.Port, "dcgm-port", "SCHEDLENS_DCGM_PORT", ddef.Port, "GPU samples: dcgm-exporter port (run)")
	fs.String(&o.dcgm.PrometheusURL, "dcgm-prometheus", "SCHEDLENS_DCGM_PROMETHEUS", "", "GPU samples: read DCGM_FI_* series from this Prometheus server's HTTP API instead of scraping (run)")
	fs.Func("dcgm-target", "GPU samples: scrape this `URL=NODE` instead of discovering exporter pods (run; repeatable)", func(v string) error {
		u, node, ok := strings.Cut(v, "=")
		if !ok || node == "" || !strings.HasPrefix(u, "http") {
			return fmt.Errorf("want URL=NODE, got %q", v)
		}
		o.dcgmTargets = append(o.dcgmTargets, dcgm.Target{URL: u, Node: node})
		return nil
	})
	fs.Func("host-pod", "import vegeta: attribute results whose URL host is `HOST=NAMESPACE/NAME/UID` to that pod (repeatable)", func(v string) error {
		host, pod, ok := strings.Cut(v, "=")
		parts := strings.Split(pod, "/")
		if !ok || host == "" || len(parts) != 3 || !events.ValidUID(parts[2]) {
			return fmt.Errorf("want HOST=NAMESPACE/NAME/UID, got %q", v)
		}
		if o.hostPods == nil {
			o.hostPods = map[string]events.PodRef{}
		}
		o.hostPods[host] = events.PodRef{Namespace: parts[0], Name: parts[1], UID: parts[2]}
		return nil
	})
	fs.Duration(&o.resync, "resync", "SCHEDLENS_RESYNC", 0, "informer resync period (run; 0: none)")
	fs.Duration(&o.inventoryEvery, "inventory-every", "SCHEDLENS_INVENTORY_EVERY", 5*time.Minute, "publish the pods in scope this often, besides after every list (run; 0: only after lists)")
	pdef := collector.DefaultPublisherConfig()
	fs.Int(&o.buffer, "buffer", "SCHEDLENS_PUBLISH_BUFFER", pdef.Buffer, "envelopes held while NATS is slow or away (run)")
	prdef := collector.DefaultProbeConfig()
	fs.Duration(&o.probe.Interval, "probe-interval", "SCHEDLENS_PROBE_INTERVAL", prdef.Interval, "prober: time between requests to one pod (run; 0 disables the prober)")
	fs.Duration(&o.probe.Timeout, "probe-timeout", "SCHEDLENS_PROBE_TIMEOUT", prdef.Timeout, "prober: request timeout (run)")
	fs.String(&o.probe.Default.Method, "probe-method", "SCHEDLENS_PROBE_METHOD", prdef.Default.Method, "prober: method when the experiment names no request (run)")
	fs.Int(&o.probe.Default.Port, "probe-port", "SCHEDLENS_PROBE_PORT", prdef.Default.Port, "prober: port when the experiment names no request (run)")
	fs.String(&o.probe.Default.Path, "probe-path", "SCHEDLENS_PROBE_PATH", prdef.Default.Path, "prober: path when the experiment names no request (run)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}

	rest := args[1:]
	cmd := "run"
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		cmd, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	switch cmd {
	case "run":
		if fs.NArg() != 0 {
			fs.Usage()
			return config.Usagef("run takes no arguments, got %q", fs.Args())
		}
		if o.buffer <= 0 {
			fs.Usage()
			return config.Usagef("-buffer must be positive")
		}
		if o.probe.Interval < 0 || o.probe.Timeout <= 0 || o.probe.Default.Port <= 0 || o.probe.Default.Port > 65535 {
			fs.Usage()
			return config.Usagef("-probe-interval must be ≥ 0, -probe-timeout positive, -probe-port in 1..65535")
		}
	case "replay":
		if fs.NArg() != 1 {
			fs.Usage()
			return config.Usagef("replay takes one FILE (or - for stdin)")
		}
	case "import":
		if fs.NArg() != 2 || (fs.Arg(0) != "vegeta" && fs.Arg(0) != "ndjson") {
			fs.Usage()
			return config.Usagef("import takes a format (vegeta or ndjson) and one FILE (or - for stdin)")
		}
		if o.cluster == "" {
			o.cluster = collector.DefaultConfig().Cluster
		}
	default:
		fs.Usage()
		return config.Usagef("unknown command %q", cmd)
	}
	logger, err := o.log.Logger(stderr, "collector")
	if err != nil {
		return err
	}
	switch cmd {
	case "replay":
		return replay(ctx, o, fs.Arg(0), stdin, stdout, stderr, logger)
	case "import":
		return importResults(ctx, o, fs.Arg(0), fs.Arg(1), stdin, stdout, stderr, logger)
	}
	return watch(ctx, o, logger)
}

// watch is `collector run`.
func watch(ctx context.Context, o options, logger *slog.Logger) error {
	cfg := collector.DefaultConfig()
	if o.cluster != "" {
		cfg.Cluster = o.cluster
	}
	if _, _, err := events.ParseSubject(events.Subject(cfg.Cluster, events.KindPodStatus)); err != nil {
		return config.Usagef("-cluster %q cannot be a subject token (no '.', '*', '>' or spaces)", cfg.Cluster)
	}
	cfg.Source = o.source
	if cfg.Source == "" {
		host, _ := os.Hostname()
		cfg.Source = "collector/" + host
	}
	for _, ns := range strings.Split(o.namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			cfg.Namespaces = append(cfg.Namespaces, ns)
		}
	}
	cfg.Selector, cfg.Labels = o.selector, o.labels
	cfg.Resync, cfg.InventoryEvery = o.resync, o.inventoryEvery
	cfg.Probe = o.probe
	cfg.DCGM = o.dcgm
	if len(o.dcgmTargets) > 0 {
		targets := o.dcgmTargets
		cfg.DCGM.Targets = func() []dcgm.Target { return targets }
	}

	restCfg, err := kubeConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	restCfg.UserAgent = "schedlens-collector"
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := collector.NewMetrics(reg)

	// The collector starts and keeps watching while NATS is away: publishes wait in the buffer.
	nc, err := bus.Connect(o.natsURL, "schedlens-collector", logger, nats.RetryOnFailedConnect(true))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(10*time.Second), jetstream.WithPublishAsyncMaxPending(1024))
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	pcfg := collector.DefaultPublisherConfig()
	pcfg.Buffer = o.buffer
	ensure := func(ctx context.Context) error {
		_, err := bus.EnsureStream(ctx, js, o.stream)
		return err
	}
	pub := collector.NewPublisher(js, ensure, pcfg, logger, m)
	c, err := collector.New(client, pub, cfg, logger, m)
	if err != nil {
		return config.Usagef("%v", err)
	}

	ready := func(context.Context) error {
		if !nc.IsConnected() {
			return errors.New("nats not connected")
		}
		return c.Ready()
	}
	// /readyz as a metric, so an alert can say which collector is not ready and for how long.
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "schedlens_collector_ready",
		Help: "1 once the informers have listed everything and NATS is connected (as /readyz), else 0.",
	}, func() float64 {
		if ready(ctx) != nil {
			return 0
		}
		return 1
	}))
	// Two-stage shutdown: informers stop with ctx, then the publisher drains its buffer.
	pubCtx, stopPub := context.WithCancel(context.Background())
	defer stopPub()
	pubDone := make(chan error, 1)
	go func() { pubDone <- pub.Run(pubCtx) }()

	mux := http.NewServeMux()
	ops.Register(mux, reg, ready)
	publish := func(ctx context.Context, envs []*events.Envelope) error {
		_, err := bus.PublishAll(ctx, js, envs)
		return err
	}
	mux.Handle("/v1/ingest/requests", ingest.Handler(ingest.Options{Cluster: cfg.Cluster, Source: "ingest", Logger: logger}, publish))
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ops.Serve(gctx, o.metricsAddr, mux, logger, nil) })
	g.Go(func() error {
		// Stopped while still listing (an unreachable API server, say): a clean stop, not an error.
		if err := c.Run(gctx); err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
			return err
		}
		return nil
	})
	err = g.Wait()
	stopPub()
	if perr := <-pubDone; perr != nil && err == nil {
		err = perr
	}
	return err
}

// kubeConfig loads the kubeconfig named, else the in-cluster config, else the default loading
// rules (KUBECONFIG, ~/.kube/config).
func kubeConfig(path string) (*rest.Config, error) {
	if path == "" {
		if c, err := rest.InClusterConfig(); err == nil {
			return c, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes config: %w", err)
	}
	return c, nil
}

// importResults is `collector import vegeta|ndjson FILE`.
func importResults(ctx context.Context, o options, format, name string, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) error {
	in := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		in = f
	}
	opts := ingest.Options{Cluster: o.cluster, Source: o.source, HostPods: o.hostPods, Logger: logger}
	parse := ingest.ParseNDJSON
	if format == "vegeta" {
		parse = ingest.ParseVegeta
	}
	envs, bad, err := parse(in, opts)
	if err != nil {
		return fmt.Errorf("import %s: %w", name, err)
	}
	for _, e := range bad {
		fmt.Fprintln(stderr, e.Error())
	}
	nc, err := bus.Connect(o.natsURL, "schedlens-collector-import", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(30*time.Second))
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if _, err := bus.EnsureStream(ctx, js, o.stream); err != nil {
		return err
	}
	res, err := bus.PublishAll(ctx, js, envs)
	fmt.Fprintf(stdout, "published %d request results (%d already in the stream), %d rejected lines, %d not acknowledged\n",
		res.Published, res.Duplicates, len(bad), res.Failed)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if len(bad) > 0 {
		return fmt.Errorf("import: %d rejected lines", len(bad))
	}
	return nil
}

// replay is `collector replay FILE`.
func replay(ctx context.Context, o options, name string, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) error {
	in := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		defer f.Close()
		in = f
	}
	nc, err := bus.Connect(o.natsURL, "schedlens-collector-replay", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(30*time.Second))
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if _, err := bus.EnsureStream(ctx, js, o.stream); err != nil {
		return err
	}
	res, err := collector.Replay(ctx, js, in, o.cluster, stderr)
	fmt.Fprintf(stdout, "published %d envelopes (%d already in the stream), %d invalid lines, %d not acknowledged\n",
		res.Published, res.Duplicates, res.Invalid, res.Failed)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if res.Invalid > 0 || res.Failed > 0 {
		return fmt.Errorf("replay: %d invalid lines, %d not acknowledged", res.Invalid, res.Failed)
	}
	return nil
}
