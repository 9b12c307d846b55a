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

// The tables partitioned by UTC day (migrations/00013_partitions.sql): events as they arrive
// (class 'raw'), by occurred_at, and the inventories, by listed_at. One horizon — that of the
// raw events' retention — applies to all three: an inventory is an event.
const (
	rawEvents      = "events_raw"
	inventoriesTbl = "inventories"
	inventoryPods  = "inventory_pods"
)

var dayTables = []string{rawEvents, inventoriesTbl, inventoryPods}

// partitionLock serialises creating and dropping partitions (a transaction-scoped advisory
// lock): a day is never created while maintenance is dropping it.
const partitionLock = `SELECT pg_advisory_xact_lock(hashtext('schedlens partitions'))`

// day is the UTC day holding t.
func day(t time.Time) time.Time {
	return t.UTC().Truncate(24 * time.Hour)
}

// partitionName is the name of parent's partition for the UTC day d: events_raw_20261202.
func partitionName(parent string, d time.Time) string {
	return parent + "_" + d.UTC().Format("20060102")
}

// dayRange is one partition's range [lower, upper).
type dayRange struct{ lower, upper time.Time }

// partitionCache is what this process knows of the partitions: those it has seen exist, and
// the horizon (nothing older is stored). A partition another process dropped makes a copy into
// it fail (errNoPartition): the cache is then reset and the batch tried once more.
type partitionCache struct {
	mu      sync.Mutex
	spans   map[string][]dayRange // by parent
	horizon time.Time
	loaded  bool
}

func (c *partitionCache) covered(parent string, d time.Time) bool {
	return covers(c.spans[parent], d)
}

// covers reports whether one of spans holds the time d.
func covers(spans []dayRange, d time.Time) bool {
	for _, s := range spans {
		if !d.Before(s.lower) && d.Before(s.upper) {
			return true
		}
	}
	return false
}

func (c *partitionCache) reset() {
	c.mu.Lock()
	c.loaded = false
	c.spans = nil
	c.mu.Unlock()
}

// errNoPartition reports a row for which no partition exists (SQLSTATE 23514, raised by the
// partition routing, not by a CHECK constraint of ours).
func errNoPartition(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && strings.HasPrefix(pgErr.Message, "no partition of relation")
}

// daysOf is the UTC days envs need a partition for, by parent table.
func daysOf(envs []*events.Envelope) map[string]map[time.Time]bool {
	need := map[string]map[time.Time]bool{}
	add := func(parent string, t time.Time) {
		if need[parent] == nil {
			need[parent] = map[time.Time]bool{}
		}
		need[parent][day(t)] = true
	}
	for _, env := range envs {
		add(rawEvents, env.OccurredAt)
		if inv, ok := align.InventoryOf(env); ok {
			add(inventoriesTbl, inv.ListedAt)
			add(inventoryPods, inv.ListedAt)
		}
	}
	return need
}

// ensurePartitions makes sure every day of need at or after the horizon has its partition,
// creating the missing ones in a transaction of their own (creating a partition locks its
// parent: not for the length of a batch), and returns the horizon.
func (db *DB) ensurePartitions(ctx context.Context, need map[string]map[time.Time]bool) (time.Time, error) {
	horizon, _, err := db.createPartitions(ctx, need)
	return horizon, err
}

// createPartitions is ensurePartitions, also returning the partitions it created.
func (db *DB) createPartitions(ctx context.Context, need map[string]map[time.Time]bool) (time.Time, []string, error) {
	c := &db.parts
	c.mu.Lock()
	defer c.mu.Unlock()
	missing := !c.loaded
	if !missing {
		for parent, days := range need {
			for d := range days {
				if !d.Before(c.horizon) && !c.covered(parent, d) {
					missing = true
				}
			}
		}
	}
	if !missing {
		return c.horizon, nil, nil
	}
	var created []string
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		horizon, spans, names, err := createMissing(ctx, tx, need)
		c.horizon, c.spans, c.loaded, created = horizon, spans, err == nil, names
		return err
	})
	if err != nil {
		c.loaded = false
		return time.Time{}, nil, fmt.Errorf("create partitions: %w", err)
	}
	return c.horizon, created, nil
}

// createMissing creates in tx the partitions of need that do not exist, except for days before
// the horizon, and returns the horizon, every partition's range and the names it created.
func createMissing(ctx context.Context, tx pgx.Tx, need map[string]map[time.Time]bool) (time.Time, map[string][]dayRange, []string, error) {
	if _, err := tx.Exec(ctx, partitionLock); err != nil {
		return time.Time{}, nil, nil, err
	}
	horizon, spans, err := readPartitions(ctx, tx)
	if err != nil {
		return time.Time{}, nil, nil, err
	}
	var created []string
	for _, parent := range dayTables {
		for _, d := range slices.SortedFunc(maps.Keys(need[parent]), time.Time.Compare) {
			if d.Before(horizon) || covers(spans[parent], d) {
				continue
			}
			if err := createPartition(ctx, tx, parent, d); err != nil {
				return time.Time{}, nil, nil, err
			}
			spans[parent] = append(spans[parent], dayRange{d, d.Add(24 * time.Hour)})
			created = append(created, partitionName(parent, d))
		}
	}
	return horizon, spans, created, nil
}

// readPartitions reads the horizon and every partition's range.
func readPartitions(ctx context.Context, tx pgx.Tx) (time.Time, map[string][]dayRange, error) {
	var horizon *time.Time
	err := tx.QueryRow(ctx, `SELECT horizon FROM retention WHERE class = $1`, ClassEvents).Scan(&horizon)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, nil, fmt.Errorf("read the horizon: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT parent, lower, upper FROM partitions`)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("read partitions: %w", err)
	}
	spans := map[string][]dayRange{}
	var parent string
	var lower, upper pgtype.Timestamptz
	_, err = pgx.ForEachRow(rows, []any{&parent, &lower, &upper}, func() error {
		spans[parent] = append(spans[parent], dayRange{spanTime(lower), spanTime(upper)})
		return nil
	})
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("read partitions: %w", err)
	}
	var h time.Time
	if horizon != nil {
		h = *horizon
	}
	return h, spans, nil
}

// createPartition creates parent's partition for the UTC day d (if another process has not).
func createPartition(ctx context.Context, tx pgx.Tx, parent string, d time.Time) error {
	name := partitionName(parent, d)
	upper := d.Add(24 * time.Hour)
	_, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')`,
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{parent}.Sanitize(), d.Format(time.RFC3339), upper.Format(time.RFC3339)))
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO partitions (parent, name, lower, upper) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING`,
		parent, name, d, upper)
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
