package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/events"
)

// The baselines the bench measures the pipeline against, on the very rows Append writes to
// the events table: the fastest way Postgres takes them, and the naive way.

// bareEventsDDL has the events table's columns without its primary key, index or constraints.
const bareEventsDDL = `
CREATE TABLE events (
    id text, kind text, cluster text, source text, occurred_at timestamptz, observed_at timestamptz,
    pod_uid text, node text, envelope jsonb, ingested_at timestamptz DEFAULT now()
)`

// keyedEventsDDL is the events table with its primary key (and nothing else).
const keyedEventsDDL = `
CREATE TABLE events (
    id          text        PRIMARY KEY,
    kind        text        NOT NULL,
    cluster     text        NOT NULL,
    source      text        NOT NULL,
    occurred_at timestamptz NOT NULL,
    observed_at timestamptz NOT NULL,
    pod_uid     text,
    node        text,
    envelope    jsonb       NOT NULL,
    ingested_at timestamptz NOT NULL DEFAULT now()
)`

// RawCopy times CopyFrom of envs' event rows into a bare table of the empty database dbURL,
// chunk rows per transaction: the ceiling for the correlator.
func RawCopy(ctx context.Context, dbURL string, envs []*events.Envelope, chunk int) (time.Duration, error) {
	conn, err := baselineTable(ctx, dbURL, bareEventsDDL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	rows := make([][]any, len(envs))
	for i, env := range envs {
		rows[i] = eventRow(env)
	}
	start := time.Now()
	for lo := 0; lo < len(rows); lo += chunk {
		part := rows[lo:min(lo+chunk, len(rows))]
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, eventColumns, pgx.CopyFromRows(part))
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("copy rows %d-%d: %w", lo, lo+len(part)-1, err)
		}
	}
	return time.Since(start), nil
}

// NaiveInsert times one autocommitted INSERT per event (one round trip each; the statement is
// prepared once) into a table with the events primary key in the empty database dbURL: what
// storing without batching costs.
func NaiveInsert(ctx context.Context, dbURL string, envs []*events.Envelope) (time.Duration, error) {
	conn, err := baselineTable(ctx, dbURL, keyedEventsDDL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	const insert = `INSERT INTO events (id, kind, cluster, source, occurred_at, observed_at, pod_uid, node, envelope)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`
	start := time.Now()
	for i, env := range envs {
		if _, err := conn.Exec(ctx, insert, eventRow(env)...); err != nil {
			return 0, fmt.Errorf("insert row %d: %w", i, err)
		}
	}
	return time.Since(start), nil
}

func baselineTable(ctx context.Context, dbURL, ddl string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", redactURL(dbURL), err)
	}
	if _, err := conn.Exec(ctx, ddl); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("create table: %w", err)
	}
	return conn, nil
}
