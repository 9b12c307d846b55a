package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/apiapp"
	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/correlatorapp"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/publisher"
	"github.com/schedlens/schedlens/internal/store"
)

// Targets of the lag run, printed beside the figures (not asserted).
const (
	targetLagP99  = time.Second
	targetLagRate = 10_000
)

// How the lag run samples and polls.
const (
	lagSampleEvery = 50 * time.Millisecond // one sampled event per this much publishing
	lagPollEvery   = 20 * time.Millisecond // visibility polls of the sampled events
	lagStallLimit  = 2 * time.Minute       // nothing more becomes visible for this long: give up
	lagPollers     = 4                     // samples read at once
	lagCluster     = "bench"
)

// lagOptions are the flags of the lag run (-lag).
type lagOptions struct {
	enabled  bool
	rate     int
	duration time.Duration
}

func (l *lagOptions) define(fs *config.FlagSet) {
	fs.BoolVar(&l.enabled, "lag", false, "instead of the throughput runs: publish eventgen envelopes at -lag-rate for -lag-duration through the collector's publisher, with a correlator (child process) and an api, and print the event → visible-in-the-API lag p50/p99/max, whether the correlator kept up, and its peak RSS")
	fs.Int(&l.rate, "lag-rate", "", targetLagRate, "events per second -lag publishes")
	fs.Duration(&l.duration, "lag-duration", "", 60*time.Second, "how long -lag publishes")
}

func (l lagOptions) check() error {
	switch {
	case l.rate <= 0:
		return config.Usagef("-lag-rate must be positive, got %d", l.rate)
	case l.duration <= 0:
		return config.Usagef("-lag-duration must be positive, got %s", l.duration)
	}
	return nil
}

// lagSample is one published event whose visibility in the API is awaited.
type lagSample struct {
	uid, id   string
	published time.Time // just before the publisher was handed the envelope
}

// lagReport is everything the lag run prints, also as JSON with -json.
type lagReport struct {
	Rate            int     `json:"rate"`
	DurationSeconds float64 `json:"duration_seconds"`
	Offered         int     `json:"offered"`
	OfferedRate     float64 `json:"offered_per_second"`
	Acked           int     `json:"acked_in_window"`
	AckedRate       float64 `json:"acked_per_second"`
	Stored          int64   `json:"stored"`
	DrainSeconds    float64 `json:"drain_seconds"`
	BatchSize       int     `json:"correlator_batch_size"`
	BatchWait       string  `json:"correlator_batch_wait"`
	// ConcurrentBatches is the correlator's -concurrent-batches (the bench's own flag).
	ConcurrentBatches int `json:"correlator_concurrent_batches"`
	Lag               struct {
		Samples    int     `json:"samples"`
		Invisible  int     `json:"never_visible"`
		P50        float64 `json:"p50_seconds"`
		P99        float64 `json:"p99_seconds"`
		Max        float64 `json:"max_seconds"`
		TargetP99  float64 `json:"target_p99_seconds"`
		TargetRate int     `json:"target_rate"`
		// The poller's own timeline reads: when they take longer than lagPollers samples'
		// share of the poller's time (lagSampleEvery each), samples queue behind them and the
		// lag measured is partly the poller's backlog, not the pipeline's.
		Polls   int     `json:"polls"`
		PollP50 float64 `json:"poll_p50_seconds"`
		PollP99 float64 `json:"poll_p99_seconds"`
	} `json:"lag"`
	Pending struct {
		Samples       int    `json:"samples"`
		Min           uint64 `json:"min"`
		Max           uint64 `json:"max"`
		Last          uint64 `json:"last"`
		MaxAckPending int    `json:"max_ack_pending"`
		KeptUp        bool   `json:"kept_up"`
	} `json:"num_pending"`
	Correlator procMemory `json:"correlator_memory"`
}

// runLag is the -lag mode: see lagOptions.define and docs/architecture.md#lag.
func runLag(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if err := o.lag.check(); err != nil {
		return err
	}
	pg, logger, err := o.postgres(ctx, stderr)
	if err != nil {
		return err
	}
	defer pg.dropAll()

	runID := randomHex(4)
	n := int(float64(o.lag.rate) * o.lag.duration.Seconds())
	envs, err := lagEnvelopes(n, runID)
	if err != nil {
		return err
	}
	logger.Info("generated envelopes", "events", len(envs))

	natsURL, stopNATS, err := natsOrLocal(o.natsURL)
	if err != nil {
		return err
	}
	defer stopNATS()
	nc, err := bus.Connect(natsURL, "schedlens-bench-lag", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	// As the collector's: collectorapp.New.
	js, err := jetstream.New(nc, publisher.JetStreamOptions()...)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	var size int64
	for _, env := range envs {
		size += int64(len(env.Raw))
	}
	sc := bus.DefaultStreamConfig()
	sc.MaxBytes = max(sc.MaxBytes, 2*size) // never discard a message the run waits for
	stream, err := bus.EnsureStream(ctx, js, sc)
	if err != nil {
		return err
	}
	if info, err := stream.Info(ctx); err != nil {
		return fmt.Errorf("stream info: %w", err)
	} else if o.natsURL != "" {
		// The correlator consumes from the start of the stream: what is there would be measured too.
		if info.State.Msgs > 0 {
			return fmt.Errorf("stream %s on %s already holds %d messages; -lag needs an empty stream (omit -nats-url for an in-process server)", bus.StreamName, natsURL, info.State.Msgs)
		}
		defer purgeCluster(stream, lagCluster, logger)
	}

	dbURL, drop, err := pg.createDB(ctx, "lag")
	if err != nil {
		return err
	}
	defer drop()
	if err := migrate(ctx, dbURL, logger); err != nil {
		return err
	}
	ccfg := correlator.DefaultConfig() // the correlator's own defaults: the lag a deployment sees
	ccfg.ConcurrentBatches = o.concurrentBatches
	consumer := "schedlens-bench-lag-" + runID
	childArgs := []string{
		"-nats-url", natsURL, "-database-url", dbURL, "-consumer", consumer,
		"-stream-max-bytes", fmt.Sprint(sc.MaxBytes), "-log-level", o.log.Level,
		"-concurrent-batches", fmt.Sprint(ccfg.ConcurrentBatches),
	}
	if o.cpuProfile != "" {
		childArgs = append(childArgs, "-cpu-profile", o.cpuProfile+"-lag-correlator.pprof")
	}
	corr, err := startChild(childCorrelator, childArgs, nil, stderr)
	if err != nil {
		return err
	}
	defer func() {
		if err := corr.stop(); err != nil {
			logger.Warn("correlator child", "error", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteConsumer(ctx, bus.StreamName, consumer); err != nil {
			logger.Warn("cannot delete the bench consumer", "consumer", consumer, "error", err)
		}
	}()

	apiCtx, stopAPI := context.WithCancel(ctx)
	defer stopAPI()
	apiAddr := make(chan string, 1)
	apiDone := make(chan error, 1)
	go func() {
		apiDone <- apiapp.Run(apiCtx, apiapp.Options{HTTPAddr: "127.0.0.1:0", DatabaseURL: dbURL, Logger: logger.With("component", "api"),
			Bound: func(addr string) { apiAddr <- addr }})
	}()
	var api *lagAPI
	select {
	case addr := <-apiAddr:
		api = &lagAPI{base: "http://" + addr, client: &http.Client{Timeout: 30 * time.Second}}
	case err := <-apiDone:
		return fmt.Errorf("api: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	cons, err := waitConsumer(ctx, js, consumer, corr)
	if err != nil {
		return err
	}
	logger.Info("correlator and api up; publishing", "rate", o.lag.rate, "duration", o.lag.duration, "api", api.base, "correlator_pid", corr.pid())

	reg := prometheus.NewRegistry()
	pub := publisher.New(js, nil, publisher.DefaultConfig(), logger.With("component", "publisher"), reg)
	pubCtx, stopPub := context.WithCancel(context.Background())
	defer stopPub()
	pubDone := make(chan error, 1)
	go func() { pubDone <- pub.Run(pubCtx) }()

	stopProfile, err := startProfile(o.cpuProfile, "-lag-bench.pprof")
	if err != nil {
		return err
	}
	defer stopProfile()
	r := lagReport{Rate: o.lag.rate, DurationSeconds: o.lag.duration.Seconds(), BatchSize: ccfg.BatchSize, BatchWait: ccfg.BatchWait.String(), ConcurrentBatches: ccfg.ConcurrentBatches}
	samples := make(chan lagSample, 1<<16)
	lags := make(chan lagResult, 1)
	go func() { lags <- api.await(ctx, samples) }()

	// NumPending once a second while publishing.
	pending := make(chan []*jetstream.ConsumerInfo, 1)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	go func() { pending <- samplePending(sampleCtx, cons) }()

	start := time.Now()
	offered, err := pace(ctx, pub, envs, o.lag, start, samples)
	close(samples)
	window := time.Since(start)
	stopProfile()
	stopSampling()
	infos := <-pending
	if err != nil {
		return err
	}
	r.Offered, r.OfferedRate = offered, float64(offered)/window.Seconds()
	r.Acked = int(counterSum(reg, "schedlens_collector_published_total"))
	r.AckedRate = float64(r.Acked) / window.Seconds()
	r.fillPending(infos)
	logger.Info("publishing window over; waiting for the correlator", "offered", offered, "acked", r.Acked)

	stored, drain, err := api.waitStored(ctx, int64(offered), corr)
	r.Stored, r.DrainSeconds = stored, drain.Seconds()
	if err != nil {
		return err
	}
	res := <-lags
	if res.err != nil {
		return res.err
	}
	r.fillLag(res)
	if r.Correlator, err = readProcMemory(corr.pid()); err != nil {
		return err
	}
	stopPub()
	<-pubDone

	r.print(stdout)
	if o.json {
		if err := json.NewEncoder(stdout).Encode(r); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	}
	return nil
}

// lagEnvelopes returns n envelopes of one eventgen experiment, runs of 100 pods each, with
// pod UIDs drawn from a random seed and runID in the experiment's name and in the ids of the
// requests (eventgen numbers those from 1), so every id is new to JetStream's duplicate window
// even on an external server. No scope: no inventories of the whole experiment after each run.
func lagEnvelopes(n int, runID string) ([]*events.Envelope, error) {
	cfg := eventgen.Default()
	cfg.Cluster, cfg.Scope, cfg.PodsPerArm = lagCluster, nil, 25
	cfg.Experiment = "lag-" + runID
	cfg.Seed = rand.Uint64()
	cfg.Runs = 1
	perRun := len(eventgen.Generate(cfg))
	cfg.Runs = n/perRun + 1
	envs := eventgen.Generate(cfg)
	for len(envs) < n { // runs differ in size
		cfg.Runs += cfg.Runs/20 + 1
		envs = eventgen.Generate(cfg)
	}
	envs = envs[:n]
	seen := make(map[string]bool, n)
	for i, env := range envs {
		if env.Kind == events.KindRequest {
			e := *env
			e.ID, e.Raw = env.ID+"/"+runID, nil
			b, err := events.Encode(&e)
			if err != nil {
				return nil, err
			}
			if envs[i], err = events.Decode(b); err != nil {
				return nil, fmt.Errorf("re-id %s: %w", env.ID, err)
			}
		}
		if seen[envs[i].ID] {
			return nil, fmt.Errorf("eventgen produced id %q twice", envs[i].ID)
		}
		seen[envs[i].ID] = true
	}
	return envs, nil
}

// pace hands envs to the publisher at l.rate from start until l.duration has passed (or envs
// run out), as a collector's informer handlers would, and sends one listed pod event per
// lagSampleEvery to samples. Put waits when the publisher's buffer is full, so a publisher
// that cannot keep up lowers the offered rate instead of dropping envelopes.
func pace(ctx context.Context, pub *publisher.Publisher, envs []*events.Envelope, l lagOptions, start time.Time, samples chan<- lagSample) (int, error) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	nextSample := start
	for sent < len(envs) {
		elapsed := time.Since(start)
		if elapsed >= l.duration {
			break
		}
		due := min(len(envs), int(elapsed.Seconds()*float64(l.rate))+1)
		for ; sent < due; sent++ {
			env := envs[sent]
			now := time.Now()
			if !now.Before(nextSample) && env.PodUID() != "" && align.Listed(env.Kind) {
				select {
				case samples <- lagSample{uid: env.PodUID(), id: env.ID, published: now}:
				default: // the poller is far behind: skip this sample rather than block publishing
				}
				nextSample = now.Add(lagSampleEvery)
			}
			if err := pub.Put(ctx, env); err != nil {
				return sent, err
			}
		}
		select {
		case <-ctx.Done():
			return sent, ctx.Err()
		case <-tick.C:
		}
	}
	return sent, nil
}

// lagAPI reads what the api serves.
type lagAPI struct {
	base   string
	client *http.Client
}

// lagResult is the visibility lag of each sample that became visible.
type lagResult struct {
	lags      []time.Duration
	polls     []time.Duration // how long each timeline read took, answered
	invisible int
	err       error
}

// await polls the api for each sample, in publish order, until its event is in the pod's
// timeline (GET /v1/pods/{uid}/timeline lists it). A sample's lag is from just before it was
// handed to the publisher until the poll that found it had its answer: an upper bound, at most
// one poll interval plus one request late. Samples are checked oldest first — the oldest alone,
// then lagPollers at once — and a round stops once one of them is not visible yet: the
// correlator stores about in stream order, so later ones are mostly not either (if one is, it
// is only measured later, never earlier). Reading one at a time, a timeline read slower than
// lagSampleEvery (one that computes its run's interruptions again while the run is being
// stored: up to 0.4 s) queued the samples behind it, and the lag measured became the poller's
// own backlog.
func (a *lagAPI) await(ctx context.Context, samples <-chan lagSample) lagResult {
	var (
		res      lagResult
		queue    []lagSample
		open     = true
		progress = time.Now()
	)
	tick := time.NewTicker(lagPollEvery)
	defer tick.Stop()
	for open || len(queue) > 0 {
		select {
		case <-ctx.Done():
			res.err = ctx.Err()
			return res
		case <-tick.C:
		}
	drain:
		for open {
			select {
			case s, ok := <-samples:
				if !ok {
					open = false
					break drain
				}
				queue = append(queue, s)
			default:
				break drain
			}
		}
		for group := 1; len(queue) > 0; group = lagPollers {
			// The oldest sample alone first (while the correlator is behind, it is not visible
			// and the round ends on one read), then the next ones lagPollers at once.
			k := min(len(queue), group)
			type answer struct {
				ok        bool
				asked, at time.Time
				err       error
			}
			answers := make([]answer, k)
			var wg sync.WaitGroup
			for i := range k {
				wg.Go(func() {
					asked := time.Now()
					ok, err := a.visible(ctx, queue[i])
					answers[i] = answer{ok: ok, asked: asked, at: time.Now(), err: err}
				})
			}
			wg.Wait()
			var waiting []lagSample
			for i, an := range answers {
				res.polls = append(res.polls, an.at.Sub(an.asked))
				switch {
				case an.err != nil:
					res.err = an.err
					return res
				case an.ok:
					res.lags = append(res.lags, an.at.Sub(queue[i].published))
					progress = time.Now()
				default:
					waiting = append(waiting, queue[i])
				}
			}
			queue = append(waiting, queue[k:]...)
			if len(waiting) > 0 {
				break // the next round reads them again
			}
		}
		if !open && len(queue) > 0 && time.Since(progress) > lagStallLimit {
			res.invisible = len(queue)
			return res
		}
	}
	return res
}

// visible reports whether s's event is in its pod's timeline.
func (a *lagAPI) visible(ctx context.Context, s lagSample) (bool, error) {
	var tl struct {
		Events []struct {
			ID string `json:"id"`
		} `json:"events"`
	}
	found, err := a.get(ctx, "/v1/pods/"+s.uid+"/timeline", &tl)
	if err != nil || !found {
		return false, err
	}
	return slices.ContainsFunc(tl.Events, func(e struct {
		ID string `json:"id"`
	}) bool {
		return e.ID == s.id
	}), nil
}

// get decodes the api's answer to GET path into v; a 404 is found=false.
func (a *lagAPI) get(ctx context.Context, path string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return false, err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("api GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			return false, fmt.Errorf("api GET %s: decode: %w", path, err)
		}
		return true, nil
	case http.StatusNotFound:
		_, _ = io.Copy(io.Discard, resp.Body)
		return false, nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return false, fmt.Errorf("api GET %s: %s: %s", path, resp.Status, b)
}

// waitStored polls GET /v1/stats until the api counts n events and returns the count and the
// time it took; it fails when the correlator dead-letters anything, ends, or stores nothing
// for lagStallLimit.
func (a *lagAPI) waitStored(ctx context.Context, n int64, corr *child) (int64, time.Duration, error) {
	start := time.Now()
	var last int64
	progress := start
	tick := time.NewTicker(lagPollEvery)
	defer tick.Stop()
	for {
		var st store.Stats
		if _, err := a.get(ctx, "/v1/stats", &st); err != nil {
			return last, 0, err
		}
		switch {
		case st.EventsTotal >= n:
			return st.EventsTotal, time.Since(start), nil
		case st.DeadLettersTotal > 0:
			return st.EventsTotal, 0, fmt.Errorf("correlator dead-lettered %d messages (see the log)", st.DeadLettersTotal)
		case st.EventsTotal != last:
			last, progress = st.EventsTotal, time.Now()
		case time.Since(progress) > lagStallLimit:
			return last, 0, fmt.Errorf("correlator stored nothing for %s, stuck at %d of %d events (see the log)", lagStallLimit, last, n)
		}
		select {
		case <-ctx.Done():
			return last, 0, ctx.Err()
		case err := <-corr.done:
			corr.done <- err
			return last, 0, fmt.Errorf("correlator child ended after %d of %d events: %v", last, n, err)
		case <-tick.C:
		}
	}
}

// waitConsumer waits until the correlator child has created its durable consumer.
func waitConsumer(ctx context.Context, js jetstream.JetStream, name string, corr *child) (jetstream.Consumer, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := js.Consumer(ctx, bus.StreamName, name)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, jetstream.ErrConsumerNotFound) || time.Now().After(deadline) {
			return nil, fmt.Errorf("wait for the correlator's consumer %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-corr.done:
			corr.done <- err
			return nil, fmt.Errorf("correlator child ended before creating its consumer: %v (see its log above)", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// samplePending reads the consumer's info once a second until ctx ends.
func samplePending(ctx context.Context, c jetstream.Consumer) []*jetstream.ConsumerInfo {
	var out []*jetstream.ConsumerInfo
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		info, err := c.Info(ctx)
		if err == nil {
			out = append(out, info)
		}
	}
}

func (r *lagReport) fillPending(infos []*jetstream.ConsumerInfo) {
	p := &r.Pending
	p.Samples = len(infos)
	for i, info := range infos {
		if i == 0 || info.NumPending < p.Min {
			p.Min = info.NumPending
		}
		p.Max = max(p.Max, info.NumPending)
		p.MaxAckPending = max(p.MaxAckPending, info.NumAckPending)
	}
	if len(infos) > 0 {
		last := infos[len(infos)-1]
		p.Last = last.NumPending
		// Kept up: at the end of the window no more than one second of events waits for delivery
		// or acknowledgement.
		p.KeptUp = float64(last.NumPending)+float64(last.NumAckPending) <= max(r.AckedRate, 1)
	}
}

func (r *lagReport) fillLag(res lagResult) {
	l := &r.Lag
	l.Samples, l.Invisible = len(res.lags), res.invisible
	l.TargetP99, l.TargetRate = targetLagP99.Seconds(), targetLagRate
	if len(res.polls) > 0 {
		l.Polls = len(res.polls)
		l.PollP50, l.PollP99 = quantile(res.polls, 0.50), quantile(res.polls, 0.99)
	}
	if len(res.lags) == 0 {
		return
	}
	l.P50, l.P99, l.Max = quantile(res.lags, 0.50), quantile(res.lags, 0.99), slices.Max(res.lags).Seconds()
}

// quantile is the p-quantile of d (nearest rank, the one above), in seconds.
func quantile(d []time.Duration, p float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))].Seconds()
}

func (r lagReport) print(w io.Writer) {
	fmt.Fprintf(w, "schedlens-bench -lag: eventgen events at %d/s for %s through the collector's publisher → JetStream → correlator (child process; batch %d, wait %s, %d concurrent batches) → Postgres → api\n",
		r.Rate, time.Duration(r.DurationSeconds*float64(time.Second)), r.BatchSize, r.BatchWait, r.ConcurrentBatches)
	fmt.Fprintf(w, "  offered to the publisher       %8d events  %8.0f/s  (asked %d/s)\n", r.Offered, r.OfferedRate, r.Rate)
	fmt.Fprintf(w, "  acknowledged by JetStream      %8d events  %8.0f/s  (within the window)\n", r.Acked, r.AckedRate)
	fmt.Fprintf(w, "  visible in GET /v1/stats       %8d events  %.2f s after the window\n", r.Stored, r.DrainSeconds)
	l := r.Lag
	fmt.Fprintf(w, "  lag event → visible in the api: p50 %.3f s  p99 %.3f s  max %.3f s  over %d samples", l.P50, l.P99, l.Max, l.Samples)
	if l.Invisible > 0 {
		fmt.Fprintf(w, " (%d never visible)", l.Invisible)
	}
	fmt.Fprintf(w, "  (target p99 < %.0f s at %d/s)\n", l.TargetP99, l.TargetRate)
	fmt.Fprintf(w, "    method: one listed pod event per %s of publishing, timed from just before the publisher got it until GET /v1/pods/{uid}/timeline lists its id (polled every %s, oldest first, %d at once): an upper bound\n",
		lagSampleEvery, lagPollEvery, lagPollers)
	fmt.Fprintf(w, "    the poller's timeline reads: %d, p50 %.3f s  p99 %.3f s (reads slower than %s×%d would queue the samples: the lag would then be partly the poller's)\n",
		l.Polls, l.PollP50, l.PollP99, lagSampleEvery, lagPollers)
	p := r.Pending
	verdict := "kept up (at the end of the window at most one second of events was unacknowledged)"
	if !p.KeptUp {
		verdict = fmt.Sprintf("fell behind (%d events undelivered at the end of the window, ≈ %.1f s at the acknowledged rate; drained %.2f s after it)",
			p.Last, float64(p.Last)/max(r.AckedRate, 1), r.DrainSeconds)
	}
	fmt.Fprintf(w, "  consumer NumPending (each second, %d samples): min %d  max %d  last %d  (max ack pending %d): %s\n", p.Samples, p.Min, p.Max, p.Last, p.MaxAckPending, verdict)
	fmt.Fprintf(w, "  correlator RSS (child process): now %s  peak (VmHWM) %s\n", mb(r.Correlator.RSS), mb(r.Correlator.Peak))
}

// counterSum sums a metric's values over its labels in reg.
func counterSum(reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return 0
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// migrate applies the schema to a fresh database before the components start.
func migrate(ctx context.Context, dbURL string, logger *slog.Logger) error {
	db, err := store.Open(ctx, dbURL, logger)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Migrate(ctx)
}

// startProfile starts a CPU profile of this process into prefix+suffix when prefix is set;
// the function it returns stops it (once, however often it is called).
func startProfile(prefix, suffix string) (func(), error) {
	if prefix == "" {
		return func() {}, nil
	}
	f, err := os.Create(prefix + suffix)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	var once sync.Once
	return func() { once.Do(func() { pprof.StopCPUProfile(); f.Close() }) }, nil
}

// runCorrelatorChild is the correlator child of -lag: correlatorapp.Run, as `correlator serve`.
func runCorrelatorChild(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newChildFlags(childCorrelator, stderr)
	o := correlatorapp.Options{MetricsAddr: "127.0.0.1:0", Correlator: correlator.DefaultConfig()}
	fs.StringVar(&o.NATSURL, "nats-url", "", "")
	fs.StringVar(&o.DatabaseURL, "database-url", "", "")
	fs.StringVar(&o.Correlator.Consumer, "consumer", "", "")
	fs.Int64Var(&o.Stream.MaxBytes, "stream-max-bytes", 0, "")
	fs.IntVar(&o.Correlator.ConcurrentBatches, "concurrent-batches", o.Correlator.ConcurrentBatches, "")
	var profile string
	fs.StringVar(&profile, "cpu-profile", "", "")
	logger, err := fs.parse(args)
	if err != nil {
		return err
	}
	o.Logger = logger
	stopProfile, err := startProfile(profile, "") // the correlator's whole life: the window and the drain after it
	if err != nil {
		return err
	}
	defer stopProfile()
	return correlatorapp.Run(ctx, o)
}
