package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/workload"
)

// DownTo rolls the schema back to version with the migrations' Down sections (tests only).
func (db *DB) DownTo(ctx context.Context, version int64) error {
	p, sqlDB, err := db.migrator()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	_, err = p.DownTo(ctx, version)
	return err
}

// ComparisonInputDirect is comparisonInputDirect (tests only).
func (db *DB) ComparisonInputDirect(ctx context.Context, name, namespace string) (compare.Input, error) {
	return db.comparisonInputDirect(ctx, name, namespace)
}

// RunInterruptionsDirect is runInterruptions without the cache (tests only).
func (db *DB) RunInterruptionsDirect(ctx context.Context, experiment, namespace, run string, minGap time.Duration) ([]report.ArmInterruptions, error) {
	var out []report.ArmInterruptions
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		out, err = runInterruptions(ctx, tx, runArms{experiment: experiment, namespace: namespace, run: run}, minGap)
		return err
	})
	return out, err
}

// DisruptionsReadingAllRequests detects f's disruptions over [from, to] with every successful
// request of the window's pods read, not only those around the disruptions (tests only: what
// detect's narrower read must equal).
func (db *DB) DisruptionsReadingAllRequests(ctx context.Context, f WorkloadFilter, from, to time.Time) ([]report.Disruption, error) {
	var out []report.Disruption
	err := db.readOnly(ctx, func(tx pgx.Tx) error {
		in, err := db.workloadInput(ctx, tx, f, from, to)
		if err != nil {
			return err
		}
		for i := range in.Pods {
			p := &in.Pods[i]
			rows, err := tx.Query(ctx, `SELECT e.occurred_at FROM events e WHERE e.pod_uid = $1 AND e.kind = 'request' AND `+succeeded, p.Pod.UID)
			if err != nil {
				return err
			}
			ats, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
			if err != nil {
				return err
			}
			for _, at := range ats {
				p.Successes = append(p.Successes, at.UTC())
			}
		}
		out = workload.Detect(in)
		return nil
	})
	return out, err
}

// DefinitionNamespace is definitionNamespace (tests only).
func DefinitionNamespace(eventID string) (string, bool) { return definitionNamespace(eventID) }

// StoredStats is where this DB's comparisons and run slices came from (tests only): run slices
// computed from the events' projections or loaded from run_slices, comparisons built or loaded
// from stored_comparisons.
type StoredStats struct{ SlicesComputed, SlicesLoaded, Built, Loaded int64 }

func (db *DB) StoredStats() StoredStats {
	return StoredStats{db.stats.slicesComputed.Load(), db.stats.slicesLoaded.Load(), db.stats.comparisonsBuilt.Load(), db.stats.comparisonsLoaded.Load()}
}

// Exec runs sql on the store's database (tests only: to change stored rows by hand).
func (db *DB) Exec(ctx context.Context, sql string) (int64, error) {
	tag, err := db.pool.Exec(ctx, sql)
	return tag.RowsAffected(), err
}

// Succeeded is the condition on an event e that it is a successful request (tests only).
const Succeeded = succeeded

// Acquire is one connection of the store's pool (tests only).
func (db *DB) Acquire(ctx context.Context) (*pgxpool.Conn, error) { return db.pool.Acquire(ctx) }
