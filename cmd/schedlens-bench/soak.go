package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/store"
)

// The soak bench (-soak): the reference cluster of issue 24 — 1,000 pods in Deployments of 10,
// half of them probed, 400 GPUs sampled every 30 s, 200 nodes — scaled by -soak-scale, lived
// through on an accelerated clock one simulated day after another: every Deployment replaced
// at midnight and rolled out once during the day, a node failure a day per Deployment (about
// 5 % of the pods replaced), a drain every seventh day; its pods probed every -soak-probe-every,
// an experiment of 100 pods on day 1. Each day goes through the real pipeline — published to
// JetStream (an in-process nats-server, or -nats-url) and stored by a correlator — then the
// store is maintained as `correlator serve` does, at the end of the day, with a 7-day retention
// (raw samples 6 hours), then read. It prints per day: events, ingest rate, bytes on disk by class,
// rows, and the p95 of the workload window, the disruptions and the comparison; and the bytes
// a day scaled back to the reference cluster beside the 1 GB target.

const (
	soakRetention       = 7 * 24 * time.Hour
	soakRawSamples      = 6 * time.Hour
	soakReferencePods   = 1000
	soakReferenceGPUs   = 400
	soakReferenceNodes  = 200
	soakReplicas        = 10 // pods per Deployment
	soakGPUEvery        = 30 * time.Second
	soakDayTarget       = 1 << 30 // bytes a simulated day of the reference cluster may add
	soakReadIterations  = 7
	soakFlatnessLowDay  = 8
	soakFlatnessMaxDiff = 0.2
)

type soakOptions struct {
	enabled    bool
	days       int
	scale      float64
	probeEvery time.Duration
	budget     time.Duration
}

func (s *soakOptions) define(fs *config.FlagSet) {
	fs.BoolVar(&s.enabled, "soak", false, "run the month-long soak instead: the reference cluster (scaled by -soak-scale) day after day with a 7-day retention, bytes and read times per simulated day")
	fs.Int(&s.days, "soak-days", "", 30, "-soak: simulated days")
	fs.Float64(&s.scale, "soak-scale", "", 0.1, "-soak: share of the reference cluster simulated (pods, GPUs, nodes); bytes are scaled back to it")
	fs.Duration(&s.probeEvery, "soak-probe-every", "", 10*time.Second, "-soak: probe period of each probed pod (the reference's prober: 200ms)")
	fs.Duration(&s.budget, "soak-budget", "", 10*time.Minute, "-soak: stop after the day that ends past this much wall time")
}

func (s soakOptions) check() error {
	switch {
	case s.days < 1:
		return config.Usagef("-soak-days must be at least 1, got %d", s.days)
	case s.scale <= 0 || s.scale > 1:
		return config.Usagef("-soak-scale must be in (0, 1], got %g", s.scale)
	case s.probeEvery < 200*time.Millisecond:
		return config.Usagef("-soak-probe-every must be at least 200ms, got %s", s.probeEvery)
	}
	return nil
}

type soakDay struct {
	Day          int              `json:"day"`
	Events       int              `json:"events"`
	IngestPerSec float64          `json:"ingest_per_s"` // published to JetStream and stored by the correlator
	MaintainS    float64          `json:"maintain_s"`
	Bytes        int64            `json:"bytes"`
	ByClass      map[string]int64 `json:"bytes_by_class"`
	Rows         map[string]int64 `json:"rows"`
	WindowP95MS  float64          `json:"workload_window_p95_ms"`
	DisruptP95MS float64          `json:"disruptions_p95_ms"`
	CompareP95MS float64          `json:"comparison_p95_ms"`
}

type soakReport struct {
	Scale      float64   `json:"scale"`
	Pods       int       `json:"pods"`
	GPUs       int       `json:"gpus"`
	Nodes      int       `json:"nodes"`
	ProbeEvery string    `json:"probe_every"`
	Days       []soakDay `json:"days"`
	// DayBytesReference is the bytes one simulated day adds once summarised (the mean growth
	// of days 2–7), scaled back to the reference cluster.
	DayBytesReference float64 `json:"day_bytes_reference"`
}

// soakShape is the simulated cluster: Deployments of soakReplicas pods, GPUs and nodes at
// scale.
func soakShape(scale float64) (deployments, gpus, nodes int) {
	deployments = max(1, int(math.Round(scale*soakReferencePods/soakReplicas)))
	return deployments, max(1, int(math.Round(scale*soakReferenceGPUs))), max(2, int(math.Round(scale*soakReferenceNodes)))
}

// soakDayEvents is day d's envelopes (d from 1), in time order.
func soakDayEvents(so soakOptions, start time.Time, d int) []*events.Envelope {
	deployments, gpus, nodes := soakShape(so.scale)
	dayStart := start.Add(time.Duration(d-1) * 24 * time.Hour)
	var out []*events.Envelope
	for w := range deployments {
		cfg := eventgen.DefaultWorkload()
		cfg.Cluster, cfg.Namespace, cfg.Name = benchCluster, "soak", fmt.Sprintf("infer-%03d", w)
		cfg.Seed = uint64(d*10_000 + w)
		cfg.Replicas, cfg.Nodes = soakReplicas, nodes
		cfg.Start = dayStart.Add(time.Duration(w) * time.Second)
		cfg.Rollouts, cfg.NodeFailures, cfg.Drains = 1, 1, 0
		if d%7 == 0 {
			cfg.Drains = 1
		}
		cfg.Gap = 24 * time.Hour / time.Duration(cfg.Rollouts+cfg.NodeFailures+cfg.Drains+1)
		cfg.RequestsEvery = 0
		if w%2 == 0 { // half the pods are probed
			cfg.RequestsEvery = so.probeEvery
		}
		cfg.IDPrefix, cfg.End = fmt.Sprintf("soak/%d/%d/", d, w), true
		envs, _ := eventgen.Workload(cfg)
		out = append(out, envs...)
	}
	out = append(out, soakGPUSamples(dayStart, d, gpus, nodes)...)
	if d == 1 {
		exp := eventgen.Default()
		exp.Cluster, exp.Start, exp.IDPrefix = benchCluster, dayStart.Add(4*time.Hour), "soak/exp/"
		out = append(out, eventgen.Generate(exp)...)
	}
	slices.SortStableFunc(out, func(a, b *events.Envelope) int { return a.OccurredAt.Compare(b.OccurredAt) })
	return out
}

// soakGPUSamples is a day of dcgm-exporter scrapes: every GPU every soakGPUEvery.
func soakGPUSamples(dayStart time.Time, d, gpus, nodes int) []*events.Envelope {
	var out []*events.Envelope
	for at := dayStart; at.Before(dayStart.Add(24 * time.Hour)); at = at.Add(soakGPUEvery) {
		for g := range gpus {
			node := fmt.Sprintf("gpu-node-%d", 1+g%nodes)
			util := float64((g*7 + int(at.Unix()/30)) % 100)
			env := &events.Envelope{V: events.Version, Kind: events.KindGPUSample, Cluster: benchCluster, Source: "soak",
				ID:         fmt.Sprintf("gpu_sample/%s/gpu%d/%d", node, g, at.UnixNano()),
				OccurredAt: at, ObservedAt: at.Add(10 * time.Millisecond), Node: node,
				Payload: &events.GPUSample{GPU: fmt.Sprint(g / nodes), UUID: fmt.Sprintf("GPU-%08d-soak", g), Model: "NVIDIA H100 80GB HBM3",
					PeriodS: soakGPUEvery.Seconds(), Metrics: map[string]float64{"DCGM_FI_DEV_GPU_UTIL": util, "DCGM_FI_DEV_FB_USED": 40_000,
						"DCGM_FI_DEV_POWER_USAGE": 350, "DCGM_FI_DEV_SM_CLOCK": 1980}}}
			b, err := events.Encode(env)
			if err != nil {
				panic(err)
			}
			decoded, err := events.Decode(b)
			if err != nil {
				panic(err)
			}
			out = append(out, decoded)
		}
	}
	return out
}

// soakPipeline is a JetStream stream and a correlator storing what is published to it into the
// soak's store.
type soakPipeline struct {
	js       jetstream.JetStream
	window   time.Duration
	db       *store.DB
	total    int // events published so far: the store counts them once stored
	finished chan struct{}
	runErr   error
	stop     func()
}

func startSoakPipeline(ctx context.Context, natsURL string, db *store.DB, cfg correlator.Config, logger *slog.Logger) (*soakPipeline, error) {
	natsURL, stopNATS, err := natsOrLocal(natsURL)
	if err != nil {
		return nil, err
	}
	nc, err := bus.Connect(natsURL, "schedlens-bench", logger)
	if err != nil {
		stopNATS()
		return nil, err
	}
	fail := func(err error) (*soakPipeline, error) { nc.Close(); stopNATS(); return nil, err }
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(30*time.Second))
	if err != nil {
		return fail(fmt.Errorf("jetstream: %w", err))
	}
	sc := bus.DefaultStreamConfig()
	sc.Duplicates = inProcessDuplicates // the days' ids are distinct: no duplicate table in the heap
	stream, err := bus.EnsureStream(ctx, js, sc)
	if err != nil {
		return fail(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return fail(fmt.Errorf("stream info: %w", err))
	}
	if info.State.Msgs > 0 {
		return fail(fmt.Errorf("stream %s on %s already holds %d messages; the soak needs an empty stream (omit -nats-url for an in-process server)", bus.StreamName, natsURL, info.State.Msgs))
	}
	c, err := correlator.New(js, db, cfg, logger, prometheus.NewRegistry())
	if err != nil {
		return fail(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	p := &soakPipeline{js: js, window: info.Config.Duplicates, db: db, finished: make(chan struct{})}
	go func() { p.runErr = c.Run(runCtx); close(p.finished) }()
	p.stop = func() {
		cancel()
		<-p.finished
		_ = nc.FlushTimeout(5 * time.Second)
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		_ = js.DeleteConsumer(dctx, bus.StreamName, cfg.Consumer)
		if err := stream.Purge(dctx); err != nil {
			logger.Warn("cannot purge the soak's messages", "error", err)
		}
		nc.Close()
		stopNATS()
	}
	return p, nil
}

// store publishes envs and waits until the correlator has stored them.
func (p *soakPipeline) store(ctx context.Context, envs []*events.Envelope) error {
	if err := publish(ctx, p.js, newRawSet(envs), p.window); err != nil {
		return err
	}
	p.total += len(envs)
	if _, err := waitStored(ctx, p.db, p.total, time.Now(), p.finished); err != nil {
		return errors.Join(err, p.runErr)
	}
	return nil
}

// runSoak is the -soak mode.
func runSoak(ctx context.Context, pg *pgServer, o options, so soakOptions, stdout io.Writer, logger, corrLogger *slog.Logger) error {
	asJSON := o.json
	db, dbURL, done, err := pg.openDB(ctx, "soak", logger)
	if err != nil {
		return err
	}
	defer done()
	cfg := correlator.DefaultConfig()
	cfg.Consumer = "schedlens-bench-soak-" + randomHex(4)
	cfg.BatchSize, cfg.BatchWait = o.batchSize, o.batchWait
	pipe, err := startSoakPipeline(ctx, o.natsURL, db, cfg, corrLogger)
	if err != nil {
		return err
	}
	defer pipe.stop()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	deployments, gpus, nodes := soakShape(so.scale)
	r := soakReport{Scale: so.scale, Pods: deployments * soakReplicas, GPUs: gpus, Nodes: nodes, ProbeEvery: so.probeEvery.String()}
	fmt.Fprintf(stdout, "schedlens-bench -soak: %d pods (%d Deployments of %d, half probed every %s), %d GPUs every %s, %d nodes — %.0f %% of the reference cluster; retention %s (raw samples %s)\n",
		r.Pods, deployments, soakReplicas, so.probeEvery, gpus, soakGPUEvery, nodes, 100*so.scale, soakRetention, soakRawSamples)
	fmt.Fprintf(stdout, "  %4s %9s %8s %8s %9s %9s %9s %9s %9s %9s %9s %10s %10s %10s\n", "day", "events", "ev/s", "maint s",
		"total MB", "events", "samples", "kept", "summary", "gpu", "other", "window p95", "disrupt p95", "compare p95")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	began := time.Now()
	// The next day is generated while the current one is stored.
	next := make(chan []*events.Envelope, 1)
	genCtx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	go func() {
		defer close(next)
		for d := 1; d <= so.days; d++ {
			envs := soakDayEvents(so, start, d)
			select {
			case next <- envs:
			case <-genCtx.Done():
				return
			}
		}
	}()
	for d := 1; d <= so.days; d++ {
		envs := <-next
		day := soakDay{Day: d, Events: len(envs)}
		t0 := time.Now()
		if err := pipe.store(ctx, envs); err != nil {
			return fmt.Errorf("day %d: %w", d, err)
		}
		day.IngestPerSec = float64(len(envs)) / time.Since(t0).Seconds()
		end := start.Add(time.Duration(d) * 24 * time.Hour)
		t1 := time.Now()
		if _, err := db.Maintain(ctx, store.Retention{Events: soakRetention, Samples: soakRawSamples, Summaries: soakRetention,
			GPUSamples: soakRetention, DeadLetters: soakRetention}, end); err != nil {
			return fmt.Errorf("day %d: maintain: %w", d, err)
		}
		day.MaintainS = time.Since(t1).Seconds()
		if _, err := conn.Exec(ctx, `VACUUM (ANALYZE)`); err != nil {
			return err
		}
		st, err := db.Storage(ctx)
		if err != nil {
			return err
		}
		day.ByClass = st.Bytes
		for _, b := range st.Bytes {
			day.Bytes += b
		}
		if day.Rows, err = soakRows(ctx, conn); err != nil {
			return err
		}
		if err := soakReads(ctx, db, end, &day); err != nil {
			return fmt.Errorf("day %d: %w", d, err)
		}
		r.Days = append(r.Days, day)
		mb := func(c ...string) float64 {
			var n int64
			for _, k := range c {
				n += day.ByClass[k]
			}
			return float64(n) / (1 << 20)
		}
		fmt.Fprintf(stdout, "  %4d %9d %8.0f %8.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %10.1f %10.1f %10.1f\n", d, day.Events, day.IngestPerSec, day.MaintainS,
			float64(day.Bytes)/(1<<20), mb("events"), mb("samples"), mb("kept_events"), mb("summaries"), mb("gpu_samples"), mb("inventories", "projections", "dead_letters"),
			day.WindowP95MS, day.DisruptP95MS, day.CompareP95MS)
		if time.Since(began) > so.budget && d < so.days {
			fmt.Fprintf(stdout, "  stopped after day %d: the %s budget is spent (-soak-budget)\n", d, so.budget)
			break
		}
	}
	soakSummary(&r, stdout)
	if asJSON {
		return json.NewEncoder(stdout).Encode(r)
	}
	return nil
}

// soakRows counts the rows of the big tables.
func soakRows(ctx context.Context, conn *pgx.Conn) (map[string]int64, error) {
	rows := map[string]int64{}
	for _, t := range []string{"events", "request_buckets", "gpu_samples", "pods", "inventory_pods", "workload_states"} {
		var n int64
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+t).Scan(&n); err != nil {
			return nil, fmt.Errorf("count %s: %w", t, err)
		}
		rows[t] = n
	}
	return rows, nil
}

// soakReads times the reads of the last simulated day: one Deployment's window and the
// disruptions over the day, and the comparison of day 1's experiment.
func soakReads(ctx context.Context, db *store.DB, end time.Time, day *soakDay) error {
	from := end.Add(-24 * time.Hour)
	var window, disrupt, comp []time.Duration
	for range soakReadIterations {
		t := time.Now()
		if _, err := db.Disruptions(ctx, store.WorkloadFilter{Namespace: "soak", Kind: "Deployment", Name: "infer-000"}, from, end); err != nil {
			return fmt.Errorf("workload window: %w", err)
		}
		window = append(window, time.Since(t))
		t = time.Now()
		if _, err := db.Disruptions(ctx, store.WorkloadFilter{}, from, end); err != nil {
			return fmt.Errorf("disruptions: %w", err)
		}
		disrupt = append(disrupt, time.Since(t))
		t = time.Now()
		if _, err := db.Comparison(ctx, "day20", "", ""); err != nil {
			return fmt.Errorf("comparison: %w", err)
		}
		comp = append(comp, time.Since(t))
	}
	p95 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[int(math.Ceil(0.95*float64(len(ds))))-1].Microseconds()) / 1000
	}
	day.WindowP95MS, day.DisruptP95MS, day.CompareP95MS = p95(window), p95(disrupt), p95(comp)
	return nil
}

// soakSummary prints the day's bytes scaled to the reference cluster and the flatness of disk,
// ingest and reads after the horizon.
func soakSummary(r *soakReport, w io.Writer) {
	days := r.Days
	if len(days) >= 3 {
		last := min(len(days), 7)
		growth := float64(days[last-1].Bytes-days[0].Bytes) / float64(last-1)
		r.DayBytesReference = growth / r.Scale
		fmt.Fprintf(w, "  a simulated day adds %.1f MB here (mean of days 2–%d); scaled to the reference cluster: %.2f GB a day (target ≤ %.0f GB: %s)\n",
			growth/(1<<20), last, r.DayBytesReference/(1<<30), float64(soakDayTarget)/(1<<30), verdict(r.DayBytesReference <= soakDayTarget))
		fmt.Fprintf(w, "    (the raw samples' window, %s of request results and GPU samples, is a constant on top: here %.1f MB on the last day)\n",
			soakRawSamples, float64(days[len(days)-1].ByClass["samples"])/(1<<20))
	}
	if len(days) < soakFlatnessLowDay+1 {
		fmt.Fprintf(w, "  flatness after the horizon: needs more than %d days, ran %d\n", soakFlatnessLowDay, len(days))
		return
	}
	base, last := days[soakFlatnessLowDay-1], days[len(days)-1]
	ratio := func(a, b float64) float64 { return a / b }
	fmt.Fprintf(w, "  day %d against day %d (target: within %.0f %%): disk %.2f, ingest %.2f, workload window p95 %.2f, disruptions p95 %.2f, comparison p95 %.2f\n",
		last.Day, base.Day, 100*soakFlatnessMaxDiff, ratio(float64(last.Bytes), float64(base.Bytes)), ratio(last.IngestPerSec, base.IngestPerSec),
		ratio(last.WindowP95MS, base.WindowP95MS), ratio(last.DisruptP95MS, base.DisruptP95MS), ratio(last.CompareP95MS, base.CompareP95MS))
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}
