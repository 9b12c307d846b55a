// Command correlator consumes the SCHEDLENS stream into Postgres: events, per-pod timelines and
// the other projections. `correlator migrate` applies the schema; `correlator rebuild`
// recomputes every projection from the events table.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/ops"
	"github.com/schedlens/schedlens/internal/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

const usageText = `usage: correlator [command] [flags]   (flags may also come before the command)

commands:
  serve     consume the stream into Postgres (default); migrates the schema first
  migrate   apply pending schema migrations and exit
  rebuild   recompute every projection from the events table and exit

flags:
`

type options struct {
	natsURL, databaseURL, metricsAddr string
	cfg                               correlator.Config
	stream                            bus.StreamConfig
	rebuildChunk                      int
	log                               config.Logging
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var o options
	fs := config.New("correlator", getenv, stderr)
	fs.String(&o.natsURL, "nats-url", config.EnvNATSURL, config.DefaultNATSURL, "NATS server URL")
	fs.String(&o.databaseURL, "database-url", config.EnvDatabaseURL, config.DefaultDatabaseURL, "Postgres URL")
	fs.String(&o.metricsAddr, "metrics-addr", config.EnvMetricsAddr, ":9091", "address serving /metrics, /healthz and /readyz")
	def := correlator.DefaultConfig()
	fs.String(&o.cfg.Consumer, "consumer", "SCHEDLENS_CONSUMER", def.Consumer, "durable JetStream consumer name (replicas share it)")
	fs.Int(&o.cfg.BatchSize, "batch-size", "SCHEDLENS_BATCH_SIZE", def.BatchSize, "most messages stored per transaction")
	fs.Duration(&o.cfg.BatchWait, "batch-wait", "SCHEDLENS_BATCH_WAIT", def.BatchWait, "longest wait for a batch to fill")
	fs.Duration(&o.cfg.AckWait, "ack-wait", "SCHEDLENS_ACK_WAIT", def.AckWait, "redeliver a message not acknowledged within this time")
	fs.Duration(&o.cfg.RetryDelay, "retry-delay", "SCHEDLENS_RETRY_DELAY", def.RetryDelay, "redelivery delay after a transient database failure")
	sdef := bus.DefaultStreamConfig()
	fs.Duration(&o.stream.MaxAge, "stream-max-age", "SCHEDLENS_STREAM_MAX_AGE", sdef.MaxAge, "drop stream messages older than this")
	fs.Int64(&o.stream.MaxBytes, "stream-max-bytes", "SCHEDLENS_STREAM_MAX_BYTES", sdef.MaxBytes, "most bytes the stream holds")
	fs.Duration(&o.stream.Duplicates, "stream-duplicate-window", "SCHEDLENS_STREAM_DUPLICATE_WINDOW", sdef.Duplicates, "window in which JetStream drops a repeated message id")
	fs.Int(&o.rebuildChunk, "rebuild-chunk", "", 5000, "events read per step by rebuild")
	o.log.Define(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}

	// Flags may come before or after the command.
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	cmd, rest := "serve", fs.Args()
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		fs.Usage()
		return config.Usagef("unexpected arguments %q", rest)
	}
	switch cmd {
	case "serve", "migrate", "rebuild":
	default:
		fs.Usage()
		return config.Usagef("unknown command %q", cmd)
	}
	logger, err := o.log.Logger(stderr, "correlator")
	if err != nil {
		return err
	}

	db, err := store.Open(ctx, o.databaseURL, logger)
	if err != nil {
		return err
	}
	defer db.Close()

	switch cmd {
	case "migrate":
		return db.Migrate(ctx)
	case "rebuild":
		if err := db.Migrate(ctx); err != nil {
			return err
		}
		start := time.Now()
		res, err := db.Rebuild(ctx, o.rebuildChunk)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "rebuilt projections from %d events in %s (%d no longer decode)\n", res.Events, time.Since(start).Round(time.Millisecond), res.Rejected)
		return nil
	default:
		return serve(ctx, o, db, logger)
	}
}

func serve(ctx context.Context, o options, db *store.DB, logger *slog.Logger) error {
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	nc, err := bus.Connect(o.natsURL, "schedlens-correlator", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if _, err := bus.EnsureStream(ctx, js, o.stream); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c, err := correlator.New(js, db, o.cfg, logger, reg)
	if err != nil {
		return config.Usagef("%v", err)
	}
	ready := func(ctx context.Context) error {
		if !nc.IsConnected() {
			return errors.New("nats: not connected")
		}
		return db.Ping(ctx)
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return c.Run(gctx) })
	g.Go(func() error { return ops.Serve(gctx, o.metricsAddr, ops.Handler(reg, ready), logger, nil) })
	err = g.Wait()
	// Acks of the last batch are in the connection's buffer: send them before closing.
	if ferr := nc.FlushTimeout(5 * time.Second); ferr != nil {
		logger.Warn("flush acks on shutdown", "error", ferr)
	}
	logger.Info("stopped")
	return err
}
