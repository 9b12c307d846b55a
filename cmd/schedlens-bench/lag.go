package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/natsserver"
	"github.com/schedlens/schedlens/internal/publisher"
	"github.com/schedlens/schedlens/internal/store"
)

// Lag mode: the pod mix offered to the collector's publisher at a fixed rate while a
// correlator stores it, and how long each event took to become visible to the API's reads.
const (
	targetLagP99 = time.Second
	lagTick      = 10 * time.Millisecond // the publisher is offered rate/100 events every tick
	lagPoll      = 5 * time.Millisecond  // how often the store's count is read
	keptUpWithin = time.Second           // after the last offer, the store must hold every event within this
)

// lagReport is the lag mode's figures.
type lagReport struct {
	Rate        int     `json:"rate_per_second"`
	Seconds     float64 `json:"seconds"`
	Events      int     `json:"events"`
	OfferedRate float64 `json:"offered_per_second"`
	P50MS       float64 `json:"lag_p50_ms"`
	P99MS       float64 `json:"lag_p99_ms"`
	MaxMS       float64 `json:"lag_max_ms"`
	DrainMS     float64 `json:"drain_ms"` // after the last offer, until the store held every event
	KeptUp      bool    `json:"kept_up"`
	TargetP99MS float64 `json:"target_lag_p99_ms"`
}

// measureLag offers rate events a second for d to a publisher.Publisher (the collector's) on
// an in-process JetStream while a correlator stores them into a fresh database. An event is
// visible once the store's running count includes it (committed, so every new read of the
// API sees it): a correlator stores a stream in order, so a count of k means the first k.
func measureLag(ctx context.Context, pg *pgServer, o options, logger, corrLogger *slog.Logger) (lagReport, error) {
	n := int(float64(o.lagRate) * o.lagDur.Seconds())
	envs, err := podMix.generate(n)
	if err != nil {
		return lagReport{}, err
	}
	logger.Info("generated envelopes", "mix", "pods", "events", n, "rate", o.lagRate, "for", o.lagDur)

	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		return lagReport{}, err
	}
	defer srv.Close()
	nc, err := bus.Connect(srv.URL(), "schedlens-bench-lag", logger)
	if err != nil {
		return lagReport{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return lagReport{}, fmt.Errorf("jetstream: %w", err)
	}
	sc := bus.DefaultStreamConfig()
	sc.Duplicates = inProcessDuplicates
	if _, err := bus.EnsureStream(ctx, js, sc); err != nil {
		return lagReport{}, err
	}
	dbURL, drop, err := pg.createDB(ctx, "lag")
	if err != nil {
		return lagReport{}, err
	}
	defer drop()
	db, err := store.Open(ctx, dbURL, corrLogger)
	if err != nil {
		return lagReport{}, err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return lagReport{}, err
	}
	cfg := correlator.DefaultConfig()
	cfg.Consumer = "schedlens-bench-lag"
	c, err := correlator.New(js, db, cfg, corrLogger, prometheus.NewRegistry())
	if err != nil {
		return lagReport{}, err
	}
	pcfg := publisher.DefaultConfig()
	pcfg.Buffer = max(pcfg.Buffer, n) // a backlog is measured as lag, never dropped
	pub := publisher.New(js, nil, pcfg, logger, prometheus.NewRegistry())

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- c.Run(runCtx) }()
	go func() { errs <- pub.Run(runCtx) }()
	stopped := func() error {
		cancel()
		return errors.Join(<-errs, <-errs)
	}

	// Offer nothing before the correlator consumes: its start is not lag.
	for {
		if _, err := js.Consumer(ctx, bus.StreamName, cfg.Consumer); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return lagReport{}, errors.Join(ctx.Err(), stopped())
		case <-time.After(lagPoll):
		}
	}
	offered := make([]time.Time, n) // when event i was offered
	visible := make([]time.Time, n) // when the store first counted it
	pollDone := make(chan error, 1)
	go func() { pollDone <- pollVisible(runCtx, db, visible) }()

	start := time.Now()
	perTick := max(1, o.lagRate/int(time.Second/lagTick))
	tick := time.NewTicker(lagTick)
	for i := 0; i < n; {
		select {
		case <-ctx.Done():
			return lagReport{}, errors.Join(ctx.Err(), stopped())
		case <-tick.C:
		}
		// Catch up to the schedule when a tick came late: the rate is the rate asked for.
		due := min(n, int(time.Since(start)/lagTick+1)*perTick)
		for ; i < due; i++ {
			offered[i] = time.Now()
			if !pub.Offer(envs[i]) {
				return lagReport{}, errors.Join(fmt.Errorf("publisher buffer full at event %d", i), stopped())
			}
		}
	}
	tick.Stop()
	last := time.Now()
	offeredFor := last.Sub(start)
	var pollErr error
	select {
	case pollErr = <-pollDone:
	case <-time.After(stallLimit):
		pollErr = fmt.Errorf("the store did not hold all %d events %s after the last was offered", n, stallLimit)
	}
	if err := errors.Join(pollErr, stopped()); err != nil && !errors.Is(err, context.Canceled) {
		return lagReport{}, err
	}
	lags := make([]time.Duration, n)
	for i := range n {
		lags[i] = visible[i].Sub(offered[i])
	}
	slices.Sort(lags)
	drain := visible[n-1].Sub(last)
	r := lagReport{Rate: o.lagRate, Seconds: o.lagDur.Seconds(), Events: n, OfferedRate: float64(n) / offeredFor.Seconds(),
		P50MS: ms(lags[n/2]), P99MS: ms(lags[n*99/100]), MaxMS: ms(lags[n-1]), DrainMS: ms(max(drain, 0)),
		KeptUp: drain <= keptUpWithin, TargetP99MS: ms(targetLagP99)}
	return r, nil
}

// pollVisible reads the store's count every lagPoll and stamps each newly counted event with
// the time, until every event is counted.
func pollVisible(ctx context.Context, db *store.DB, visible []time.Time) error {
	seen := 0
	for seen < len(visible) {
		if err := ctx.Err(); err != nil {
			return err
		}
		stored, dead, err := db.Stored(ctx)
		if err != nil {
			return err
		}
		if dead > 0 {
			return fmt.Errorf("correlator dead-lettered %d messages", dead)
		}
		now := time.Now()
		for ; seen < min(int(stored), len(visible)); seen++ {
			visible[seen] = now
		}
		time.Sleep(lagPoll)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (r lagReport) print(w io.Writer) {
	fmt.Fprintf(w, "\nlag: pods mix offered to the collector's publisher at %d events/s for %.0f s (%d events, %.0f/s offered)\n",
		r.Rate, r.Seconds, r.Events, r.OfferedRate)
	fmt.Fprintf(w, "  event → visible to API reads: p50 %.0f ms, p99 %.0f ms, max %.0f ms  (target p99 < %.0f ms)\n", r.P50MS, r.P99MS, r.MaxMS, r.TargetP99MS)
	verdict := "yes"
	if !r.KeptUp {
		verdict = "no"
	}
	fmt.Fprintf(w, "  kept up: %s (the last event visible %.0f ms after it was offered; a backlog would show as lag)\n", verdict, r.DrainMS)
}
