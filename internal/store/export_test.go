package store

import (
	"context"

	"github.com/schedlens/schedlens/internal/compare"
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
