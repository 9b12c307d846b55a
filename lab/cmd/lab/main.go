// Command lab runs a real Kubernetes scheduler on simulated GPU nodes on this machine.
//
//	lab up      start the lab and keep it running (writes a kubeconfig)
//	lab demo    start the lab and schedlens beside it, run the day20 experiment, then the workload
//	            scenario (an unlabelled Deployment through a rollout, a drain and a node failure),
//	            print a summary, and keep the API up until Ctrl-C (--exit to stop after the summary)
//	lab preflight  check manifests against a cluster, optionally placing them with the real
//	            scheduler (exit 0 no error, 1 errors found, 2 bad usage or input)
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/experiment"
	"github.com/schedlens/schedlens/lab/labenv"
	preflightapp "github.com/schedlens/schedlens/lab/preflight/app"
)

func main() { config.Main(run) }

const usageText = `usage: lab up [flags]
       lab demo [flags]
       lab preflight -f PATH... [flags]   (lab preflight -h for its flags)

commands:
  up     start etcd, kube-apiserver, kube-scheduler and kube-controller-manager on 127.0.0.1
         with the simulated GPU nodes, kubelet (node heartbeats), inference endpoints and
         dcgm-exporters; write a kubeconfig; run until SIGINT/SIGTERM
  demo   the above, plus an embedded NATS server and schedlens' collector, correlator and api
         on the machine's Postgres; run the experiment (default day20: 4 arms × 3 repeats and the
         disruption scenarios; -manifests DIR: the experiment as Kustomize manifests) with a
         progress display, then the workload scenario (-workload=false: skip it), print a
         summary, then keep the API up until Ctrl-C (-exit: stop after the summary); -dra adds
         GPU pools NVIDIA's DRA driver publishes and runs day20-dra (device-plugin sharing vs
         DRA claims, an admission gate; docs/dra.md)
  preflight  check Deployments, StatefulSets, Jobs, Pods, PDBs, PriorityClasses and experiment
         ConfigMaps against a live cluster (-kubeconfig) or a lab cluster spec; -simulate places
         every replica with the real kube-scheduler; see docs/preflight.md

flags:
`

type options struct {
	dir, clusterFile, experimentFile string
	manifests                        string
	databaseURL, httpAddr            string
	speed                            float64
	seed                             int64
	exit, workload, dra              bool
	log                              config.Logging
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var o options
	fs := config.New("lab", getenv, stderr)
	fs.String(&o.dir, "dir", "SCHEDLENS_LAB_DIR", "", "control plane state and kubeconfig (default: a temporary directory, removed on exit)")
	fs.String(&o.clusterFile, "cluster", "SCHEDLENS_LAB_CLUSTER", "", "GPU cluster spec YAML (default: the embedded one, lab/cluster/default.yaml)")
	fs.String(&o.experimentFile, "experiment", "SCHEDLENS_LAB_EXPERIMENT", "", "experiment definition YAML (demo; default: day20, lab/experiment/day20.yaml)")
	fs.String(&o.manifests, "manifests", "SCHEDLENS_LAB_MANIFESTS", "", "demo: run the experiment written as Kustomize manifests in this directory (experiment/ and arms/<arm>/, e.g. deploy/examples/day20) instead of -experiment")
	fs.String(&o.databaseURL, "database-url", config.EnvDatabaseURL, config.DefaultDatabaseURL, "Postgres URL (demo; the database is created if missing)")
	fs.String(&o.httpAddr, "http-addr", config.EnvHTTPAddr, "127.0.0.1:8080", "address of the schedlens API (demo)")
	var speed, seed int
	fs.Int(&speed, "speed-percent", "SCHEDLENS_LAB_SPEED_PERCENT", 50, "simulated kubelet delays as a percentage of the model's (100 = the documented delays)")
	fs.Int(&seed, "seed", "SCHEDLENS_LAB_SEED", 20, "seed of the simulation")
	fs.BoolVar(&o.exit, "exit", false, "demo: stop after printing the summary")
	fs.Bool(&o.dra, "dra", "SCHEDLENS_LAB_DRA", false, "add the DRA pools (an H200 node and a MIG node whose GPUs the simulated gpu.nvidia.com driver publishes as ResourceSlices); demo: run day20-dra unless -experiment or -manifests")
	fs.Bool(&o.workload, "workload", "SCHEDLENS_LAB_WORKLOAD", true, "demo: after the experiment, take an unlabelled inference Deployment (namespace prod-<date>) through a rollout, a drain and a node failure, through the real controllers")
	o.log.Define(fs)
	fs.UsageText(usageText)
	rest := args[1:]
	if len(rest) > 0 && rest[0] == "preflight" {
		// Its own flags and exit statuses (1: errors found, 2: bad usage or input).
		if code := preflightapp.Run(ctx, rest[1:], getenv, os.Stdin, stdout, stderr); code != 0 {
			return config.ExitStatus(code) // preflight has printed its report and messages
		}
		return nil
	}
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		_ = fs.Parse(rest)
		fs.Usage()
		return config.Usagef("a command is required")
	}
	cmd := rest[0]
	if help, err := fs.ParseOrHelp(rest[1:]); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return config.Usagef("unexpected arguments %q", fs.Args())
	}
	if cmd != "up" && cmd != "demo" {
		fs.Usage()
		return config.Usagef("unknown command %q", cmd)
	}
	if speed <= 0 || speed > 1000 {
		fs.Usage()
		return config.Usagef("-speed-percent must be in 1..1000")
	}
	o.speed, o.seed = float64(speed)/100, int64(seed)

	spec := cluster.Default()
	if o.clusterFile != "" {
		var err error
		if spec, err = cluster.Load(o.clusterFile); err != nil {
			return err
		}
	}
	def := experiment.Day20()
	if o.dra {
		spec, def = cluster.WithDRA(spec), experiment.Day20DRA()
	}
	var extra []*unstructured.Unstructured
	switch {
	case o.manifests != "" && o.experimentFile != "":
		fs.Usage()
		return config.Usagef("-manifests and -experiment are exclusive")
	case o.manifests != "":
		m, err := experiment.LoadManifests(o.manifests)
		if err != nil {
			return err
		}
		def, extra = m.Definition, m.Objects
	case o.experimentFile != "":
		var err error
		if def, err = experiment.Load(o.experimentFile); err != nil {
			return err
		}
	}
	logger, err := o.log.Logger(stderr, "lab")
	if err != nil {
		return err
	}
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "schedlens-lab-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.dir)
	}
	quiet := logger
	if cmd == "demo" {
		// The progress display owns the terminal; only warnings are logged, to a file.
		f, err := os.Create(filepath.Join(o.dir, "schedlens.log"))
		if err != nil {
			return err
		}
		defer f.Close()
		quiet = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	l, err := labenv.Start(ctx, labenv.Options{Dir: o.dir, Spec: spec, Seed: uint64(o.seed), Speed: o.speed, Logger: quiet})
	if err != nil {
		return err
	}
	defer l.Stop()
	fmt.Fprintf(stdout, "lab up: %d GPU nodes, kubeconfig %s\n", len(spec.Nodes()), l.Kubeconfig)
	if cmd == "up" {
		fmt.Fprintf(stdout, "  kubectl --kubeconfig %s get nodes\nCtrl-C stops the lab.\n", l.Kubeconfig)
		<-ctx.Done()
		return nil
	}
	return demo(ctx, o, l, def, extra, quiet, stdout)
}
