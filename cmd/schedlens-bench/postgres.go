package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/store"
)

// pgServer is the Postgres server the bench creates its temporary databases on (through the
// store, the only package that speaks SQL).
type pgServer struct {
	adminURL string
	prefix   string // schedlens_bench_<random>; every database of this run starts with it
	dbs      []string
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

// createDB creates an empty database named after the run and role, and returns its URL.
func (pg *pgServer) createDB(ctx context.Context, role string) (string, error) {
	name := pg.prefix + "_" + role
	u, err := store.CreateDatabase(ctx, pg.adminURL, name, "")
	if err != nil {
		return "", err
	}
	pg.dbs = append(pg.dbs, name)
	return u, nil
}

// checkpoint flushes dirty pages left by the previous phase so the next one does not pay for
// them. It is best effort: a role without pg_checkpoint just gets noisier figures.
func (pg *pgServer) checkpoint(ctx context.Context) {
	if err := store.Checkpoint(ctx, pg.adminURL); err != nil {
		pg.logger.Debug("checkpoint before timing failed; figures may be noisier", "error", err)
	}
}

// dropAll drops every database this run created, even after ctx was cancelled (Ctrl-C).
func (pg *pgServer) dropAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range pg.dbs {
		if err := store.DropDatabase(ctx, pg.adminURL, name); err != nil {
			pg.logger.Warn("cannot drop a bench database", "database", name, "error", err)
		}
	}
}

// measureCopyFrom times the store's raw CopyFrom baseline: the ceiling for the correlator.
func measureCopyFrom(ctx context.Context, pg *pgServer, envs []*events.Envelope, chunk int) (figure, error) {
	dbURL, err := pg.createDB(ctx, "copy")
	if err != nil {
		return figure{}, err
	}
	pg.checkpoint(ctx)
	d, err := store.RawCopy(ctx, dbURL, envs, chunk)
	return newFigure(len(envs), d), err
}

// measureNaive times the store's one-INSERT-per-event baseline.
func measureNaive(ctx context.Context, pg *pgServer, envs []*events.Envelope) (figure, error) {
	dbURL, err := pg.createDB(ctx, "naive")
	if err != nil {
		return figure{}, err
	}
	pg.checkpoint(ctx)
	d, err := store.NaiveInsert(ctx, dbURL, envs)
	return newFigure(len(envs), d), err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
