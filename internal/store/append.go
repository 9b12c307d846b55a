package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/schedlens/schedlens/internal/events"
)

// DeadLetter is a message that could not be decoded or validated, kept with the reason.
type DeadLetter struct {
	Stream  string
	Seq     uint64
	Subject string
	Raw     []byte
	Error   string
}

// AppendResult says what one Append call did.
type AppendResult struct {
	Inserted    int                 // events new to the store
	Duplicates  int                 // events already stored (or repeated within the batch)
	DeadLetters int                 // dead letters newly stored
	Expired     int                 // events older than the retention horizon, refused (their day was dropped)
	ByKind      map[events.Kind]int // inserted events per kind
}

// Add sums two results.
func (r AppendResult) Add(o AppendResult) AppendResult {
	out := AppendResult{Inserted: r.Inserted + o.Inserted, Duplicates: r.Duplicates + o.Duplicates,
		DeadLetters: r.DeadLetters + o.DeadLetters, Expired: r.Expired + o.Expired, ByKind: map[events.Kind]int{}}
	for k, n := range r.ByKind {
		out.ByKind[k] += n
	}
	for k, n := range o.ByKind {
		out.ByKind[k] += n
	}
	return out
}

// IsDataError reports whether Postgres refused the data itself (a data exception, a constraint,
// a size limit): retrying the same rows cannot succeed, unlike a lost connection or a timeout.
func IsDataError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code[:2] {
	case "22", "23", "54":
		return true
	}
	return false
}

// stageDDL creates this connection's staging tables once; ON COMMIT DELETE ROWS empties them at
// the end of every batch transaction.
const stageDDL = `
CREATE TEMP TABLE IF NOT EXISTS stage_events (
    id text, kind text, cluster text, source text, occurred_at timestamptz, observed_at timestamptz,
    pod_uid text, node text, envelope jsonb, class text
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS stage_pods (LIKE pods) ON COMMIT DELETE ROWS;`

var eventColumns = []string{"id", "kind", "cluster", "source", "occurred_at", "observed_at", "pod_uid", "node", "envelope"}

// storedEventColumns are the columns the store copies: eventColumns and the class, which
// routes an event to its partitions (eventClass).
var storedEventColumns = append(slices.Clip(eventColumns), "class")

// eventRow is env as a row of eventColumns.
func eventRow(env *events.Envelope) []any {
	return []any{env.ID, string(env.Kind), env.Cluster, env.Source, env.OccurredAt, env.ObservedAt,
		nullString(env.PodUID()), nullString(env.Node), env.Raw}
}

// Append stores a batch in one transaction: new events are appended (copies of stored ids are
// ignored), the projections are updated from the newly inserted events only, and dead letters
// are kept. Events older than the retention horizon are refused (AppendResult.Expired): their
// day was dropped, so a copy of one stored then could not be told from a new event. When
// Append returns nil the batch is durable and may be acknowledged.
func (db *DB) Append(ctx context.Context, envs []*events.Envelope, dead []DeadLetter) (AppendResult, error) {
	res, err := db.append(ctx, envs, dead)
	if errNoPartition(err) {
		// A partition this process knew was dropped meanwhile by another's maintenance.
		db.parts.reset()
		res, err = db.append(ctx, envs, dead)
	}
	if err != nil {
		return AppendResult{}, fmt.Errorf("append batch: %w", err)
	}
	return res, nil
}

func (db *DB) append(ctx context.Context, envs []*events.Envelope, dead []DeadLetter) (AppendResult, error) {
	res := AppendResult{ByKind: map[events.Kind]int{}}
	h, err := db.ensurePartitions(ctx, partitionsOf(envs))
	if err != nil {
		return res, err
	}
	if len(h) > 0 {
		kept := envs[:0:0]
		for _, env := range envs {
			if h.expired(env) {
				res.Expired++
				continue
			}
			kept = append(kept, env)
		}
		envs = kept
	}
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, stageDDL); err != nil {
			return fmt.Errorf("create staging tables: %w", err)
		}
		inserted, err := insertEvents(ctx, tx, envs)
		if err != nil {
			return err
		}
		res.Inserted = len(inserted)
		res.Duplicates = len(envs) - len(inserted)
		for _, env := range inserted {
			res.ByKind[env.Kind]++
		}
		if err := db.applyFacts(ctx, tx, inserted); err != nil {
			return err
		}
		res.DeadLetters, err = insertDeadLetters(ctx, tx, dead)
		return err
	})
	return res, err
}

// insertEvents appends envs through the staging table and returns the ones that were new.
func insertEvents(ctx context.Context, tx pgx.Tx, envs []*events.Envelope) ([]*events.Envelope, error) {
	byID := make(map[string]*events.Envelope, len(envs))
	unique := make([]*events.Envelope, 0, len(envs))
	rows := make([][]any, 0, len(envs))
	for _, env := range envs {
		if _, dup := byID[env.ID]; dup {
			continue
		}
		byID[env.ID] = env
		unique = append(unique, env)
		rows = append(rows, append(eventRow(env), eventClass(env.Kind)))
	}
	if len(rows) == 0 {
		return nil, nil
	}
	// Fast path: a batch with no stored id (the steady state) is copied straight into events.
	// A copy already stored makes COPY fail on the primary key; the savepoint is rolled back
	// and the batch goes through the staging table, which skips copies.
	if copied, err := copyNew(ctx, tx, rows); err != nil || copied {
		return unique, err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"stage_events"}, storedEventColumns, pgx.CopyFromRows(rows)); err != nil {
		return nil, fmt.Errorf("copy events to staging: %w", err)
	}
	ids, err := tx.Query(ctx, `
		INSERT INTO events (id, kind, cluster, source, occurred_at, observed_at, pod_uid, node, envelope, class)
		SELECT id, kind, cluster, source, occurred_at, observed_at, pod_uid, node, envelope, class FROM stage_events
		ON CONFLICT (id, occurred_at, class) DO NOTHING
		RETURNING id`)
	if err != nil {
		return nil, fmt.Errorf("insert events: %w", err)
	}
	inserted := make([]*events.Envelope, 0, len(rows))
	var id string
	_, err = pgx.ForEachRow(ids, []any{&id}, func() error {
		inserted = append(inserted, byID[id])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert events: %w", err)
	}
	return inserted, nil
}

// copyNew copies rows straight into events inside a savepoint. It reports false, having
// inserted nothing, when some id was already stored.
func copyNew(ctx context.Context, tx pgx.Tx, rows [][]any) (bool, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("savepoint: %w", err)
	}
	if _, err := sp.CopyFrom(ctx, pgx.Identifier{"events"}, storedEventColumns, pgx.CopyFromRows(rows)); err != nil {
		if rerr := sp.Rollback(ctx); rerr != nil {
			return false, fmt.Errorf("roll back to savepoint: %w", rerr)
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return false, nil
		}
		return false, fmt.Errorf("copy events: %w", err)
	}
	if err := sp.Commit(ctx); err != nil {
		return false, fmt.Errorf("release savepoint: %w", err)
	}
	return true, nil
}

func insertDeadLetters(ctx context.Context, tx pgx.Tx, dead []DeadLetter) (int, error) {
	if len(dead) == 0 {
		return 0, nil
	}
	var (
		streams, subjects, reasons []string
		seqs                       []int64
		raws                       [][]byte
	)
	for _, d := range dead {
		streams = append(streams, d.Stream)
		seqs = append(seqs, int64(d.Seq))
		subjects = append(subjects, cleanText(d.Subject))
		raws = append(raws, d.Raw)
		reasons = append(reasons, cleanText(d.Error))
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO dead_letters (stream, stream_seq, subject, raw, error)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bytea[], $5::text[])
		ON CONFLICT (stream, stream_seq) DO NOTHING`, streams, seqs, subjects, raws, reasons)
	if err != nil {
		return 0, fmt.Errorf("insert dead letters: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// cleanText makes s storable as Postgres text, which refuses NUL and invalid UTF-8.
func cleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// nullString maps "" to SQL NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
