package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/store"
)

// pgServer is the Postgres server the bench creates its temporary databases on (through the
// store, the only package that speaks SQL).
type pgServer struct {
	adminURL string
	prefix   string   // schedlens_bench_<random>; every database of this run starts with it
	dbs      []string // created and not dropped yet
	made     int
	logger   *slog.Logger
}

// connectPostgres checks adminURL answers, failing with a clear message when nothing does.
func connectPostgres(ctx context.Context, adminURL string, logger *slog.Logger) (*pgServer, error) {
	if _, err := store.DatabaseURL(adminURL, "postgres"); err != nil {
		return nil, fmt.Errorf("-admin-database-url: %w", err)
	}
	if err := store.CheckServer(ctx, adminURL); err != nil {
		return nil, fmt.Errorf("%w (start it, or point -admin-database-url at a server where this role may CREATE DATABASE)", err)
	}
	return &pgServer{adminURL: adminURL, prefix: "schedlens_bench_" + randomHex(4), logger: logger}, nil
}

// postgres builds the bench's logger and connects to the server of -admin-database-url: how
// every run that stores events starts. The caller drops what the run made with pg.dropAll.
func (o options) postgres(ctx context.Context, stderr io.Writer) (*pgServer, *slog.Logger, error) {
	logger, err := o.log.Logger(stderr, "bench")
	if err != nil {
		return nil, nil, err
	}
	pg, err := connectPostgres(ctx, o.adminURL, logger)
	if err != nil {
		return nil, nil, err
	}
	return pg, logger, nil
}

// createDB creates an empty database named after the run, a counter and role, and returns its
// URL and a function that drops it (a measurement's rows are not kept for the next one: at the
// largest sizes they take gigabytes).
func (pg *pgServer) createDB(ctx context.Context, role string) (string, func(), error) {
	pg.made++
	name := fmt.Sprintf("%s_%d_%s", pg.prefix, pg.made, role)
	u, err := store.CreateDatabase(ctx, pg.adminURL, name, "")
	if err != nil {
		return "", nil, err
	}
	pg.dbs = append(pg.dbs, name)
	return u, func() { pg.drop(name) }, nil
}

// drop drops one database of this run, even after ctx was cancelled (Ctrl-C).
func (pg *pgServer) drop(name string) {
	i := slices.Index(pg.dbs, name)
	if i < 0 {
		return
	}
	pg.dbs = slices.Delete(pg.dbs, i, i+1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := store.DropDatabase(ctx, pg.adminURL, name); err != nil {
		pg.logger.Warn("cannot drop a bench database", "database", name, "error", err)
	}
}

// checkpoint flushes dirty pages left by the previous phase so the next one does not pay for
// them. It is best effort: a role without pg_checkpoint just gets noisier figures.
func (pg *pgServer) checkpoint(ctx context.Context) {
	if err := store.Checkpoint(ctx, pg.adminURL); err != nil {
		pg.logger.Debug("checkpoint before timing failed; figures may be noisier", "error", err)
	}
}

// dropAll drops every database this run created and has not dropped yet.
func (pg *pgServer) dropAll() {
	for _, name := range slices.Clone(pg.dbs) {
		pg.drop(name)
	}
}

// measureCopyFrom times the store's raw CopyFrom baseline: the ceiling for the correlator.
func measureCopyFrom(ctx context.Context, pg *pgServer, envs []*events.Envelope, chunk int) (figure, error) {
	return pg.baseline(ctx, "copy", len(envs), func(dbURL string) (time.Duration, error) {
		return store.RawCopy(ctx, dbURL, envs, chunk)
	})
}

// measurePsqlCopy times issue 27's outside baseline, psql's \copy of the envelope lines into
// a bare (id text primary key, body jsonb) table.
func measurePsqlCopy(ctx context.Context, pg *pgServer, psql string, envs []*events.Envelope) (figure, error) {
	return pg.baseline(ctx, "psql", len(envs), func(dbURL string) (time.Duration, error) {
		return store.PsqlCopy(ctx, dbURL, psql, envs)
	})
}

// measureNaive times the store's one-INSERT-per-event baseline.
func measureNaive(ctx context.Context, pg *pgServer, envs []*events.Envelope) (figure, error) {
	return pg.baseline(ctx, "naive", len(envs), func(dbURL string) (time.Duration, error) {
		return store.NaiveInsert(ctx, dbURL, envs)
	})
}

// baseline times one baseline storing n events into a database of its own, after a checkpoint.
func (pg *pgServer) baseline(ctx context.Context, role string, n int, timed func(dbURL string) (time.Duration, error)) (figure, error) {
	dbURL, drop, err := pg.createDB(ctx, role)
	if err != nil {
		return figure{}, err
	}
	defer drop()
	pg.checkpoint(ctx)
	d, err := timed(dbURL)
	return newFigure(n, d), err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
