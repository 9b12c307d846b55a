package store

import (
	"context"
	"fmt"
)

// Vacuum runs VACUUM (ANALYZE) on the whole database: after a bulk load (the read bench) it
// leaves the visibility map and the planner's statistics where autovacuum would in time.
func (db *DB) Vacuum(ctx context.Context) error {
	if _, err := db.pool.Exec(ctx, `VACUUM (ANALYZE)`); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	return nil
}
