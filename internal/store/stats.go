package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Stats is what the store holds, for /v1/stats.
type Stats struct {
	EventsTotal      int64            `json:"events_total"`
	DeadLettersTotal int64            `json:"dead_letters_total"`
	PodsTotal        int64            `json:"pods_total"`
	ByKind           map[string]int64 `json:"by_kind"`
	LastEventAt      *time.Time       `json:"last_event_at"`
}

// Stats counts events (from the running totals kept per batch), dead letters and pods.
func (db *DB) Stats(ctx context.Context) (Stats, error) {
	s := Stats{ByKind: map[string]int64{}}
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT kind, events, last_occurred_at FROM kind_counts`)
		if err != nil {
			return err
		}
		var (
			kind string
			n    int64
			last time.Time
		)
		_, err = pgx.ForEachRow(rows, []any{&kind, &n, &last}, func() error {
			s.ByKind[kind] = n
			s.EventsTotal += n
			if s.LastEventAt == nil || last.After(*s.LastEventAt) {
				l := last.UTC()
				s.LastEventAt = &l
			}
			return nil
		})
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM dead_letters), (SELECT count(*) FROM pods)`).
			Scan(&s.DeadLettersTotal, &s.PodsTotal)
	})
	if err != nil {
		return Stats{}, fmt.Errorf("read stats: %w", err)
	}
	return s, nil
}
