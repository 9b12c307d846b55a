package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Stats is what the store holds, for /v1/stats.
type Stats struct {
	EventsTotal      int64 `json:"events_total"`
	DeadLettersTotal int64 `json:"dead_letters_total"`
	PodsTotal        int64 `json:"pods_total"`
	// UnattributedRequestsTotal counts the results that name only a pod IP no known pod of
	// their cluster held when they were sent: they wait (GET /v1/unattributed-requests).
	UnattributedRequestsTotal int64            `json:"unattributed_requests_total"`
	ByKind                    map[string]int64 `json:"by_kind"`
	LastEventAt               *time.Time       `json:"last_event_at"`
}

// Stats counts events (from the running totals kept per batch), dead letters, pods and the
// results waiting for a pod.
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
		return tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM dead_letters), (SELECT count(*) FROM pods),
			(SELECT count(*) FROM unattributed_requests)`).
			Scan(&s.DeadLettersTotal, &s.PodsTotal, &s.UnattributedRequestsTotal)
	})
	if err != nil {
		return Stats{}, fmt.Errorf("read stats: %w", err)
	}
	return s, nil
}

// StoredDeadLetter is a dead letter as stored, with when it arrived.
type StoredDeadLetter struct {
	ID         int64     `json:"id"`
	Stream     string    `json:"stream"`
	StreamSeq  uint64    `json:"stream_seq"`
	Subject    string    `json:"subject"`
	Raw        string    `json:"raw"`
	Error      string    `json:"error"`
	ReceivedAt time.Time `json:"received_at"`
}

// DeadLetters returns the newest dead letters first, at most limit.
func (db *DB) DeadLetters(ctx context.Context, limit int) ([]StoredDeadLetter, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT id, stream, stream_seq, subject, raw, error, received_at
		FROM dead_letters ORDER BY id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("read dead letters: %w", err)
	}
	out := []StoredDeadLetter{}
	var (
		d   StoredDeadLetter
		seq int64
		raw []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&d.ID, &d.Stream, &seq, &d.Subject, &raw, &d.Error, &d.ReceivedAt}, func() error {
		d.StreamSeq, d.Raw, d.ReceivedAt = uint64(seq), strings.ToValidUTF8(string(raw), "\uFFFD"), d.ReceivedAt.UTC()
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read dead letters: %w", err)
	}
	return out, nil
}
