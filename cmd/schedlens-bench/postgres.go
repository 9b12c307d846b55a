package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/events"
)

// pgServer is the Postgres server the bench creates its temporary databases on.
type pgServer struct {
	admin    *pgx.Conn
	adminURL *url.URL
	prefix   string // schedlens_bench_<random>; every database of this run starts with it
	dbs      []string
	logger   *slog.Logger
}

// connectPostgres connects to adminURL, failing with a clear message when nothing answers.
func connectPostgres(ctx context.Context, adminURL string, logger *slog.Logger) (*pgServer, error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("-admin-database-url must be a postgres:// URL, got %q", adminURL)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(cctx, adminURL)
	if err != nil {
		return nil, fmt.Errorf("postgres at %s unreachable: %w (start it, or point -admin-database-url at a server where this role may CREATE DATABASE)", u.Redacted(), err)
	}
	return &pgServer{admin: admin, adminURL: u, prefix: "schedlens_bench_" + randomHex(4), logger: logger}, nil
}

// createDB creates an empty database named after the run and role, and returns its URL.
func (pg *pgServer) createDB(ctx context.Context, role string) (string, error) {
	name := pg.prefix + "_" + role
	if _, err := pg.admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	pg.dbs = append(pg.dbs, name)
	u := *pg.adminURL
	u.Path = "/" + name
	return u.String(), nil
}

// checkpoint flushes dirty pages left by the previous phase so the next one does not pay for
// them. It is best effort: a role without pg_checkpoint just gets noisier figures.
func (pg *pgServer) checkpoint(ctx context.Context) {
	if _, err := pg.admin.Exec(ctx, "CHECKPOINT"); err != nil {
		pg.logger.Debug("checkpoint before timing failed; figures may be noisier", "error", err)
	}
}

// dropAll drops every database this run created, even after ctx was cancelled (Ctrl-C).
func (pg *pgServer) dropAll() {
	pg.admin.Close(context.Background())
	if len(pg.dbs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, pg.adminURL.String())
	if err != nil {
		pg.logger.Warn("cannot drop the bench databases", "databases", pg.dbs, "error", err)
		return
	}
	defer c.Close(ctx)
	for _, name := range pg.dbs {
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			pg.logger.Warn("cannot drop a bench database", "database", name, "error", err)
		}
	}
}

// eventColumns are the columns of store's events table that Ingest writes.
var eventColumns = []string{"id", "kind", "cluster", "source", "occurred_at", "observed_at", "pod_uid", "node", "envelope"}

// eventRows renders envs as the rows store.Ingest writes to the events table.
func eventRows(envs []*events.Envelope) [][]any {
	rows := make([][]any, len(envs))
	for i, env := range envs {
		rows[i] = []any{env.ID, string(env.Kind), env.Cluster, env.Source, env.OccurredAt, env.ObservedAt,
			nullString(env.PodUID()), nullString(env.Node), env.Raw}
	}
	return rows
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

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

// openTable creates a fresh database holding one events table made by ddl, and connects to it.
func openTable(ctx context.Context, pg *pgServer, role, ddl string) (*pgx.Conn, error) {
	dbURL, err := pg.createDB(ctx, role)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s database: %w", role, err)
	}
	if _, err := conn.Exec(ctx, ddl); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("create table: %w", err)
	}
	return conn, nil
}

// measureCopyFrom times CopyFrom of rows into a bare table, chunk rows per transaction: the
// fastest way Postgres takes these rows, the ceiling for the correlator.
func measureCopyFrom(ctx context.Context, pg *pgServer, rows [][]any, chunk int) (figure, error) {
	conn, err := openTable(ctx, pg, "copy", bareEventsDDL)
	if err != nil {
		return figure{}, err
	}
	defer conn.Close(context.Background())
	pg.checkpoint(ctx)

	start := time.Now()
	for lo := 0; lo < len(rows); lo += chunk {
		part := rows[lo:min(lo+chunk, len(rows))]
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, eventColumns, pgx.CopyFromRows(part))
			return err
		})
		if err != nil {
			return figure{}, fmt.Errorf("copy rows %d-%d: %w", lo, lo+len(part)-1, err)
		}
	}
	return newFigure(len(rows), time.Since(start)), nil
}

// measureNaive times one autocommitted INSERT per row (one round trip each; the statement is
// prepared once) into a table with the events primary key: what storing without batching costs.
func measureNaive(ctx context.Context, pg *pgServer, rows [][]any) (figure, error) {
	conn, err := openTable(ctx, pg, "naive", keyedEventsDDL)
	if err != nil {
		return figure{}, err
	}
	defer conn.Close(context.Background())
	pg.checkpoint(ctx)

	const insert = `INSERT INTO events (id, kind, cluster, source, occurred_at, observed_at, pod_uid, node, envelope)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`
	start := time.Now()
	for i, row := range rows {
		if _, err := conn.Exec(ctx, insert, row...); err != nil {
			return figure{}, fmt.Errorf("insert row %d: %w", i, err)
		}
	}
	return newFigure(len(rows), time.Since(start)), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
