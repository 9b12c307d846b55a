package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/store"
)

// Progress checks while the correlator works.
const (
	pollEvery  = 20 * time.Millisecond
	stallLimit = 2 * time.Minute // no new event stored for this long ends the run
	publishWin = 2000            // most publishes awaiting their ack, below the client's limit

	inProcessDuplicates = time.Second // the in-process stream's duplicate window
)

// measureEndToEnd publishes the envelopes raws encode to JetStream (untimed), then times a
// correlator storing them
// into a fresh, migrated database, from its start until the store counts every event.
// measureEndToEnd times a correlator storing raws from JetStream; with profile set, the timed
// phase's CPU profile is written there.
func measureEndToEnd(ctx context.Context, pg *pgServer, natsURL string, raws *rawSet, cfg correlator.Config, profile string, logger, corrLogger *slog.Logger) (figure, error) {
	external := natsURL != ""
	natsURL, stopNATS, err := natsOrLocal(natsURL)
	if err != nil {
		return figure{}, err
	}
	defer stopNATS()
	nc, err := bus.Connect(natsURL, "schedlens-bench", logger)
	if err != nil {
		return figure{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(30*time.Second))
	if err != nil {
		return figure{}, fmt.Errorf("jetstream: %w", err)
	}

	size := int64(len(raws.buf))
	sc := bus.DefaultStreamConfig()
	sc.MaxBytes = max(sc.MaxBytes, 2*size) // never discard a message the bench is waiting for
	if !external {
		// The in-process server shares this process's heap with the correlator being timed: a
		// duplicate table of a million ids (what a 10-minute window holds) would make every
		// garbage collection of the correlator mark it, which a correlator beside a nats-server
		// of its own never pays. The bench's ids are distinct; a short window drops the table.
		sc.Duplicates = inProcessDuplicates
	}
	stream, err := bus.EnsureStream(ctx, js, sc)
	if err != nil {
		return figure{}, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return figure{}, fmt.Errorf("stream info: %w", err)
	}
	if info.State.Msgs > 0 {
		return figure{}, fmt.Errorf("stream %s on %s already holds %d messages; the bench needs an empty stream (omit -nats-url for an in-process server)", bus.StreamName, natsURL, info.State.Msgs)
	}
	if external {
		defer purgeCluster(stream, benchCluster, logger)
	}

	start := time.Now()
	if err := publish(ctx, js, raws, info.Config.Duplicates); err != nil {
		return figure{}, err
	}
	if info, err = stream.Info(ctx); err != nil {
		return figure{}, fmt.Errorf("stream info: %w", err)
	}
	if info.State.Msgs != uint64(raws.len()) {
		return figure{}, fmt.Errorf("stream %s holds %d messages after publishing %d", bus.StreamName, info.State.Msgs, raws.len())
	}
	logger.Info("published to JetStream (not timed)", "events", raws.len(), "bytes", size, "took", time.Since(start).Round(time.Millisecond))

	dbURL, drop, err := pg.createDB(ctx, "e2e")
	if err != nil {
		return figure{}, err
	}
	defer drop()
	db, err := store.Open(ctx, dbURL, corrLogger)
	if err != nil {
		return figure{}, err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return figure{}, err
	}
	// Opens the pool's connection before timing starts.
	if _, err := db.Stats(ctx); err != nil {
		return figure{}, err
	}
	c, err := correlator.New(js, db, cfg, corrLogger, prometheus.NewRegistry())
	if err != nil {
		return figure{}, err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := js.DeleteConsumer(ctx, bus.StreamName, cfg.Consumer); err != nil {
			logger.Warn("cannot delete the bench consumer", "consumer", cfg.Consumer, "error", err)
		}
	}()
	pg.checkpoint(ctx)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var runErr error
	finished := make(chan struct{})
	stopProfile, err := startProfile(profile, "")
	if err != nil {
		return figure{}, err
	}
	defer stopProfile()
	start = time.Now()
	go func() { runErr = c.Run(runCtx); close(finished) }()
	took, err := waitStored(ctx, db, raws.len(), start, finished)
	cancel()
	<-finished
	if profile != "" {
		stopProfile()
		logger.Info("cpu profile of the timed phase written", "file", profile)
	}
	// Acks of the last batch are in the connection's buffer: send them before the consumer goes.
	_ = nc.FlushTimeout(5 * time.Second)
	if err != nil {
		return figure{}, errors.Join(err, runErr)
	}
	if s, err := db.Stats(ctx); err == nil {
		logger.Info("stored end to end", "events", s.EventsTotal, "pods", s.PodsTotal, "took", took.Round(time.Millisecond))
	}
	return newFigure(raws.len(), took), nil
}

// publish decodes each of raws and sends it through the bus's window, keeping at most
// publishWin unacknowledged, and returns once every one is acknowledged as newly stored.
func publish(ctx context.Context, js jetstream.JetStream, raws *rawSet, window time.Duration) error {
	// The ids of the envelopes that may be unacknowledged: when envelope i is published, every
	// one before i-publishWin has been settled, so a ring one longer than the window suffices.
	ids := make([]string, publishWin+1)
	w := bus.NewWindow(js, publishWin, func(i int, ack *jetstream.PubAck, err error) error {
		id := ids[i%len(ids)]
		switch {
		case err != nil:
			return fmt.Errorf("publish %s: %w", id, err)
		case ack.Duplicate:
			return fmt.Errorf("publish %s: JetStream dropped it as a duplicate: the bench's ids were published less than the stream's duplicate window (%s) ago; wait, or omit -nats-url", id, window)
		}
		return nil
	})
	for i := range raws.len() {
		env, err := events.Decode(raws.at(i))
		if err != nil {
			return fmt.Errorf("decode generated envelope %d: %w", i, err)
		}
		ids[i%len(ids)] = env.ID
		if err := w.Publish(ctx, env, i); err != nil {
			return err
		}
	}
	_, err := w.Wait(ctx)
	return err
}

// rawSet is encoded envelopes back to back in one buffer.
type rawSet struct {
	buf []byte
	end []int // end[i] is where envelope i ends in buf
}

func newRawSet(envs []*events.Envelope) *rawSet {
	size := 0
	for _, env := range envs {
		size += len(env.Raw)
	}
	r := &rawSet{buf: make([]byte, 0, size), end: make([]int, len(envs))}
	for i, env := range envs {
		r.buf = append(r.buf, env.Raw...)
		r.end[i] = len(r.buf)
	}
	return r
}

func (r *rawSet) len() int { return len(r.end) }

// at is envelope i's bytes (a copy: a decoded envelope may keep them).
func (r *rawSet) at(i int) []byte {
	start := 0
	if i > 0 {
		start = r.end[i-1]
	}
	return slices.Clone(r.buf[start:r.end[i]])
}

// waitStored polls the store until it counts n events and returns the time since start. It
// fails when the correlator stops, dead-letters anything, or stores nothing for stallLimit.
func waitStored(ctx context.Context, db *store.DB, n int, start time.Time, finished <-chan struct{}) (time.Duration, error) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	var last int64
	lastChange := time.Now()
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-finished:
			return 0, fmt.Errorf("correlator stopped after storing %d of %d events", last, n)
		case <-t.C:
		}
		stored, dead, err := db.Stored(ctx)
		if err != nil {
			return 0, err
		}
		switch {
		case stored == int64(n):
			return time.Since(start), nil
		case stored > int64(n):
			return 0, fmt.Errorf("store counts %d events, more than the %d published", stored, n)
		case dead > 0:
			return 0, fmt.Errorf("correlator dead-lettered %d messages (see the log)", dead)
		case stored != last:
			last, lastChange = stored, time.Now()
		case time.Since(lastChange) > stallLimit:
			return 0, fmt.Errorf("correlator stored nothing for %s, stuck at %d of %d events (see the log)", stallLimit, last, n)
		}
	}
}
