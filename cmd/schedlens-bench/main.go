// Command schedlens-bench measures, in one run over the same eventgen rows, how fast the whole
// pipeline stores events (NATS JetStream → correlator → Postgres with projections) against two
// baselines on the same Postgres: a raw CopyFrom into a bare table, and one INSERT per event.
// It prints the three rates and their ratios; it asserts nothing. `make bench` runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/correlator"
)

func main() { config.Main(run) }

const usageText = `usage: schedlens-bench [flags]

Publishes -n eventgen envelopes to JetStream, then times a correlator storing them into a fresh
Postgres database with projections; times a raw CopyFrom of the same rows into a bare table and
one INSERT per event (first 5000 rows) as baselines; prints the rates and their ratios.
Temporary databases schedlens_bench_* are created on -admin-database-url and dropped at the end.
With -reads it runs the read bench instead: one experiment of -read-runs runs, -read-pods pods
and -read-requests request results stored through the store, then the api's comparison,
comparison.csv, interruptions, timeline and 1000-pod page timed -read-iterations times each
(p50, p95 beside the targets).

flags:
`

// Targets the ratios are compared with in the output (printed, not asserted).
const (
	targetVsCopyFrom = 0.30
	targetVsNaive    = 10.0
	naiveMaxRows     = 5000
)

// Environment variables of the bench's own settings. The correlator's SCHEDLENS_* variables are
// deliberately not read: the bench never writes into a real setup, and its defaults stay fixed.
const (
	envNATSURL   = "SCHEDLENS_BENCH_NATS_URL"
	envAdminURL  = "SCHEDLENS_BENCH_DATABASE_URL"
	envBatchSize = "SCHEDLENS_BENCH_BATCH_SIZE"
	envBatchWait = "SCHEDLENS_BENCH_BATCH_WAIT"
)

const defaultAdminURL = "postgres://root@127.0.0.1:5432/test?sslmode=disable"

type options struct {
	n         int
	batchSize int
	batchWait time.Duration
	natsURL   string
	adminURL  string
	json      bool
	log       config.Logging
	lag       lagOptions    // -lag: lag.go
	memory    memoryOptions // -memory: memory.go
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if isChild(args) {
		return runChild(ctx, args, stdout, stderr)
	}
	var o options
	var ro readOptions
	fs := config.New("schedlens-bench", getenv, stderr)
	ro.define(fs)
	fs.Int(&o.n, "n", "", 50000, "events to store end to end and with CopyFrom")
	fs.Int(&o.batchSize, "batch-size", envBatchSize, 1000, "correlator batch size, also the CopyFrom chunk size")
	fs.Duration(&o.batchWait, "batch-wait", envBatchWait, 100*time.Millisecond, "correlator batch wait")
	fs.String(&o.natsURL, "nats-url", envNATSURL, "", "external NATS server with JetStream (default: an in-process server in a temp dir); its SCHEDLENS stream must be empty and unconsumed")
	fs.String(&o.adminURL, "admin-database-url", envAdminURL, defaultAdminURL, "Postgres URL of a database on the server where the bench creates and drops its temporary databases")
	fs.BoolVar(&o.json, "json", false, "also print the figures as one JSON object")
	o.log.Define(fs)
	o.lag.define(fs)
	o.memory.define(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
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
	switch {
	case o.n <= 0:
		return config.Usagef("-n must be positive, got %d", o.n)
	case o.batchSize <= 0:
		return config.Usagef("-batch-size must be positive, got %d", o.batchSize)
	case o.batchWait <= 0:
		return config.Usagef("-batch-wait must be positive, got %s", o.batchWait)
	}
	if err := ro.validate(); ro.enabled && err != nil {
		return err
	}
	switch {
	case o.lag.enabled && o.memory.enabled, (o.lag.enabled || o.memory.enabled) && ro.enabled:
		return config.Usagef("-lag, -memory and -reads are separate runs: give one")
	case o.lag.enabled:
		return runLag(ctx, o, stdout, stderr)
	case o.memory.enabled:
		return runMemory(ctx, o, stdout, stderr)
	}
	logger, err := o.log.Logger(stderr, "bench")
	if err != nil {
		return err
	}
	corrLogger, err := o.log.Logger(stderr, "correlator")
	if err != nil {
		return err
	}

	pg, err := connectPostgres(ctx, o.adminURL, logger)
	if err != nil {
		return err
	}
	defer pg.dropAll()
	if ro.enabled {
		return runReads(ctx, pg, ro, o.json, stdout, logger)
	}

	envs, err := generate(o.n)
	if err != nil {
		return err
	}
	logger.Info("generated envelopes", "events", len(envs))

	cfg := correlator.DefaultConfig()
	cfg.Consumer = "schedlens-bench-" + randomHex(4)
	cfg.BatchSize, cfg.BatchWait = o.batchSize, o.batchWait
	e2e, err := measureEndToEnd(ctx, pg, o.natsURL, envs, cfg, logger, corrLogger)
	if err != nil {
		return fmt.Errorf("end to end: %w", err)
	}
	raw, err := measureCopyFrom(ctx, pg, envs, o.batchSize)
	if err != nil {
		return fmt.Errorf("raw CopyFrom: %w", err)
	}
	naive, err := measureNaive(ctx, pg, envs[:min(len(envs), naiveMaxRows)])
	if err != nil {
		return fmt.Errorf("naive INSERT: %w", err)
	}

	r := newReport(o, e2e, raw, naive)
	r.print(stdout)
	if o.json {
		if err := json.NewEncoder(stdout).Encode(r); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	}
	return nil
}

// figure is one measured rate.
type figure struct {
	Count     int     `json:"count"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"`
}

func newFigure(count int, d time.Duration) figure {
	return figure{Count: count, Seconds: d.Seconds(), PerSecond: float64(count) / d.Seconds()}
}

// report is everything the bench prints, also as JSON with -json.
type report struct {
	N          int     `json:"n"`
	BatchSize  int     `json:"batch_size"`
	BatchWait  string  `json:"batch_wait"`
	EndToEnd   figure  `json:"end_to_end"`
	CopyFrom   figure  `json:"raw_copy_from"`
	Naive      figure  `json:"naive_insert"`
	VsCopyFrom float64 `json:"end_to_end_over_raw_copy_from"`
	VsNaive    float64 `json:"end_to_end_over_naive_insert"`
	Targets    struct {
		VsCopyFrom float64 `json:"end_to_end_over_raw_copy_from"`
		VsNaive    float64 `json:"end_to_end_over_naive_insert"`
	} `json:"targets"`
}

func newReport(o options, e2e, raw, naive figure) report {
	r := report{N: o.n, BatchSize: o.batchSize, BatchWait: o.batchWait.String(), EndToEnd: e2e, CopyFrom: raw, Naive: naive,
		VsCopyFrom: e2e.PerSecond / raw.PerSecond, VsNaive: e2e.PerSecond / naive.PerSecond}
	r.Targets.VsCopyFrom, r.Targets.VsNaive = targetVsCopyFrom, targetVsNaive
	return r
}

func (r report) print(w io.Writer) {
	fmt.Fprintf(w, "schedlens-bench: %d eventgen events, batch size %d, batch wait %s\n", r.N, r.BatchSize, r.BatchWait)
	row := func(label string, f figure, unit string) {
		fmt.Fprintf(w, "  %-56s %6d %-6s %6.2f s %7.0f %s/s\n", label, f.Count, unit, f.Seconds, f.PerSecond, unit)
	}
	row("end-to-end (NATS → correlator → Postgres + projections)", r.EndToEnd, "events")
	row("raw CopyFrom into a bare table", r.CopyFrom, "rows")
	naive := "naive INSERT per event"
	if r.Naive.Count < r.N {
		naive = fmt.Sprintf("naive INSERT per event (first %d of %d rows)", r.Naive.Count, r.N)
	}
	row(naive, r.Naive, "rows")
	fmt.Fprintf(w, "  end-to-end / raw CopyFrom = %.2f  (target ≥ %.2f)\n", r.VsCopyFrom, r.Targets.VsCopyFrom)
	fmt.Fprintf(w, "  end-to-end / naive INSERT = %.1f×  (target ≥ %.0f×)\n", r.VsNaive, r.Targets.VsNaive)
}
