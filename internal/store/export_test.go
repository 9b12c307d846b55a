package store

import "context"

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
