package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/report"
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
		out, err = runInterruptions(ctx, tx, experiment, namespace, run, minGap)
		return err
	})
	return out, err
}
