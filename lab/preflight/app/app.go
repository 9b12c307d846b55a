// Package app is `lab preflight`: flags, the cluster to check against (a live snapshot or a
// lab cluster spec), the rules, the optional dry run with the real scheduler, and the report
// with its exit status. lab/cmd/lab calls Run; tests embed it.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/experiment"
	"github.com/schedlens/schedlens/lab/preflight"
	"github.com/schedlens/schedlens/lab/preflight/simulate"
)

// Exit statuses.
const (
	ExitOK       = 0 // no finding is an error
	ExitFindings = 1 // some finding is an error
	ExitUsage    = 2 // bad usage or input, or the check could not run
)

const usageText = `usage: lab preflight -f PATH... [flags]

Checks Deployments, StatefulSets, Jobs, Pods, PodDisruptionBudgets, PriorityClasses and
experiment ConfigMaps (files or directories of YAML, multi-document; - for stdin, e.g. helm
template … | lab preflight -f -) against a cluster: a live one (-kubeconfig, read-only) or a
lab cluster spec (-cluster, default the lab's). -simulate also places every replica with the
real kube-scheduler on a copy of that cluster. Exit status: 0 no error, 1 some error, 2 bad
usage or input. Rules and output schema: docs/preflight.md.

flags:
`

type paths []string

func (p *paths) String() string     { return strings.Join(*p, ",") }
func (p *paths) Set(v string) error { *p = append(*p, v); return nil }

type options struct {
	files                     paths
	kubeconfig, kubeContext   string
	clusterFile, experiment   string
	output, namespace, apiURL string
	poolLabel, dir            string
	simulate, dra             bool
	simTimeout, modelLoad     time.Duration
	log                       config.Logging
}

// Run runs `lab preflight` (args without the command name) and returns the exit status.
func Run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o options
	fs := config.New("lab preflight", getenv, stderr)
	fs.Var(&o.files, "f", "manifest file or directory (repeatable; - for stdin); more paths may follow the flags")
	fs.String(&o.kubeconfig, "kubeconfig", "", "", "check against this live cluster (read-only: nodes, PriorityClasses, PDBs, pods' GPU requests)")
	fs.String(&o.kubeContext, "context", "", "", "kubeconfig context (default: its current one)")
	fs.String(&o.clusterFile, "cluster", "SCHEDLENS_LAB_CLUSTER", "", "lab cluster spec YAML to check against (default: the lab's, lab/cluster/default.yaml)")
	fs.String(&o.experiment, "experiment", "", "", "also check the pods a lab experiment definition's runner creates (e.g. lab/experiment/day20.yaml; \"day20\" or \"day20-dra\" for the embedded ones)")
	fs.Bool(&o.dra, "dra", "SCHEDLENS_LAB_DRA", false, "with a lab cluster spec: add the lab's DRA pools (lab/cluster/dra.yaml: its DeviceClasses and ResourceSlices), as lab demo -dra runs")
	fs.String(&o.output, "o", "", "table", "output: table, json or sarif")
	fs.String(&o.namespace, "namespace", "", "default", "namespace of objects that name none")
	fs.String(&o.apiURL, "api", "SCHEDLENS_API_URL", "", "schedlens API to read measured model-load times from (e.g. http://127.0.0.1:8080)")
	fs.Duration(&o.modelLoad, "model-load", "SCHEDLENS_PREFLIGHT_MODEL_LOAD", preflight.DefaultModelLoad, "model-load time assumed where schedlens measured none")
	fs.String(&o.poolLabel, "pool-label", "", "", "node label naming node pools (default: the first of "+strings.Join(preflight.PoolLabels, ", ")+" a node carries)")
	fs.BoolVar(&o.simulate, "simulate", false, "dry run: place every replica with the real kube-scheduler on a copy of the cluster")
	fs.Duration(&o.simTimeout, "simulate-timeout", "", 60*time.Second, "dry run: longest wait for the scheduler to decide about one workload's pods")
	fs.String(&o.dir, "dir", "", "", "dry run: control plane state and logs (default: a temporary directory, removed)")
	o.log.Level = "warn"
	fs.String(&o.log.Level, "log-level", config.EnvLogLevel, "warn", "log level: debug, info, warn or error")
	fs.String(&o.log.Format, "log-format", config.EnvLogFormat, "text", "log format: text or json")
	fs.UsageText(usageText)
	usage := func(format string, a ...any) int {
		fs.Usage()
		fmt.Fprintf(stderr, "lab preflight: "+format+"\n", a...)
		return ExitUsage
	}
	if help, err := fs.ParseOrHelp(args); help {
		return ExitOK
	} else if err != nil {
		return ExitUsage
	}
	o.files = append(o.files, fs.Args()...)
	switch {
	case len(o.files) == 0 && o.experiment == "":
		return usage("-f PATH (or -experiment) is required")
	case o.kubeconfig != "" && o.clusterFile != "":
		return usage("-kubeconfig and -cluster exclude each other")
	case o.kubeconfig != "" && o.dra:
		return usage("-dra adds the lab's DRA pools to a lab cluster spec; a live cluster's are read from it")
	case o.output != "table" && o.output != "json" && o.output != "sarif":
		return usage("-o %q: want table, json or sarif", o.output)
	case o.simTimeout <= 0 || o.modelLoad <= 0:
		return usage("-simulate-timeout and -model-load must be positive")
	}
	logger, err := o.log.Logger(stderr, "preflight")
	if err != nil {
		return usage("%v", err)
	}
	if code, err := check(ctx, o, stdin, stdout, logger); err != nil {
		fmt.Fprintf(stderr, "lab preflight: %v\n", err)
		return ExitUsage
	} else {
		return code
	}
}

func check(ctx context.Context, o options, stdin io.Reader, stdout io.Writer, logger *slog.Logger) (int, error) {
	in := preflight.Load(o.files, stdin, o.namespace)
	if o.experiment != "" {
		def := experiment.Day20()
		if o.experiment == "day20-dra" {
			def = experiment.Day20DRA()
		} else if o.experiment != "day20" {
			var err error
			if def, err = experiment.Load(o.experiment); err != nil {
				return 0, err
			}
		}
		b, err := preflight.ExperimentManifests(def, o.namespace, 1)
		if err != nil {
			return 0, err
		}
		in.Parse("experiment "+def.Name+" (generated)", b, o.namespace)
	}
	c, err := clusterOf(ctx, o)
	if err != nil {
		return 0, err
	}
	c.PoolLabel = o.poolLabel
	opts := preflight.Options{ModelLoad: o.modelLoad}
	if o.apiURL != "" {
		client := &http.Client{Timeout: 30 * time.Second}
		if opts.ModelLoads, err = preflight.FetchModelLoads(ctx, client, o.apiURL, preflight.ModelLoadKeys(in)); err != nil {
			return 0, err
		}
	}
	report := preflight.Check(in, c, opts)
	if o.simulate {
		sim, err := runSimulation(ctx, o, in, c, logger)
		if err != nil {
			return 0, err
		}
		report.Simulation = sim
		report.AddFindings(preflight.SimulationFindings(sim, in))
	}
	switch o.output {
	case "json":
		err = report.WriteJSON(stdout)
	case "sarif":
		err = report.WriteSARIF(stdout, version())
	default:
		err = report.WriteTable(stdout)
	}
	if err != nil {
		return 0, err
	}
	return report.ExitCode(), nil
}

// clusterOf is the cluster to check against: a live snapshot, or a lab cluster spec.
func clusterOf(ctx context.Context, o options) (*preflight.Cluster, error) {
	if o.kubeconfig == "" {
		s, source := cluster.Default(), "lab cluster spec (default)"
		if o.clusterFile != "" {
			var err error
			if s, err = cluster.Load(o.clusterFile); err != nil {
				return nil, err
			}
			source = "lab cluster spec " + o.clusterFile
		}
		if o.dra {
			s, source = cluster.WithDRA(s), source+" with the DRA pools"
		}
		return preflight.FromSpec(s, source), nil
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: o.kubeconfig}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.kubeContext})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", o.kubeconfig, err)
	}
	rest, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", o.kubeconfig, err)
	}
	rest.Timeout = 30 * time.Second
	client, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return nil, err
	}
	name := o.kubeContext
	if name == "" {
		name = raw.CurrentContext
	}
	return preflight.Snapshot(ctx, client, "kubeconfig context "+name)
}

func runSimulation(ctx context.Context, o options, in *preflight.Input, c *preflight.Cluster, logger *slog.Logger) (*preflight.Simulation, error) {
	dir := o.dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "schedlens-preflight-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	s, err := simulate.Start(ctx, dir, logger)
	if err != nil {
		return nil, err
	}
	defer s.Stop()
	return s.Run(ctx, preflight.SimulationOf(in, c), o.simTimeout)
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "0.0.0-dev"
}
