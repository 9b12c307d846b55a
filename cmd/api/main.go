// Command api serves the schedlens HTTP API over the correlator's Postgres projections.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/ops"
	"github.com/schedlens/schedlens/internal/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run serves until ctx ends. bound, when not nil, receives the listening address.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer, bound chan<- string) error {
	var (
		httpAddr, databaseURL string
		idle                  int
		log                   config.Logging
	)
	fs := config.New("api", getenv, stderr)
	fs.String(&httpAddr, "http-addr", config.EnvHTTPAddr, ":8080", "address the API listens on (also /metrics, /healthz, /readyz)")
	fs.String(&databaseURL, "database-url", config.EnvDatabaseURL, config.DefaultDatabaseURL, "Postgres URL")
	fs.Int(&idle, "gpu-idle-threshold", "SCHEDLENS_GPU_IDLE_THRESHOLD", align.IdleUtilThreshold, "GPU utilisation (percent) under which allocated GPU time counts as idle")
	log.Define(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: api [flags]\n\nServes the read-only schedlens API. See README.md for the endpoints.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return config.Usagef("unexpected arguments %q", fs.Args())
	}
	if idle < 0 || idle > 100 {
		fs.Usage()
		return config.Usagef("-gpu-idle-threshold must be in 0..100")
	}
	logger, err := log.Logger(stderr, "api")
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, databaseURL, logger, store.WithIdleThreshold(float64(idle)))
	if err != nil {
		return err
	}
	defer db.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h, err := api.New(db, logger, reg, reg)
	if err != nil {
		return err
	}
	return ops.Serve(ctx, httpAddr, h, logger, bound)
}
