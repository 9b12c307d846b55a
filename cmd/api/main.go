// Command api serves the schedlens HTTP API over the correlator's Postgres projections.
// `api compare NAME` prints an experiment's comparison for a terminal instead; `api record NAME`
// writes its record (internal/record) to a file.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/apiapp"
	"github.com/schedlens/schedlens/internal/auth"
	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/ops"
	"github.com/schedlens/schedlens/internal/record"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/workloadmetrics"
)

func main() { config.Main(run) }

// run serves until ctx ends, or prints a comparison.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var (
		httpAddr, databaseURL, baseline, namespace, kubeconfig string
		recordOut                                              string
		idle                                                   int
		workloadMetrics                                        time.Duration
		proc                                                   config.Process
		authFlags                                              auth.Flags
		tlsFiles                                               ops.TLSFiles
	)
	fs := config.New("api", getenv, stderr)
	fs.String(&httpAddr, "http-addr", config.EnvHTTPAddr, "127.0.0.1:8080", "address the API listens on (also /metrics, /healthz, /readyz); a non-loopback address needs authentication (-auth-token-file, -auth kubernetes) or -insecure-no-auth")
	fs.Secret(&databaseURL, "database-url", config.EnvDatabaseURL, config.DefaultDatabaseURL, "Postgres `URL` (sslmode=verify-full to verify the server)")
	fs.Int(&idle, "gpu-idle-threshold", "SCHEDLENS_GPU_IDLE_THRESHOLD", align.IdleUtilThreshold, "GPU utilisation (percent) under which allocated GPU time counts as idle")
	fs.Duration(&workloadMetrics, "workload-metrics-interval", "SCHEDLENS_WORKLOAD_METRICS_INTERVAL", workloadmetrics.DefaultInterval, "compute the workload metrics of /metrics (disruptions, workloads below desired, pods waiting for a GPU) from the store this often; 0: not exported")
	fs.StringVar(&baseline, "baseline", "", "compare: the baseline arm (default: the definition's, else control)")
	fs.StringVar(&namespace, "namespace", "", "compare, record: only the experiment's pods in this namespace (default all)")
	fs.StringVar(&recordOut, "o", "", "record: the file to write (default NAME.record.json; - for standard output)")
	authFlags.Define(fs, "the API and the web UI")
	authFlags.DefineScope(fs)
	fs.String(&kubeconfig, "kubeconfig", "KUBECONFIG", "", "-auth kubernetes: kubeconfig of the API server that reviews tokens (default: in-cluster config, else ~/.kube/config)")
	config.TLSFlags(fs, &tlsFiles.CertFile, &tlsFiles.KeyFile)
	proc.Define(fs)
	fs.UsageText("usage: api [flags]\n       api compare [flags] NAME   (flags before or after NAME)\n       api record [flags] NAME    (writes NAME.record.json, or -o FILE)\n\nServes the schedlens API (see README.md for the endpoints), prints the comparison of\nexperiment NAME's arms for a terminal, or writes experiment NAME's record (docs/records.md).\n\nflags:\n")
	// Flags may come before, between or after `compare` and NAME.
	if help, err := fs.ParseOrHelp(args[1:]); help || err != nil {
		return err
	}
	pos := fs.Args()
	compareName, recordName := "", ""
	switch {
	case len(pos) > 0 && (pos[0] == "compare" || pos[0] == "record"):
		if len(pos) != 2 || pos[1] == "" {
			fs.Usage()
			return config.Usagef("%s takes one experiment NAME", pos[0])
		}
		if pos[0] == "compare" {
			compareName = pos[1]
		} else {
			recordName = pos[1]
		}
	case len(pos) > 0:
		fs.Usage()
		return config.Usagef("unexpected arguments %q", pos)
	}
	if idle < 0 || idle > 100 {
		fs.Usage()
		return config.Usagef("-gpu-idle-threshold must be in 0..100")
	}
	if workloadMetrics < 0 {
		fs.Usage()
		return config.Usagef("-workload-metrics-interval must not be negative")
	}
	if workloadMetrics == 0 {
		workloadMetrics = -1 // apiapp: not exported
	}
	logger, err := proc.Start(stderr, "api", getenv)
	if err != nil {
		fs.Usage()
		return err
	}
	if compareName == "" && recordName == "" {
		if err := authFlags.Check(); err != nil {
			fs.Usage()
			return err
		}
		var client kubernetes.Interface
		if authFlags.Kubernetes() {
			rc, err := config.KubeConfig(kubeconfig)
			if err != nil {
				return err
			}
			rc.UserAgent = "schedlens-api"
			if client, err = kubernetes.NewForConfig(rc); err != nil {
				return fmt.Errorf("kubernetes client: %w", err)
			}
		}
		a, err := authFlags.Build(client, logger.With("component", "auth"))
		if err != nil {
			return err
		}
		return apiapp.Run(ctx, apiapp.Options{HTTPAddr: httpAddr, DatabaseURL: databaseURL, IdleThreshold: new(float64(idle)), Logger: logger,
			Auth: a, AuthMetrics: authFlags.Metrics, InsecureNoAuth: authFlags.Insecure, TLS: tlsFiles, WorkloadMetricsInterval: workloadMetrics})
	}
	db, err := store.Open(ctx, databaseURL, logger, store.WithIdleThreshold(float64(idle)))
	if err != nil {
		return err
	}
	defer db.Close()
	if recordName != "" {
		return writeRecord(ctx, db, recordName, namespace, recordOut, stdout)
	}
	c, err := db.Comparison(ctx, compareName, namespace, baseline)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("compare: no experiment %q", compareName)
	}
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return compare.WriteTable(stdout, c)
}

// writeRecord writes experiment name's record to out (default NAME.record.json; - is stdout)
// and says where, with its digest.
func writeRecord(ctx context.Context, db *store.DB, name, namespace, out string, stdout io.Writer) error {
	r, err := db.Record(ctx, name, namespace)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("record: no pods of experiment %q", name)
	}
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	b, err := record.Marshal(r)
	if err != nil {
		return err
	}
	if out == "-" {
		_, err = stdout.Write(b)
		return err
	}
	if out == "" {
		out = name + ".record.json"
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	fmt.Fprintf(stdout, "record of %s written to %s (%d bytes, %s)\n", name, out, len(b), r.Digest)
	return nil
}
