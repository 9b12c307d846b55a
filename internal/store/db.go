// Package store is the only package that speaks SQL: events in, projections and timelines out,
// on Postgres through pgx. Store methods own their transactions.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/migrations"
)

// ErrNotFound is returned when the requested row does not exist: report.ErrNotFound, which the
// readers of reports test for without importing the store.
var ErrNotFound = report.ErrNotFound

// DB is a handle on the schedlens database.
type DB struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	keys   events.LabelKeys
	idle   float64 // GPU utilisation (%) under which allocated GPU time counts as idle

	statementTimeout time.Duration
	customPlans      bool // WithCustomPlans

	parts partitionCache // the day partitions known to exist, and the horizon (partition.go)

	runs          runCache                                   // what ComparisonInput read of each run, by fingerprint (comparison.go)
	interruptions capped[interruptionKey, interruptionEntry] // RunInterruptions by fingerprint (comparison.go)
	comparisons   capped[string, compare.Comparison]         // Comparison by everything it read (comparison.go)
	direct        bool                                       // WithoutReadCache
	stats         storedStats                                // where comparisons and run slices came from (stored.go)
	warmSeen      map[string]string                          // each experiment's runs' fingerprints at the last WarmComparisons (one caller at a time)
}

// Option configures a DB.
type Option func(*DB)

// WithLabelKeys sets the pod label keys that attribute pods to experiments.
func WithLabelKeys(k events.LabelKeys) Option { return func(db *DB) { db.keys = k } }

// WithIdleThreshold sets the GPU utilisation (percent) under which a pod's allocated GPU time
// counts as idle in the summaries it reads (align.IdleUtilThreshold by default). It applies at
// read time: no rebuild is needed to change it.
func WithIdleThreshold(pct float64) Option { return func(db *DB) { db.idle = pct } }

// WithStatementTimeout bounds every statement on the DB's connections: Postgres cancels one
// running longer (SQLSTATE 57014, IsTimeout). It is set as the statement_timeout run-time
// parameter of each connection, so it holds for every query without a round trip per
// request; the api opens its read pool with it, the correlator (whose migrations and rebuilds
// may run long) without. Zero leaves the server's setting.
func WithStatementTimeout(d time.Duration) Option { return func(db *DB) { db.statementTimeout = d } }

// WithoutReadCache makes ComparisonInput read every pod, snapshot and request of the experiment
// each time, the comparison compute every run's bootstrap afresh and RunInterruptions compute
// every time, as before the per-run caches (comparison.go, compare's memo): the same results,
// slower. The read bench's baseline.
func WithoutReadCache() Option { return func(db *DB) { db.direct = true } }

// WithCustomPlans makes Postgres plan every statement for its parameters
// (plan_cache_mode=force_custom_plan, unless the database URL sets plan_cache_mode), for a
// process that serves reads. pgx prepares each statement once per connection, and after five
// executions Postgres may keep a generic plan for the connection's life: one chosen while the
// tables were young and empty scans them whole once they are not (a pod's timeline read the
// run's requests by a sequential scan of every partition of events, 1–2 s, while it was a few
// ms by the index). A read's planning costs tenths of a millisecond; the correlator, whose
// statements are the same few on every batch, keeps Postgres' default.
func WithCustomPlans() Option { return func(db *DB) { db.customPlans = true } }

// IsTimeout reports whether err is a statement cancelled by WithStatementTimeout.
func IsTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014"
}

// IsPermissionDenied reports whether Postgres refused a write: for want of a privilege (SQLSTATE
// 42501, a read-only role: ReadOnlyGrants), or because the database is a hot standby (25006).
func IsPermissionDenied(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "42501" || pgErr.Code == "25006")
}

// Open connects to Postgres at url. It does not migrate: call Migrate.
func Open(ctx context.Context, url string, logger *slog.Logger, opts ...Option) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	db := &DB{logger: logger, keys: events.DefaultLabelKeys, idle: align.IdleUtilThreshold,
		interruptions: capped[interruptionKey, interruptionEntry]{max: runSliceMax},
		comparisons:   capped[string, compare.Comparison]{max: comparisonsMax}}
	for _, o := range opts {
		o(db)
	}
	if db.statementTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(max(db.statementTimeout.Milliseconds(), 1), 10)
	}
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; db.customPlans && !set {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	db.pool = pool
	return db, nil
}

// Close releases every connection.
func (db *DB) Close() { db.pool.Close() }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

func (db *DB) migrator(opts ...goose.ProviderOption) (*goose.Provider, *sql.DB, error) {
	sqlDB := stdlib.OpenDBFromPool(db.pool)
	fsys, err := fs.Sub(migrations.FS, ".")
	if err != nil {
		return nil, nil, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, fsys, opts...)
	if err != nil {
		sqlDB.Close()
		return nil, nil, fmt.Errorf("load migrations: %w", err)
	}
	return p, sqlDB, nil
}

// Migrate applies every pending migration. Concurrent callers are serialised by goose's lock.
func (db *DB) Migrate(ctx context.Context) error {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	p, sqlDB, err := db.migrator(goose.WithSessionLocker(locker))
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	results, err := p.Up(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, r := range results {
		db.logger.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "took", r.Duration)
	}
	db.parts.reset() // the migrations may have made or dropped partitions
	if err := db.createViews(ctx); err != nil {
		return err
	}
	if err := db.syncRules(ctx); err != nil {
		return err
	}
	if n, err := db.backfillWorkloads(ctx); err != nil {
		return err
	} else if n > 0 {
		db.logger.Info("pods given their workload", "pods", n)
	}
	return nil
}

// createViews re-creates the views (migrations.Views) in one transaction, serialised with any
// other process migrating the same database.
func (db *DB) createViews(ctx context.Context) error {
	views, err := migrations.Views()
	if err != nil {
		return fmt.Errorf("read the views: %w", err)
	}
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('schedlens views'))`); err != nil {
			return err
		}
		for _, v := range views {
			if _, err := tx.Exec(ctx, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create the views: %w", err)
	}
	return nil
}

// syncRules writes the timeline rules the SQL reads from Go (align is the reference): the end
// causes by rank.
func (db *DB) syncRules(ctx context.Context) error {
	var ranks []int32
	var reasons []string
	for rank, reason := range align.EndReasons {
		if rank > 0 {
			ranks, reasons = append(ranks, int32(rank)), append(reasons, reason)
		}
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM end_reasons WHERE NOT (rank = ANY($1))`, ranks); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO end_reasons (rank, reason) SELECT * FROM unnest($1::int[], $2::text[])
			ON CONFLICT (rank) DO UPDATE SET reason = excluded.reason`, ranks, reasons)
		return err
	})
	if err != nil {
		return fmt.Errorf("write the end causes: %w", err)
	}
	return nil
}

// SchemaCurrent reports whether every embedded migration has been applied.
func (db *DB) SchemaCurrent(ctx context.Context) (bool, error) {
	p, sqlDB, err := db.migrator()
	if err != nil {
		return false, err
	}
	defer sqlDB.Close()
	pending, err := p.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("check migrations: %w", err)
	}
	return !pending, nil
}

// Replica says whether the database is a hot standby and, if so, how far its replay is behind
// what it has received from its primary: zero when it has replayed everything received, else
// the time since the last transaction it replayed committed on the primary.
func (db *DB) Replica(ctx context.Context) (standby bool, lag time.Duration, err error) {
	var seconds float64
	err = db.pool.QueryRow(ctx, `SELECT pg_is_in_recovery(),
		CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
		     ELSE COALESCE(EXTRACT(epoch FROM now() - pg_last_xact_replay_timestamp()), 0) END::float8`).Scan(&standby, &seconds)
	if err != nil {
		return false, 0, fmt.Errorf("read replication state: %w", err)
	}
	return standby, time.Duration(seconds * float64(time.Second)), nil
}
