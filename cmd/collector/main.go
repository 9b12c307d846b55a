// Command collector publishes what happens to GPU pods as schedlens envelopes on NATS JetStream.
// `collector run` (the default) watches a cluster; `collector replay FILE` publishes recorded
// envelopes (JSONL; - for stdin); `collector import vegeta|ndjson FILE` publishes external
// request results and reports which pods they landed on.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/client-go/kubernetes"

	"github.com/schedlens/schedlens/internal/auth"
	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/collector"
	"github.com/schedlens/schedlens/internal/collectorapp"
	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/dcgm"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/gpusample"
	"github.com/schedlens/schedlens/internal/importer"
	"github.com/schedlens/schedlens/internal/ingest"
	"github.com/schedlens/schedlens/internal/ops"
	"github.com/schedlens/schedlens/internal/prober"
	"github.com/schedlens/schedlens/internal/publisher"
)

func main() {
	config.Main(func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
		return run(ctx, args, getenv, os.Stdin, stdout, stderr)
	})
}

const usageText = `usage: collector [run] [flags]
       collector replay [flags] FILE
       collector import vegeta|ndjson [flags] FILE

Flags may come before or after the command and its arguments.

commands:
  run           (default) watch the cluster — pods in scope, events.k8s.io events about them and
                about nodes, nodes, experiment ConfigMaps — and publish envelopes until stopped
  replay FILE   publish every envelope of a JSONL file (- for stdin) and exit once JetStream
                has acknowledged them all; invalid lines are reported with their line numbers,
                the valid ones are still published, and the exit status is then 1
  import vegeta FILE
                publish vegeta's results (vegeta encode -to json; - for stdin) as request
                envelopes of cluster -cluster: each is attributed to the pod of that cluster that
                held its URL's IP at the time (-host-pod maps host names). Then read back through
                the api (-api-url) how many landed on pods and why the others wait, for at most
                -wait without progress. Bad lines are reported with their numbers, good ones
                published; the exit status is 1 when lines were rejected or results not stored
                (or, with -require-attributed, when results wait for a pod)
  import ndjson FILE
                the same for NDJSON rows as POST /v1/ingest/requests takes (see README)

flags:
`

// options are the collector's settings; flags with SCHEDLENS_* environment defaults.
type options struct {
	natsURL, cluster, source string
	stream                   bus.StreamConfig
	proc                     config.Process

	kubeconfig, namespaces, selector, probeSelector string
	labels                                          events.LabelKeys
	metricsAddr, ingestAddr                         string
	resync, inventoryEvery                          time.Duration
	heartbeatEvery                                  time.Duration
	buffer                                          int
	probe                                           prober.Config
	hostPods                                        map[string]events.PodRef
	apiURL, apiToken                                string
	auth                                            auth.Flags
	tls                                             ops.TLSFiles
	nats                                            bus.Credentials
	wait                                            time.Duration
	requireAttributed                               bool
	dcgm                                            gpusample.Config
	dcgmTargets                                     []dcgm.Target
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	var o options
	fs := config.New("collector", getenv, stderr)
	fs.Secret(&o.natsURL, "nats-url", config.EnvNATSURL, config.DefaultNATSURL, "NATS server `URL` (may hold a user and password or a token)")
	o.nats.Define(fs)
	fs.String(&o.cluster, "cluster", config.EnvCluster, "", "cluster name in envelopes (run, import: default \"default\"; replay: given to envelopes that name none); import: the cluster whose pods held the results' IPs")
	o.stream = bus.DefaultStreamConfig()
	config.StreamFlags(fs, &o.stream.MaxAge, &o.stream.MaxBytes, &o.stream.Duplicates, &o.stream.Replicas)
	o.proc.Define(fs)
	fs.String(&o.kubeconfig, "kubeconfig", "KUBECONFIG", "", "kubeconfig file (run; default: in-cluster config, else ~/.kube/config)")
	fs.String(&o.namespaces, "namespaces", "SCHEDLENS_NAMESPACES", "", "comma-separated namespaces to watch (run; default all)")
	fs.String(&o.selector, "selector", "SCHEDLENS_POD_SELECTOR", "", "pod label selector (run; default: every pod of the watched namespaces)")
	config.Labels(fs, &o.labels)
	fs.String(&o.metricsAddr, "metrics-addr", config.EnvMetricsAddr, "127.0.0.1:9101", "address of /metrics, /healthz and /readyz (run)")
	fs.String(&o.ingestAddr, "ingest-addr", "SCHEDLENS_INGEST_ADDR", "127.0.0.1:9102", "address of POST /v1/ingest/requests, external request results (run; empty: none)")
	fs.String(&o.source, "source", "SCHEDLENS_SOURCE", "", "envelope source (default collector/<hostname>; import: vegeta or ingest)")
	ddef := gpusample.DefaultConfig()
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
	fs.String(&o.apiURL, "api-url", "SCHEDLENS_API_URL", "http://127.0.0.1:8080", "import: the schedlens api to read the results back from")
	fs.Secret(&o.apiToken, "api-token", "SCHEDLENS_API_TOKEN", "", "import: bearer `TOKEN` for -api-url (role read), when the api authenticates")
	o.auth.Define(fs, "the ingest listener (and /metrics with -auth-metrics)")
	config.TLSFlags(fs, &o.tls.CertFile, &o.tls.KeyFile)
	fs.Duration(&o.wait, "wait", "SCHEDLENS_IMPORT_WAIT", 30*time.Second, "import: longest wait without progress for the correlator to store the results (0: publish without reading back)")
	fs.BoolVar(&o.requireAttributed, "require-attributed", false, "import: exit 1 when results wait for a pod")
	fs.Duration(&o.resync, "resync", "SCHEDLENS_RESYNC", 0, "informer resync period (run; 0: none)")
	fs.Duration(&o.inventoryEvery, "inventory-every", "SCHEDLENS_INVENTORY_EVERY", 5*time.Minute, "publish the pods in scope this often, besides after every list (run; 0: only after lists)")
	fs.Duration(&o.heartbeatEvery, "heartbeat-every", "SCHEDLENS_HEARTBEAT_EVERY", collector.DefaultConfig().HeartbeatEvery, "say this often that each scope's watch is still live, so pods still Pending are known to wait (run; 0: none)")
	pdef := publisher.DefaultConfig()
	fs.Int(&o.buffer, "buffer", "SCHEDLENS_PUBLISH_BUFFER", pdef.Buffer, "envelopes held while NATS is slow or away (run)")
	prdef := prober.DefaultConfig()
	fs.Duration(&o.probe.Interval, "probe-interval", "SCHEDLENS_PROBE_INTERVAL", prdef.Interval, "prober: time between requests to one pod (run; 0 disables the prober)")
	fs.Duration(&o.probe.Timeout, "probe-timeout", "SCHEDLENS_PROBE_TIMEOUT", prdef.Timeout, "prober: request timeout (run)")
	fs.String(&o.probe.Default.Method, "probe-method", "SCHEDLENS_PROBE_METHOD", prdef.Default.Method, "prober: method when the experiment names no request (run)")
	fs.Int(&o.probe.Default.Port, "probe-port", "SCHEDLENS_PROBE_PORT", prdef.Default.Port, "prober: port when the experiment names no request (run)")
	fs.String(&o.probe.Default.Path, "probe-path", "SCHEDLENS_PROBE_PATH", prdef.Default.Path, "prober: path when the experiment names no request (run)")
	fs.Int64(&o.probe.MaxBody, "probe-max-body", "SCHEDLENS_PROBE_MAX_BODY", prdef.MaxBody, "prober: response bytes read into memory per request (run)")
	fs.String(&o.probeSelector, "probe-selector", "SCHEDLENS_PROBE_SELECTOR", events.LabelExperiment, "prober: label selector of the pods in scope it probes (run; \"\" probes every pod in scope)")
	fs.Int(&o.probe.MaxPods, "probe-max-pods", "SCHEDLENS_PROBE_MAX_PODS", prdef.MaxPods, "prober: pods probed at once; more wait for a slot, counted (run)")
	fs.UsageText(usageText)

	// Flags may come before or after the command and its arguments.
	if help, err := fs.ParseOrHelp(args[1:]); help || err != nil {
		return err
	}
	cmd, pos := "run", fs.Args()
	if len(pos) > 0 {
		cmd, pos = pos[0], pos[1:]
	}
	switch cmd {
	case "run":
		if len(pos) != 0 {
			fs.Usage()
			return config.Usagef("run takes no arguments, got %q", pos)
		}
		if o.buffer <= 0 {
			fs.Usage()
			return config.Usagef("-buffer must be positive")
		}
		if err := o.auth.Check(); err != nil {
			fs.Usage()
			return err
		}
		if o.probe.Interval < 0 || o.probe.Timeout <= 0 || o.probe.Default.Port <= 0 || o.probe.Default.Port > 65535 || o.probe.MaxBody <= 0 || o.probe.MaxPods <= 0 {
			fs.Usage()
			return config.Usagef("-probe-interval must be ≥ 0, -probe-timeout, -probe-max-body and -probe-max-pods positive, -probe-port in 1..65535")
		}
	case "replay":
		if len(pos) != 1 {
			fs.Usage()
			return config.Usagef("replay takes one FILE (or - for stdin)")
		}
	case "import":
		if len(pos) != 2 || (pos[0] != string(ingest.FormatVegeta) && pos[0] != string(ingest.FormatNDJSON)) {
			fs.Usage()
			return config.Usagef("import takes a format (vegeta or ndjson) and one FILE (or - for stdin)")
		}
		if o.wait < 0 {
			fs.Usage()
			return config.Usagef("-wait must be ≥ 0")
		}
	default:
		fs.Usage()
		return config.Usagef("unknown command %q", cmd)
	}
	logger, err := o.proc.Start(stderr, "collector", getenv)
	if err != nil {
		fs.Usage()
		return err
	}
	switch cmd {
	case "replay":
		return replay(ctx, o, pos[0], stdin, stdout, stderr, logger)
	case "import":
		return importResults(ctx, o, ingest.Format(pos[0]), pos[1], stdin, stdout, stderr, logger)
	}
	return watch(ctx, o, logger)
}

// watch is `collector run`.
func watch(ctx context.Context, o options, logger *slog.Logger) error {
	cfg := collector.DefaultConfig()
	if o.cluster != "" {
		cfg.Cluster = o.cluster
	}
	cfg.Source = o.source
	for _, ns := range strings.Split(o.namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			cfg.Namespaces = append(cfg.Namespaces, ns)
		}
	}
	cfg.Selector, cfg.Labels, cfg.ProbeSelector = o.selector, o.labels, o.probeSelector
	cfg.Resync, cfg.InventoryEvery, cfg.HeartbeatEvery = o.resync, o.inventoryEvery, o.heartbeatEvery
	cfg.Probe = o.probe
	cfg.DCGM = o.dcgm
	if len(o.dcgmTargets) > 0 {
		targets := o.dcgmTargets
		cfg.DCGM.Targets = func() []dcgm.Target { return targets }
	}
	pcfg := publisher.DefaultConfig()
	pcfg.Buffer = o.buffer
	var client kubernetes.Interface
	if o.auth.Kubernetes() { // the same API server reviews the ingest listener's tokens
		rc, err := config.KubeConfig(o.kubeconfig)
		if err != nil {
			return err
		}
		rc.UserAgent = "schedlens-collector"
		if client, err = kubernetes.NewForConfig(rc); err != nil {
			return fmt.Errorf("kubernetes client: %w", err)
		}
	}
	authn, err := o.auth.Build(client, logger.With("component", "auth"))
	if err != nil {
		return err
	}
	app, err := collectorapp.New(collectorapp.Options{
		NATSURL: o.natsURL, Stream: o.stream, Kubeconfig: o.kubeconfig, Collector: cfg, Publisher: pcfg,
		MetricsAddr: o.metricsAddr, IngestAddr: o.ingestAddr, Logger: logger,
		Auth: authn, AuthMetrics: o.auth.Metrics, InsecureNoAuth: o.auth.Insecure, TLS: o.tls, NATS: o.nats,
	})
	if err != nil {
		return config.Usagef("%v", err)
	}
	return app.Run(ctx)
}

// importResults is `collector import vegeta|ndjson FILE`.
func importResults(ctx context.Context, o options, format ingest.Format, name string, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) error {
	in, err := input(name, stdin)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer in.Close()
	cfg := importer.Config{Cluster: o.cluster, Wait: o.wait, RequireAttributed: o.requireAttributed}
	if cfg.Cluster == "" {
		cfg.Cluster, cfg.ClusterDefaulted = collector.DefaultConfig().Cluster, true
	}
	opts := ingest.Options{Cluster: cfg.Cluster, Source: o.source, HostPods: o.hostPods, Logger: logger}
	results, bad, err := ingest.Parse(format, in, opts)
	if err != nil {
		return fmt.Errorf("import %s: %w", name, err)
	}
	for _, e := range bad {
		fmt.Fprintln(stderr, e.Error())
	}
	nc, js, err := o.connect(ctx, "schedlens-collector-import", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	publish := func(ctx context.Context, envs []*events.Envelope) (importer.Published, error) {
		res, err := bus.PublishAll(ctx, js, envs)
		return importer.Published{Acked: res.Published, Duplicates: res.Duplicates, Failed: res.Failed}, err
	}
	client := &importer.Client{BaseURL: o.apiURL, HTTP: &http.Client{Timeout: 30 * time.Second}, Token: o.apiToken}
	report, err := importer.Run(ctx, cfg, results, len(bad), publish, client.Lookup)
	if report != nil {
		report.Write(stdout)
	}
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if err := report.Err(); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// replay is `collector replay FILE`.
func replay(ctx context.Context, o options, name string, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) error {
	in, err := input(name, stdin)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer in.Close()
	nc, js, err := o.connect(ctx, "schedlens-collector-replay", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	res, err := bus.Replay(ctx, js, in, o.cluster, stderr)
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

// input is the FILE argument of import and replay: the file, or stdin for "-".
func input(name string, stdin io.Reader) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(stdin), nil
	}
	return os.Open(name)
}

// connect dials NATS as the collector role does (its credentials and inbox prefix) and ensures
// the stream, for import and replay to publish to; the caller closes nc.
func (o options) connect(ctx context.Context, name string, logger *slog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	c := o.nats
	c.InboxPrefix = bus.CollectorInboxPrefix
	opts, err := c.Options()
	if err != nil {
		return nil, nil, err
	}
	nc, err := bus.Connect(o.natsURL, name, logger, opts...)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(30*time.Second))
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	if _, err := bus.EnsureStream(ctx, js, o.stream); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}
