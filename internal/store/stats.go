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

// StoredDeadLetter is a dead letter as stored, with when it arrived. Raw is cut at the page's
// raw budget (RawTruncated says so; RawBytes is the stored size).
type StoredDeadLetter struct {
	ID           int64     `json:"id"`
	Stream       string    `json:"stream"`
	StreamSeq    uint64    `json:"stream_seq"`
	Subject      string    `json:"subject"`
	Raw          string    `json:"raw"`
	RawBytes     int64     `json:"raw_bytes"`
	RawTruncated bool      `json:"raw_truncated"`
	Error        string    `json:"error"`
	ReceivedAt   time.Time `json:"received_at"`
}

// Budgets of a page of dead letters: a poison message may be as large as the stream allows
// (a MiB or more), and a page of a thousand of them must not be a GiB.
const (
	DeadLetterRawBytes  = 64 << 10 // raw bytes kept of each dead letter
	DeadLetterPageBytes = 4 << 20  // raw bytes of a whole page
)

// DeadLetterPage is the newest dead letters within a byte budget.
type DeadLetterPage struct {
	DeadLetters []StoredDeadLetter `json:"dead_letters"`
	// Truncated says that raws were cut or letters left out to stay within the budget;
	// Omitted counts the letters left out (older than the last one listed).
	Truncated bool `json:"truncated"`
	Omitted   int  `json:"omitted"`
}

// DeadLetters returns the newest dead letters first, at most limit, within the default
// budgets (DeadLetterRawBytes each, DeadLetterPageBytes in all).
func (db *DB) DeadLetters(ctx context.Context, limit int) ([]StoredDeadLetter, error) {
	page, err := db.DeadLetterPage(ctx, limit, DeadLetterRawBytes, DeadLetterPageBytes)
	return page.DeadLetters, err
}

// DeadLetterPage returns the newest dead letters first, at most limit: each raw cut at
// rawBytes, and no more letters once their raws add up to pageBytes (the first is always
// listed). Postgres sends only the bytes kept.
func (db *DB) DeadLetterPage(ctx context.Context, limit, rawBytes, pageBytes int) (DeadLetterPage, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT id, stream, stream_seq, subject, substring(raw FROM 1 FOR $2), octet_length(raw),
		       left(error, $2), received_at
		FROM dead_letters ORDER BY id DESC LIMIT $1`, limit, rawBytes)
	if err != nil {
		return DeadLetterPage{}, fmt.Errorf("read dead letters: %w", err)
	}
	page := DeadLetterPage{DeadLetters: []StoredDeadLetter{}}
	var (
		d     StoredDeadLetter
		seq   int64
		raw   []byte
		total int
	)
	_, err = pgx.ForEachRow(rows, []any{&d.ID, &d.Stream, &seq, &d.Subject, &raw, &d.RawBytes, &d.Error, &d.ReceivedAt}, func() error {
		if len(page.DeadLetters) > 0 && total+len(raw) > pageBytes {
			page.Truncated = true
			page.Omitted++
			return nil
		}
		total += len(raw)
		d.StreamSeq, d.Raw, d.ReceivedAt = uint64(seq), strings.ToValidUTF8(string(raw), "\uFFFD"), d.ReceivedAt.UTC()
		d.RawTruncated = d.RawBytes > int64(len(raw))
		page.Truncated = page.Truncated || d.RawTruncated
		page.DeadLetters = append(page.DeadLetters, d)
		return nil
	})
	if err != nil {
		return DeadLetterPage{}, fmt.Errorf("read dead letters: %w", err)
	}
	return page, nil
}

// Stored counts the events stored (from the running totals kept per batch) and the dead
// letters: what a caller waiting for a stream to be stored polls, without counting pods.
func (db *DB) Stored(ctx context.Context) (events, deadLetters int64, err error) {
	err = db.pool.QueryRow(ctx, `SELECT (SELECT COALESCE(sum(events), 0)::bigint FROM kind_counts), (SELECT count(*) FROM dead_letters)`).
		Scan(&events, &deadLetters)
	if err != nil {
		return 0, 0, fmt.Errorf("count stored events: %w", err)
	}
	return events, deadLetters, nil
}
