// Package correlator consumes the SCHEDLENS stream in batches and stores them: decode and
// validate, append new events and update projections in one transaction, commit, then ack.
// Poison messages are dead-lettered and terminated; transient failures are retried later.
package correlator

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/store"
)

// Config tunes the consumer.
type Config struct {
	Consumer   string        // durable consumer name; replicas sharing it split the work
	BatchSize  int           // most messages stored in one transaction
	BatchWait  time.Duration // longest wait for a batch to fill
	AckWait    time.Duration // redelivery after this long without an ack
	RetryDelay time.Duration // redelivery delay after a transient failure
	// ConcurrentBatches is how many batches are stored at once, each in its own transaction on
	// its own connection: while one waits on Postgres's commit or its row locks, another is
	// copied. 0 means the default.
	ConcurrentBatches int

	// BeforeAck, when set, runs after a batch is committed and before it is acknowledged; an
	// error stops Run there, as a crash would. It exists for fault-injection tests.
	BeforeAck func(committed int) error
}

// maxConcurrentBatches bounds -concurrent-batches: each batch being stored holds a Postgres
// connection (the pool has pool_max_conns of the database URL, by default 4 or the CPUs).
const maxConcurrentBatches = 16

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{Consumer: "correlator", BatchSize: 500, BatchWait: 200 * time.Millisecond, ConcurrentBatches: 2, AckWait: 60 * time.Second, RetryDelay: 2 * time.Second}
}

// Check reports a setting New would refuse.
func Check(cfg Config) error {
	if cfg.BatchSize <= 0 {
		return fmt.Errorf("batch size must be positive, got %d", cfg.BatchSize)
	}
	if cfg.BatchWait <= 0 {
		return fmt.Errorf("batch wait must be positive, got %s", cfg.BatchWait)
	}
	if cfg.ConcurrentBatches < 1 || cfg.ConcurrentBatches > maxConcurrentBatches {
		return fmt.Errorf("concurrent batches must be between 1 and %d, got %d", maxConcurrentBatches, cfg.ConcurrentBatches)
	}
	return nil
}

// Correlator moves envelopes from JetStream into the store.
type Correlator struct {
	cfg     Config
	js      jetstream.JetStream
	db      *store.DB
	logger  *slog.Logger
	metrics *metrics
	// lastSeq is the highest stream sequence this process was delivered (checkLoss).
	lastSeq uint64
}

// New builds a correlator; Run starts it.
func New(js jetstream.JetStream, db *store.DB, cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Correlator, error) {
	def := DefaultConfig()
	if cfg.Consumer == "" {
		cfg.Consumer = def.Consumer
	}
	if cfg.ConcurrentBatches == 0 {
		cfg.ConcurrentBatches = def.ConcurrentBatches
	}
	if err := Check(cfg); err != nil {
		return nil, err
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = def.AckWait
	}
	if cfg.RetryDelay == 0 {
		cfg.RetryDelay = def.RetryDelay
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Correlator{cfg: cfg, js: js, db: db, logger: logger, metrics: m}, nil
}

// Run consumes until ctx is cancelled. The batch in flight when ctx ends is finished — stored,
// committed and acknowledged — before Run returns.
func (c *Correlator) Run(ctx context.Context) error {
	cons, err := c.js.CreateOrUpdateConsumer(ctx, bus.StreamName, jetstream.ConsumerConfig{
		Durable:     c.cfg.Consumer,
		Description: "schedlens correlator: events into Postgres",
		AckPolicy:   jetstream.AckExplicitPolicy,
		AckWait:     c.cfg.AckWait,
		// Room for a batch being fetched, one waiting and each being stored.
		MaxAckPending: max((c.cfg.ConcurrentBatches+2)*c.cfg.BatchSize, 1000),
		MaxDeliver:    -1,
	})
	if err != nil {
		return fmt.Errorf("create consumer %s: %w", c.cfg.Consumer, err)
	}
	// Where the consumer left off, so a restart counts what was discarded while it was away.
	c.lastSeq = cons.CachedInfo().Delivered.Stream
	c.logger.Info("consuming", "stream", bus.StreamName, "consumer", c.cfg.Consumer, "batch_size", c.cfg.BatchSize, "batch_wait", c.cfg.BatchWait)

	go c.watchPending(ctx, cons)
	// The next batch is fetched and decoded while the current one is stored: Go's work
	// overlaps Postgres'.
	batches, abort := make(chan []*item, 1), make(chan struct{})
	defer close(abort)
	go c.fetch(ctx, cons, batches, abort)
	// Each of ConcurrentBatches stores the batches it takes in turn, in its own transaction, as
	// that many correlators sharing the consumer would: their locks are taken in key order
	// (store.Append), so they wait for each other's rows but never deadlock. One that fails
	// stops the others after the batch they hold.
	g, failed := errgroup.WithContext(context.WithoutCancel(ctx))
	for range c.cfg.ConcurrentBatches {
		g.Go(func() error {
			for items := range batches {
				// A fetched batch is finished even if ctx ends meanwhile: stopping halfway
				// would only cause a redelivery, but finishing it keeps shutdown clean.
				if err := c.process(context.WithoutCancel(ctx), items); err != nil {
					return err
				}
				if failed.Err() != nil {
					return nil
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// fetch pulls and decodes batches into out until ctx ends, then closes out; every batch it
// fetched is handed over, so shutdown finishes them all. When Run stops early (abort), a batch it
// still holds is handed back (Nak) for prompt redelivery.
func (c *Correlator) fetch(ctx context.Context, cons jetstream.Consumer, out chan<- []*item, abort <-chan struct{}) {
	defer close(out)
	for ctx.Err() == nil {
		batch, err := cons.Fetch(c.cfg.BatchSize, jetstream.FetchMaxWait(c.cfg.BatchWait))
		if err != nil {
			c.logger.Warn("fetch failed; retrying", "error", err)
			sleep(ctx, c.cfg.BatchWait)
			continue
		}
		var items []*item
		for m := range batch.Messages() {
			items = append(items, decode(m))
		}
		if len(items) == 0 {
			continue
		}
		c.checkLoss(ctx, items)
		select {
		case out <- items:
		case <-abort:
			for _, it := range items {
				_ = it.msg.Nak()
			}
			return
		}
	}
}

// checkLoss counts the messages the stream discarded before they were ever delivered: a first
// delivery beyond the highest sequence seen so far, when the stream no longer holds the
// sequences in between (its first sequence is past them), means they were dropped by the
// stream's limits (the oldest go first at -stream-max-bytes, and at -stream-max-age) while
// still unconsumed. With one correlator the count is exact; replicas sharing the consumer
// deliver each other's sequences, so theirs is an upper bound, and only while the stream
// discards right behind the consumer. The alert on schedlens_correlator_stream_unconsumed_bytes
// fires before that.
func (c *Correlator) checkLoss(ctx context.Context, items []*item) {
	for _, it := range items {
		meta, err := it.msg.Metadata()
		if err != nil || meta.NumDelivered != 1 {
			continue
		}
		seq := meta.Sequence.Stream
		if c.lastSeq != 0 && seq > c.lastSeq+1 {
			if st, err := c.js.Stream(ctx, bus.StreamName); err == nil {
				if first := st.CachedInfo().State.FirstSeq; first > c.lastSeq+1 {
					lost := min(seq, first) - c.lastSeq - 1
					c.metrics.lost.Add(float64(lost))
					c.logger.Error("the stream discarded messages before they were delivered: raise -stream-max-bytes or -stream-max-age, or scale the correlator",
						"lost", lost, "from_seq", c.lastSeq+1, "to_seq", min(seq, first)-1)
				}
			}
		}
		c.lastSeq = max(c.lastSeq, seq)
	}
}

// item is one delivered message and what became of it.
type item struct {
	msg  jetstream.Msg
	env  *events.Envelope
	dead *store.DeadLetter
}

func (c *Correlator) process(ctx context.Context, items []*item) error {
	start := time.Now()
	res, err := c.ingest(ctx, items)
	if err != nil {
		c.metrics.batchFailures.Inc()
		c.logger.Error("storing batch failed; it will be redelivered", "messages", len(items), "retry_in", c.cfg.RetryDelay, "error", err)
		for _, it := range items {
			_ = it.msg.NakWithDelay(c.cfg.RetryDelay)
		}
		return nil
	}
	committed := len(items)
	if c.cfg.BeforeAck != nil {
		if err := c.cfg.BeforeAck(committed); err != nil {
			return fmt.Errorf("before ack: %w", err)
		}
	}
	for _, it := range items {
		if it.dead != nil {
			_ = it.msg.Term()
			continue
		}
		_ = it.msg.Ack()
	}
	c.metrics.observe(res, len(items), time.Since(start))
	return nil
}

// decode validates one message; a message that fails becomes a dead letter.
func decode(m jetstream.Msg) *item {
	it := &item{msg: m}
	env, err := events.Decode(m.Data())
	if err == nil {
		err = events.CheckSubject(m.Subject(), env)
	}
	if err != nil {
		it.dead = deadLetter(m, err)
		return it
	}
	it.env = env
	return it
}

func deadLetter(m jetstream.Msg, err error) *store.DeadLetter {
	d := &store.DeadLetter{Subject: m.Subject(), Raw: m.Data(), Error: err.Error()}
	if meta, merr := m.Metadata(); merr == nil {
		d.Stream, d.Seq = meta.Stream, meta.Sequence.Stream
	}
	return d
}

// ingest stores items. When Postgres rejects the data itself (not a transient failure), the
// batch is split until the event it rejects stands alone, and that event is dead-lettered with
// the database's reason while the rest is stored. Halves stored before a later failure are
// harmless to store again: ids make every insert idempotent.
func (c *Correlator) ingest(ctx context.Context, items []*item) (store.AppendResult, error) {
	var envs []*events.Envelope
	var dead []store.DeadLetter
	for _, it := range items {
		if it.dead != nil {
			dead = append(dead, *it.dead)
		} else {
			envs = append(envs, it.env)
		}
	}
	res, err := c.db.Append(ctx, envs, dead)
	if err == nil || !store.IsDataError(err) || len(envs) == 0 {
		return res, err
	}
	if len(envs) == 1 {
		for _, it := range items {
			if it.env != nil {
				it.dead, it.env = deadLetter(it.msg, fmt.Errorf("rejected by the database: %w", err)), nil
			}
		}
		return c.ingest(ctx, items)
	}
	half := len(items) / 2
	a, err := c.ingest(ctx, items[:half])
	if err != nil {
		return a, err
	}
	b, err := c.ingest(ctx, items[half:])
	return a.Add(b), err
}
