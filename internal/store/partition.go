package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
)

// The retention classes (docs/operations.md#retention): what each -retention-* setting bounds.
const (
	ClassEvents      = "events"       // raw events but request results and GPU samples; the inventories
	ClassSamples     = "samples"      // request results and GPU samples as they arrived (raw)
	ClassSummaries   = "summaries"    // request buckets, made from the raw samples
	ClassGPUSamples  = "gpu_samples"  // GPU samples in typed columns, made from the raw samples
	ClassDeadLetters = "dead_letters" // messages that could not be stored
)

// partitioned is a table partitioned by time (migrations/00013_partitions.sql): one partition
// per width, named by its start, dropped when wholly older than its class's horizon.
type partitioned struct {
	parent string
	width  time.Duration
	class  string
}

// The partitioned tables. Request results and GPU samples — the bulk of a busy cluster's events
// — arrive in hourly partitions of their own, so that their raw window can be short; the
// inventories follow the raw events (an inventory is an event).
var (
	rawEvents      = partitioned{"events_raw", 24 * time.Hour, ClassEvents}
	rawSamples     = partitioned{"events_samples", time.Hour, ClassSamples}
	inventoriesTbl = partitioned{"inventories", 24 * time.Hour, ClassEvents}
	inventoryPods  = partitioned{"inventory_pods", 24 * time.Hour, ClassEvents}
	requestBuckets = partitioned{"request_buckets", 24 * time.Hour, ClassSummaries}
	gpuSamples     = partitioned{"gpu_samples", 24 * time.Hour, ClassGPUSamples}
	partitionedAll = []partitioned{rawEvents, rawSamples, inventoriesTbl, inventoryPods, requestBuckets, gpuSamples}
)

// partitionedNamed is the partitioned table named parent.
func partitionedNamed(parent string) (partitioned, bool) {
	for _, p := range partitionedAll {
		if p.parent == parent {
			return p, true
		}
	}
	return partitioned{}, false
}

// period is the start of the partition holding t.
func (p partitioned) period(t time.Time) time.Time { return t.UTC().Truncate(p.width) }

// name is the name of the partition starting at start: events_raw_20261202, events_samples_2026120213.
func (p partitioned) name(start time.Time) string {
	if p.width < 24*time.Hour {
		return p.parent + "_" + start.UTC().Format("2006010215")
	}
	return p.parent + "_" + start.UTC().Format("20060102")
}

// eventClass is the class an event is stored in as it arrives: a function of its kind alone,
// so that every copy of an event meets the first in the same partition.
func eventClass(k events.Kind) string {
	if k == events.KindRequest || k == events.KindGPUSample {
		return "samples"
	}
	return "raw"
}

// eventTable is the partitioned table an event arrives in.
func eventTable(k events.Kind) partitioned {
	if eventClass(k) == "samples" {
		return rawSamples
	}
	return rawEvents
}

// partitionLock serialises creating and dropping partitions (a transaction-scoped advisory
// lock): a day is never created while maintenance is dropping it.
const partitionLock = `SELECT pg_advisory_xact_lock(hashtext('schedlens partitions'))`

// periodRange is one partition's range [lower, upper).
type periodRange struct{ lower, upper time.Time }

// horizons are the classes' horizons: nothing older is stored (zero: no limit).
type horizons map[string]time.Time

// expired reports whether env, or the inventory it holds, is older than its class's horizon.
func (h horizons) expired(env *events.Envelope) bool {
	if env.OccurredAt.Before(h[eventTable(env.Kind).class]) {
		return true
	}
	inv, ok := align.InventoryOf(env)
	return ok && inv.ListedAt.Before(h[ClassEvents])
}

// partitionCache is what this process knows of the partitions: those it has seen exist, and
// the horizons. A partition another process dropped makes a copy into it fail
// (errNoPartition): the cache is then reset and the batch tried once more.
type partitionCache struct {
	mu       sync.Mutex
	spans    map[string][]periodRange // by parent
	horizons horizons
	loaded   bool
}

func (c *partitionCache) reset() {
	c.mu.Lock()
	c.loaded = false
	c.spans = nil
	c.mu.Unlock()
}

// covers reports whether one of spans holds the time d.
func covers(spans []periodRange, d time.Time) bool {
	for _, s := range spans {
		if !d.Before(s.lower) && d.Before(s.upper) {
			return true
		}
	}
	return false
}

// errNoPartition reports a row for which no partition exists (SQLSTATE 23514, raised by the
// partition routing, not by a CHECK constraint of ours).
func errNoPartition(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && strings.HasPrefix(pgErr.Message, "no partition of relation")
}

// need is the partitions a batch needs: the periods, by parent table.
type need map[string]map[time.Time]bool

func (n need) add(p partitioned, t time.Time) {
	if n[p.parent] == nil {
		n[p.parent] = map[time.Time]bool{}
	}
	n[p.parent][p.period(t)] = true
}

// partitionsOf is the partitions envs need.
func partitionsOf(envs []*events.Envelope) need {
	n := need{}
	for _, env := range envs {
		n.add(eventTable(env.Kind), env.OccurredAt)
		if inv, ok := align.InventoryOf(env); ok {
			n.add(inventoriesTbl, inv.ListedAt)
			n.add(inventoryPods, inv.ListedAt)
		}
	}
	return n
}

// ensurePartitions makes sure every period of n at or after its class's horizon has its
// partition, creating the missing ones in a transaction of their own (creating a partition
// locks its parent: not for the length of a batch), and returns the horizons.
func (db *DB) ensurePartitions(ctx context.Context, n need) (horizons, error) {
	h, _, err := db.createPartitions(ctx, n)
	return h, err
}

// createPartitions is ensurePartitions, also returning the partitions it created.
func (db *DB) createPartitions(ctx context.Context, n need) (horizons, []string, error) {
	c := &db.parts
	c.mu.Lock()
	defer c.mu.Unlock()
	missing := !c.loaded
	if !missing {
		for parent, periods := range n {
			p, _ := partitionedNamed(parent)
			for d := range periods {
				if !d.Before(c.horizons[p.class]) && !covers(c.spans[parent], d) {
					missing = true
				}
			}
		}
	}
	if !missing {
		return c.horizons, nil, nil
	}
	var created []string
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		h, spans, names, err := createMissing(ctx, tx, n)
		c.horizons, c.spans, c.loaded, created = h, spans, err == nil, names
		return err
	})
	if err != nil {
		c.loaded = false
		return nil, nil, fmt.Errorf("create partitions: %w", err)
	}
	return c.horizons, created, nil
}

// createMissing creates in tx the partitions of n that do not exist, except for periods before
// their class's horizon, and returns the horizons, every partition's range and the names it
// created.
func createMissing(ctx context.Context, tx pgx.Tx, n need) (horizons, map[string][]periodRange, []string, error) {
	if _, err := tx.Exec(ctx, partitionLock); err != nil {
		return nil, nil, nil, err
	}
	h, spans, err := readPartitions(ctx, tx)
	if err != nil {
		return nil, nil, nil, err
	}
	var created []string
	for _, p := range partitionedAll {
		for _, d := range slices.SortedFunc(maps.Keys(n[p.parent]), time.Time.Compare) {
			if d.Before(h[p.class]) || covers(spans[p.parent], d) {
				continue
			}
			if err := createPartition(ctx, tx, p, d); err != nil {
				return nil, nil, nil, err
			}
			spans[p.parent] = append(spans[p.parent], periodRange{d, d.Add(p.width)})
			created = append(created, p.name(d))
		}
	}
	return h, spans, created, nil
}

// readPartitions reads the horizons and every partition's range.
func readPartitions(ctx context.Context, tx pgx.Tx) (horizons, map[string][]periodRange, error) {
	h := horizons{}
	rows, err := tx.Query(ctx, `SELECT class, horizon FROM retention WHERE horizon IS NOT NULL`)
	if err != nil {
		return nil, nil, fmt.Errorf("read the horizons: %w", err)
	}
	var class string
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&class, &at}, func() error { h[class] = at; return nil }); err != nil {
		return nil, nil, fmt.Errorf("read the horizons: %w", err)
	}
	rows, err = tx.Query(ctx, `SELECT parent, lower, upper FROM partitions`)
	if err != nil {
		return nil, nil, fmt.Errorf("read partitions: %w", err)
	}
	spans := map[string][]periodRange{}
	var parent string
	var lower, upper pgtype.Timestamptz
	_, err = pgx.ForEachRow(rows, []any{&parent, &lower, &upper}, func() error {
		spans[parent] = append(spans[parent], periodRange{spanTime(lower), spanTime(upper)})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read partitions: %w", err)
	}
	return h, spans, nil
}

// createPartition creates p's partition starting at d (if another process has not). The table
// is created apart and attached: ATTACH takes a lock on the parent that readers and writers
// do not wait for (SHARE UPDATE EXCLUSIVE), where CREATE TABLE … PARTITION OF would queue them
// behind it, or deadlock with a read that already holds some of the partitions.
func createPartition(ctx context.Context, tx pgx.Tx, p partitioned, d time.Time) error {
	name := pgx.Identifier{p.name(d)}.Sanitize()
	parent := pgx.Identifier{p.parent}.Sanitize()
	upper := d.Add(p.width)
	_, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`, name, parent))
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	_, err = tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')`,
		parent, name, d.Format(time.RFC3339), upper.Format(time.RFC3339)))
	if err != nil {
		return fmt.Errorf("attach %s: %w", name, err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO partitions (parent, name, lower, upper) VALUES ($1, $2, $3, $4)`, p.parent, p.name(d), d, upper)
	if err != nil {
		return fmt.Errorf("record %s: %w", name, err)
	}
	return nil
}

// spanTime reads a partition bound: -infinity (the first partition's lower bound) as the zero
// time, +infinity as the latest time.
func spanTime(v pgtype.Timestamptz) time.Time {
	switch v.InfinityModifier {
	case pgtype.NegativeInfinity:
		return time.Time{}
	case pgtype.Infinity:
		return time.Unix(1<<62, 0)
	}
	return v.Time
}
