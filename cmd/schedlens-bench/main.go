// Command schedlens-bench tells the scaling story of ingest: for each size of -sizes and each
// event mix, it times, over the same eventgen rows, the whole pipeline (NATS JetStream →
// correlator → Postgres with projections) against baselines on the same Postgres, in the same
// run: a raw CopyFrom into a bare table, one INSERT per event (on a fixed sample) and, measured
// from outside, psql's \copy of the envelope lines into a bare (id, body jsonb) table. It
// prints the rates, their ratios and the largest size's rate over the smallest's, with the
// targets beside them; it asserts nothing. `make bench` runs it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natsserver"
)

func main() { config.Main(run) }

const usageText = `usage: schedlens-bench [flags]

For each size of -sizes (or the one size -n) and each mix of -mix, publishes that many eventgen
envelopes to JetStream, then times a correlator storing them into a fresh Postgres database with
projections; times a raw CopyFrom of the same rows into a bare table, one INSERT per event
(the first -naive-rows rows; the rate is per row, so it holds for the whole size) and psql's
\copy of the envelope lines into (id text primary key, body jsonb) (-psql) as baselines;
prints the rates, their ratios and how the rate at the largest size compares with the smallest.
Mixes: pods (many short-lived pods, an inventory every few runs, like a busy cluster) and
requests (36 pods, many request results); both runs the two.
-lag, -reads, -workloads, -memory and -soak are other runs, one at a time, in place of this one:
the lag from an event offered to the collector's publisher to visible in the API under a fixed
rate; the read latencies of a large experiment through the api; those of a Deployment's window of
1,000 pods and its disruptions; the collector's memory with many pods in scope; a month of the
reference cluster with a 7-day retention, bytes and reads per simulated day. make bench runs
them all, one after the other.
Temporary databases schedlens_bench_* are created on -admin-database-url and dropped at the end.

flags:
`

// Targets the figures are compared with in the output (printed, not asserted; issue 12).
const (
	targetVsCopyFrom = 0.50 // end to end / raw CopyFrom, every mix and size
	targetFlat       = 0.80 // rate at the largest size / rate at the smallest
	targetPods1M     = 0.30 // the pod mix's end to end / raw CopyFrom at its largest size
	defaultSizes     = "50000,200000,1000000"
	defaultNaiveRows = 5000
	defaultPsql      = "psql"
)

// Environment variables of the bench's own settings. The correlator's SCHEDLENS_* variables are
// deliberately not read: the bench never writes into a real setup, and its defaults stay fixed.
const (
	envNATSURL   = "SCHEDLENS_BENCH_NATS_URL"
	envAdminURL  = "SCHEDLENS_BENCH_DATABASE_URL"
	envBatchSize = "SCHEDLENS_BENCH_BATCH_SIZE"
	envBatchWait = "SCHEDLENS_BENCH_BATCH_WAIT"
	envSizes     = "SCHEDLENS_BENCH_SIZES"
	envMix       = "SCHEDLENS_BENCH_MIX"
)

const defaultAdminURL = "postgres://root@127.0.0.1:5432/test?sslmode=disable"

type options struct {
	n         int
	sizesFlag string
	sizes     []int
	mixFlag   string
	mixes     []mix
	naiveRows int
	batchSize int
	batchWait time.Duration
	// concurrentBatches: the correlator's -concurrent-batches in the end-to-end phase.
	concurrentBatches int
	natsURL           string
	adminURL          string
	json              bool
	// cpuProfile: each timed end-to-end phase's CPU profile is written to
	// <cpuProfile>-<mix>-<events>.pprof (go tool pprof).
	cpuProfile string
	// psql: the client timing issue 27's outside measure, the bare \copy (store.PsqlCopy);
	// empty when it is not measured.
	psql   string
	log    config.Logging
	lag    lagOptions    // -lag: lag.go
	memory memoryOptions // -memory: memory.go
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if isChild(args) {
		return runChild(ctx, args, stdout, stderr)
	}
	var o options
	var ro readOptions
	var wo workloadOptions
	var so soakOptions
	var to tableOptions
	fs := config.New("schedlens-bench", getenv, stderr)
	to.define(fs)
	ro.define(fs)
	wo.define(fs)
	so.define(fs)
	fs.Int(&o.n, "n", "", 0, "one size: events to store end to end and with CopyFrom (overrides -sizes)")
	fs.String(&o.sizesFlag, "sizes", envSizes, defaultSizes, "comma-separated sizes (events per measurement), smallest to largest")
	fs.String(&o.mixFlag, "mix", envMix, "both", "event mix: pods, requests or both")
	fs.Int(&o.naiveRows, "naive-rows", "", defaultNaiveRows, "rows the naive INSERT baseline times at each size (its rate is per row)")
	fs.Int(&o.batchSize, "batch-size", envBatchSize, 1000, "correlator batch size, also the CopyFrom chunk size")
	fs.Duration(&o.batchWait, "batch-wait", envBatchWait, 100*time.Millisecond, "correlator batch wait")
	fs.Int(&o.concurrentBatches, "concurrent-batches", "", correlator.DefaultConfig().ConcurrentBatches, "batches the correlator stores at once (its -concurrent-batches)")
	fs.String(&o.natsURL, "nats-url", envNATSURL, "", "external NATS server with JetStream (default: an in-process server in a temp dir per measurement); its SCHEDLENS stream must be empty and unconsumed")
	fs.String(&o.adminURL, "admin-database-url", envAdminURL, defaultAdminURL, "Postgres URL of a database on the server where the bench creates and drops its temporary databases")
	fs.BoolVar(&o.json, "json", false, "also print the figures as one JSON object")
	fs.String(&o.psql, "psql", "", defaultPsql, "psql client for the outside baseline, a bare \\copy of the envelope lines into (id text primary key, body jsonb); empty skips it, and so does the default when no psql is on PATH")
	fs.String(&o.cpuProfile, "cpu-profile", "", "", "write the CPU profile of each timed end-to-end phase (the correlator and, without -nats-url, the in-process nats-server) to this path + -<mix>-<events>.pprof; with -lag, the correlator child's to this path + -lag-correlator.pprof and this process's over the publishing window (publisher, in-process nats-server, api, poller) to this path + -lag-bench.pprof")
	o.log.Define(fs)
	o.lag.define(fs)
	o.memory.define(fs)
	fs.UsageText(usageText)
	if help, err := fs.ParseOrHelp(args[1:]); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return config.Usagef("unexpected arguments %q", fs.Args())
	}
	if to.dir != "" {
		return runTable(to.dir, stdout)
	}
	if err := o.check(); err != nil {
		return err
	}
	if err := ro.validate(); ro.enabled && err != nil {
		return err
	}
	modes := 0
	for _, on := range []bool{o.lag.enabled, o.memory.enabled, ro.enabled, wo.enabled, so.enabled} {
		if on {
			modes++
		}
	}
	if wo.enabled && wo.pods < 100 {
		return config.Usagef("-workload-pods must be at least 100, got %d", wo.pods)
	}
	if err := so.check(); so.enabled && err != nil {
		return err
	}
	switch {
	case modes > 1:
		return config.Usagef("-lag, -memory, -reads, -workloads and -soak are separate runs: give one")
	case o.lag.enabled:
		return runLag(ctx, o, stdout, stderr)
	case o.memory.enabled:
		return runMemory(ctx, o, stdout, stderr)
	}
	pg, logger, err := o.postgres(ctx, stderr)
	if err != nil {
		return err
	}
	defer pg.dropAll()
	corrLogger, err := o.log.Logger(stderr, "correlator")
	if err != nil {
		return err
	}
	if ro.enabled {
		return runReads(ctx, pg, ro, o.json, stdout, logger)
	}
	if wo.enabled {
		return runWorkloads(ctx, pg, wo, ro.iterations, o.json, stdout, logger)
	}
	if so.enabled {
		return runSoak(ctx, pg, o, so, stdout, logger, corrLogger)
	}

	r := report{BatchSize: o.batchSize, BatchWait: o.batchWait.String(), ConcurrentBatches: o.concurrentBatches, NaiveRows: o.naiveRows}
	r.Targets.VsCopyFrom, r.Targets.LargestOverSmallest, r.Targets.PodsLargestVsCopyFrom = targetVsCopyFrom, targetFlat, targetPods1M
	for _, m := range o.mixes {
		mr := mixReport{Mix: m.name, Shape: m.shape}
		for _, n := range o.sizes {
			s, err := measureSize(ctx, pg, o, m, n, logger, corrLogger)
			if err != nil {
				return fmt.Errorf("mix %s, %d events: %w", m.name, n, err)
			}
			mr.Sizes = append(mr.Sizes, s)
		}
		first, last := mr.Sizes[0], mr.Sizes[len(mr.Sizes)-1]
		mr.LargestOverSmallest = last.EndToEnd.PerSecond / first.EndToEnd.PerSecond
		r.Mixes = append(r.Mixes, mr)
	}
	r.print(stdout)
	if o.json {
		if err := json.NewEncoder(stdout).Encode(r); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	}
	return nil
}

// check validates the flags and fills sizes and mixes.
func (o *options) check() error {
	switch {
	case o.n < 0:
		return config.Usagef("-n must be positive, got %d", o.n)
	case o.naiveRows <= 0:
		return config.Usagef("-naive-rows must be positive, got %d", o.naiveRows)
	case o.batchSize <= 0:
		return config.Usagef("-batch-size must be positive, got %d", o.batchSize)
	case o.batchWait <= 0:
		return config.Usagef("-batch-wait must be positive, got %s", o.batchWait)
	}
	cfg := correlator.DefaultConfig()
	cfg.ConcurrentBatches = o.concurrentBatches
	if err := correlator.Check(cfg); err != nil {
		return config.Usagef("-concurrent-batches: %v", err)
	}
	if o.psql != "" {
		path, err := exec.LookPath(o.psql)
		switch {
		case err == nil:
			o.psql = path
		case o.psql == defaultPsql:
			o.psql = "" // printed as not measured
		default:
			return config.Usagef("-psql: %v (give the client's path, or -psql '' to skip the bare \\copy)", err)
		}
	}
	if o.n > 0 {
		o.sizes = []int{o.n}
	} else {
		for _, f := range strings.Split(o.sizesFlag, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return config.Usagef("-sizes: %q is not a positive number of events", f)
			}
			if len(o.sizes) > 0 && n <= o.sizes[len(o.sizes)-1] {
				return config.Usagef("-sizes must grow: %d after %d", n, o.sizes[len(o.sizes)-1])
			}
			o.sizes = append(o.sizes, n)
		}
	}
	switch o.mixFlag {
	case "both":
		o.mixes = []mix{podMix, requestMix}
	case podMix.name:
		o.mixes = []mix{podMix}
	case requestMix.name:
		o.mixes = []mix{requestMix}
	default:
		return config.Usagef("-mix must be pods, requests or both, got %q", o.mixFlag)
	}
	return nil
}

// measureSize takes the three figures of one mix at one size, on the same rows.
func measureSize(ctx context.Context, pg *pgServer, o options, m mix, n int, logger, corrLogger *slog.Logger) (sizeReport, error) {
	envs, err := m.generate(n)
	if err != nil {
		return sizeReport{}, err
	}
	logger.Info("generated envelopes", "mix", m.name, "events", len(envs))
	raw, err := measureCopyFrom(ctx, pg, envs, o.batchSize)
	if err != nil {
		return sizeReport{}, fmt.Errorf("raw CopyFrom: %w", err)
	}
	naive, err := measureNaive(ctx, pg, envs[:min(len(envs), o.naiveRows)])
	if err != nil {
		return sizeReport{}, fmt.Errorf("naive INSERT: %w", err)
	}
	var bare *figure
	if o.psql != "" {
		f, err := measurePsqlCopy(ctx, pg, o.psql, envs)
		if err != nil {
			return sizeReport{}, fmt.Errorf("bare psql \\copy: %w", err)
		}
		bare = &f
	}
	// The correlator runs in this process: holding a million envelopes meanwhile would make
	// every garbage collection mark them, a cost that grows with the size and that a real
	// correlator never pays. Only their bytes are kept, in one buffer (two objects for the GC).
	raws := newRawSet(envs)
	envs = nil
	runtime.GC()
	cfg := correlator.DefaultConfig()
	cfg.Consumer = "schedlens-bench-" + randomHex(4)
	cfg.BatchSize, cfg.BatchWait = o.batchSize, o.batchWait
	cfg.ConcurrentBatches = o.concurrentBatches
	profile := ""
	if o.cpuProfile != "" {
		profile = fmt.Sprintf("%s-%s-%d.pprof", o.cpuProfile, m.name, n)
	}
	e2e, err := measureEndToEnd(ctx, pg, o.natsURL, raws, cfg, profile, logger, corrLogger)
	if err != nil {
		return sizeReport{}, fmt.Errorf("end to end: %w", err)
	}
	logger.Info("measured", "mix", m.name, "events", n, "end_to_end_per_s", int(e2e.PerSecond), "copy_from_per_s", int(raw.PerSecond), "naive_per_s", int(naive.PerSecond))
	s := sizeReport{N: n, EndToEnd: e2e, CopyFrom: raw, Naive: naive, BareCopy: bare,
		VsCopyFrom: e2e.PerSecond / raw.PerSecond, VsNaive: e2e.PerSecond / naive.PerSecond}
	if bare != nil {
		s.VsBareCopy = e2e.PerSecond / bare.PerSecond
	}
	return s, nil
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

// sizeReport is one mix at one size.
type sizeReport struct {
	N          int     `json:"n"`
	EndToEnd   figure  `json:"end_to_end"`
	CopyFrom   figure  `json:"raw_copy_from"`
	Naive      figure  `json:"naive_insert"` // Count rows of N timed; the rate is per row
	VsCopyFrom float64 `json:"end_to_end_over_raw_copy_from"`
	VsNaive    float64 `json:"end_to_end_over_naive_insert"`
	// BareCopy is psql's \copy into (id text primary key, body jsonb), timed from outside; nil
	// without a psql client.
	BareCopy   *figure `json:"bare_psql_copy,omitempty"`
	VsBareCopy float64 `json:"end_to_end_over_bare_psql_copy,omitempty"`
}

// mixReport is one mix at every size.
type mixReport struct {
	Mix                 string       `json:"mix"`
	Shape               string       `json:"shape"`
	Sizes               []sizeReport `json:"sizes"`
	LargestOverSmallest float64      `json:"largest_over_smallest_end_to_end"`
}

// report is everything the bench prints, also as JSON with -json.
type report struct {
	BatchSize         int         `json:"batch_size"`
	BatchWait         string      `json:"batch_wait"`
	ConcurrentBatches int         `json:"concurrent_batches"`
	NaiveRows         int         `json:"naive_rows"`
	Mixes             []mixReport `json:"mixes"`
	Targets           struct {
		VsCopyFrom            float64 `json:"end_to_end_over_raw_copy_from"`
		LargestOverSmallest   float64 `json:"largest_over_smallest_end_to_end"`
		PodsLargestVsCopyFrom float64 `json:"pods_largest_end_to_end_over_raw_copy_from"`
	} `json:"targets"`
}

func (r report) print(w io.Writer) {
	fmt.Fprintf(w, "schedlens-bench: batch size %d, batch wait %s, %d concurrent batches; naive INSERT times the first %d rows of each size (its rate is per row)\n",
		r.BatchSize, r.BatchWait, r.ConcurrentBatches, r.NaiveRows)
	for _, m := range r.Mixes {
		fmt.Fprintf(w, "\nmix %s (%s)\n", m.Mix, m.Shape)
		fmt.Fprintf(w, "  %9s  %14s  %14s  %14s  %14s  %14s  %10s  %10s\n", "events", "end to end/s", "CopyFrom/s", "naive/s", "psql \\copy/s", "e2e/CopyFrom", "e2e/naive", "e2e/\\copy")
		for _, s := range m.Sizes {
			bare, vsBare := "not measured", "-"
			if s.BareCopy != nil {
				bare, vsBare = fmt.Sprintf("%.0f", s.BareCopy.PerSecond), fmt.Sprintf("%.2f", s.VsBareCopy)
			}
			fmt.Fprintf(w, "  %9d  %14.0f  %14.0f  %14.0f  %14s  %14.2f  %9.1f×  %10s\n", s.N, s.EndToEnd.PerSecond, s.CopyFrom.PerSecond, s.Naive.PerSecond, bare, s.VsCopyFrom, s.VsNaive, vsBare)
		}
		first, last := m.Sizes[0], m.Sizes[len(m.Sizes)-1]
		fmt.Fprintf(w, "  end-to-end / raw CopyFrom: %.2f to %.2f  (target ≥ %.2f at every size)\n", minRatio(m.Sizes), maxRatio(m.Sizes), r.Targets.VsCopyFrom)
		if len(m.Sizes) > 1 {
			fmt.Fprintf(w, "  end-to-end rate at %d / at %d = %.2f  (target ≥ %.2f)\n", last.N, first.N, m.LargestOverSmallest, r.Targets.LargestOverSmallest)
		}
		if m.Mix == podMix.name {
			fmt.Fprintf(w, "  end-to-end / raw CopyFrom at %d = %.2f  (target ≥ %.2f)\n", last.N, last.VsCopyFrom, r.Targets.PodsLargestVsCopyFrom)
		}
	}
}

func minRatio(s []sizeReport) float64 {
	m := s[0].VsCopyFrom
	for _, x := range s {
		m = min(m, x.VsCopyFrom)
	}
	return m
}

func maxRatio(s []sizeReport) float64 {
	m := s[0].VsCopyFrom
	for _, x := range s {
		m = max(m, x.VsCopyFrom)
	}
	return m
}

// natsOrLocal is url (-nats-url), or when it is empty an in-process server, stopped by stop.
func natsOrLocal(url string) (_ string, stop func(), err error) {
	if url != "" {
		return url, func() {}, nil
	}
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		return "", nil, err
	}
	return srv.URL(), srv.Close, nil
}

// purgeCluster removes cluster's messages from the stream of an external server (-nats-url)
// once a run is done, so that the next run finds it empty; a failure is only logged.
func purgeCluster(stream jetstream.Stream, cluster string, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subject := events.SubjectPrefix + "." + cluster + ".>"
	if err := stream.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		logger.Warn("cannot purge the bench's messages", "subject", subject, "error", err)
	}
}
