// Command correlator consumes the SCHEDLENS stream into Postgres: events, per-pod timelines and
// the other projections. `correlator migrate` applies the schema; `correlator rebuild`
// recomputes every projection from the events table.
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/correlatorapp"
)

func main() { config.Main(run) }

const usageText = `usage: correlator [command] [flags]   (flags may also come before the command)

commands:
  serve     consume the stream into Postgres (default); migrates the schema first
  migrate   apply pending schema migrations and exit
  rebuild   recompute every projection from the events table and exit
  maintain  create the coming days' partitions, drop what retention no longer keeps, and exit

flags:
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var (
		o            correlatorapp.Options
		rebuildChunk int
		idle         int
		proc         config.Process
	)
	fs := config.New("correlator", getenv, stderr)
	fs.Secret(&o.NATSURL, "nats-url", config.EnvNATSURL, config.DefaultNATSURL, "NATS server `URL` (may hold a user and password or a token)")
	o.NATS.Define(fs)
	fs.Secret(&o.DatabaseURL, "database-url", config.EnvDatabaseURL, config.DefaultDatabaseURL, "Postgres `URL` (sslmode=verify-full to verify the server)")
	config.TLSFlags(fs, &o.TLS.CertFile, &o.TLS.KeyFile)
	fs.String(&o.MetricsAddr, "metrics-addr", config.EnvMetricsAddr, ":9091", "address serving /metrics, /healthz and /readyz")
	def := correlator.DefaultConfig()
	fs.String(&o.Correlator.Consumer, "consumer", "SCHEDLENS_CONSUMER", def.Consumer, "durable JetStream consumer name (replicas share it)")
	fs.Int(&o.Correlator.BatchSize, "batch-size", "SCHEDLENS_BATCH_SIZE", def.BatchSize, "most messages stored per transaction")
	fs.Duration(&o.Correlator.BatchWait, "batch-wait", "SCHEDLENS_BATCH_WAIT", def.BatchWait, "longest wait for a batch to fill")
	fs.Int(&o.Correlator.ConcurrentBatches, "concurrent-batches", "SCHEDLENS_CONCURRENT_BATCHES", def.ConcurrentBatches,
		"batches stored at once, each in its own transaction and Postgres connection (1 to 16)")
	fs.Duration(&o.Correlator.AckWait, "ack-wait", "SCHEDLENS_ACK_WAIT", def.AckWait, "redeliver a message not acknowledged within this time")
	fs.Duration(&o.Correlator.RetryDelay, "retry-delay", "SCHEDLENS_RETRY_DELAY", def.RetryDelay, "redelivery delay after a transient database failure")
	o.Stream = bus.DefaultStreamConfig()
	config.StreamFlags(fs, &o.Stream.MaxAge, &o.Stream.MaxBytes, &o.Stream.Duplicates, &o.Stream.Replicas)
	config.Labels(fs, &o.Labels)
	fs.Int(&rebuildChunk, "rebuild-chunk", "", 5000, "events read per step by rebuild")
	fs.Age(&o.Retention.Events, "retention-events", "SCHEDLENS_RETENTION_EVENTS", 0,
		"keep raw events and inventories this long, whole UTC days (e.g. 15d; 0 keeps them for ever); experiment runs are kept until deleted")
	fs.Age(&o.Retention.Samples, "retention-raw-samples", "SCHEDLENS_RETENTION_RAW_SAMPLES", 0,
		"keep request results and GPU samples raw this long, whole hours (e.g. 6h; 0: as long as -retention-events); older ones outside experiment runs become 10 s request buckets and typed GPU samples")
	fs.Age(&o.Retention.Summaries, "retention-summaries", "SCHEDLENS_RETENTION_SUMMARIES", 0,
		"keep request buckets this long, whole UTC days (e.g. 90d; 0 keeps them for ever)")
	fs.Age(&o.Retention.GPUSamples, "retention-gpu-samples", "SCHEDLENS_RETENTION_GPU_SAMPLES", 0,
		"keep typed GPU samples this long, whole UTC days (e.g. 30d; 0 keeps them for ever)")
	fs.Age(&o.Retention.DeadLetters, "retention-dead-letters", "SCHEDLENS_RETENTION_DEAD_LETTERS", 0,
		"keep dead letters this long (e.g. 30d; 0 keeps them for ever)")
	fs.Duration(&o.MaintenanceInterval, "maintenance-interval", "SCHEDLENS_MAINTENANCE_INTERVAL", correlatorapp.DefaultMaintenanceInterval,
		"how often serve maintains the store, one correlator at a time (0: never; run `correlator maintain` instead)")
	fs.Duration(&o.WarmInterval, "comparison-warm-interval", "SCHEDLENS_COMPARISON_WARM_INTERVAL", correlatorapp.DefaultWarmInterval,
		"how often serve stores every experiment's default comparison whose data changed, so an api replica's first comparison reads it (0: never)")
	fs.Int(&idle, "gpu-idle-threshold", "SCHEDLENS_GPU_IDLE_THRESHOLD", align.IdleUtilThreshold,
		"GPU utilisation (percent) under which allocated GPU time counts as idle in the comparisons it stores: set it as the api's")
	proc.Define(fs)
	fs.UsageText(usageText)

	// Flags may come before or after the command.
	if help, err := fs.ParseOrHelp(args[1:]); help || err != nil {
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
	case "serve", "migrate", "rebuild", "maintain":
	default:
		fs.Usage()
		return config.Usagef("unknown command %q", cmd)
	}
	if idle < 0 || idle > 100 {
		fs.Usage()
		return config.Usagef("-gpu-idle-threshold must be in 0..100")
	}
	if err := correlator.Check(o.Correlator); err != nil {
		fs.Usage()
		return config.Usagef("%v", err)
	}
	o.IdleThreshold = new(float64(idle))
	logger, err := proc.Start(stderr, "correlator", getenv)
	if err != nil {
		fs.Usage()
		return err
	}
	o.Logger = logger
	switch cmd {
	case "migrate":
		return correlatorapp.Migrate(ctx, o)
	case "rebuild":
		start := time.Now()
		res, err := correlatorapp.Rebuild(ctx, o, rebuildChunk)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "rebuilt projections from %d events in %s (%d no longer decode)\n", res.Events, time.Since(start).Round(time.Millisecond), res.Rejected)
		return nil
	}
	if cmd == "maintain" {
		res, err := correlatorapp.Maintain(ctx, o)
		if err != nil {
			return err
		}
		if res.Skipped {
			fmt.Fprintln(stdout, "another process is maintaining the store; nothing done")
			return nil
		}
		fmt.Fprintf(stdout, "created %d partitions %v; dropped %d %v (horizon %s); kept %d events of experiment runs and kept pods; made %d request buckets and %d typed GPU samples; dropped %d ended pods, %d dead letters\n",
			len(res.Created), res.Created, len(res.Dropped), res.Dropped, horizonText(res.Horizon), res.Kept, res.Buckets, res.GPUSamples, res.Pods, res.DeadLetters)
		return nil
	}
	if o.MaintenanceInterval == 0 {
		o.MaintenanceInterval = -1 // 0 on the command line: never
	}
	if o.WarmInterval == 0 {
		o.WarmInterval = -1
	}
	return correlatorapp.Run(ctx, o)
}

// horizonText is the horizon, or "none" when retention kept everything.
func horizonText(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.Format(time.RFC3339)
}
