package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/schedlens/schedlens/migrations"
)

// DatabaseURL returns base (a postgres:// URL) naming database name instead of its own.
func DatabaseURL(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("want a postgres:// URL, got %q", redactURL(base))
	}
	u.Path = "/" + name
	return u.String(), nil
}

// CreateDatabase creates database name on the server of adminURL, a copy of template when
// that is not empty, and returns its URL.
func CreateDatabase(ctx context.Context, adminURL, name, template string) (string, error) {
	dbURL, err := DatabaseURL(adminURL, name)
	if err != nil {
		return "", err
	}
	ddl := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		ddl += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if err := adminExec(ctx, adminURL, ddl); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return dbURL, nil
}

// DropDatabase drops database name on the server of adminURL, disconnecting its sessions.
func DropDatabase(ctx context.Context, adminURL, name string) error {
	if err := adminExec(ctx, adminURL, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// EnsureDatabase creates the database dbURL names when it does not exist yet (connecting to the
// server's postgres database to do so).
func EnsureDatabase(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err == nil {
		return conn.Close(ctx)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
		return fmt.Errorf("connect to %s: %w", redactURL(dbURL), err)
	}
	u, perr := url.Parse(dbURL)
	if perr != nil {
		return fmt.Errorf("database url: %w", perr)
	}
	admin, err := DatabaseURL(dbURL, "postgres")
	if err != nil {
		return err
	}
	_, err = CreateDatabase(ctx, admin, strings.TrimPrefix(u.Path, "/"), "")
	return err
}

// CheckServer reports whether the server of adminURL answers.
func CheckServer(ctx context.Context, adminURL string) error {
	return adminExec(ctx, adminURL, "SELECT 1")
}

// Checkpoint flushes the server's dirty pages (so a measurement does not pay for the previous
// one's); best effort for a role without pg_checkpoint.
func Checkpoint(ctx context.Context, adminURL string) error {
	return adminExec(ctx, adminURL, "CHECKPOINT")
}

// TemplateDatabase returns the name of a database migrated to the current migrations, made once
// per migrations content on the server of adminURL (concurrent processes wait on an advisory
// lock), for CreateDatabase to copy: tests and benchmarks get a fresh schema in milliseconds.
func TemplateDatabase(ctx context.Context, adminURL string) (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "schedlens_tmpl_" + sum[:12]
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", err
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, `SELECT pg_advisory_lock(7405321)`); err != nil {
		return "", err
	}
	defer admin.Exec(context.Background(), `SELECT pg_advisory_unlock(7405321)`)
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_wip"
	if err := DropDatabase(ctx, adminURL, building); err != nil {
		return "", err
	}
	buildURL, err := CreateDatabase(ctx, adminURL, building, "")
	if err != nil {
		return "", err
	}
	db, err := Open(ctx, buildURL, slog.New(slog.DiscardHandler))
	if err != nil {
		return "", err
	}
	err = db.Migrate(ctx)
	db.Close()
	if err != nil {
		return "", err
	}
	// Renamed only once complete, so a crash mid-migration never leaves a broken template.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return name, nil
}

func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%s\x00", path, b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

func adminExec(ctx context.Context, adminURL, sql string) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, adminURL)
	if err != nil {
		return fmt.Errorf("postgres at %s unreachable: %w", redactURL(adminURL), err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(cctx, sql)
	return err
}

// redactURL hides a URL's password.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// ReadOnlyGrants are the statements, run in the schedlens database by its owner (the role that
// migrates), that let role run everything the api reads — every GET, POST /v1/requests/lookup —
// and nothing else: it cannot append events (PUT /v1/experiments/{name} then fails), change a
// projection, or migrate. docs/security.md shows them.
func ReadOnlyGrants(database, role string) []string {
	d, r := pgx.Identifier{database}.Sanitize(), pgx.Identifier{role}.Sanitize()
	return []string{
		"GRANT CONNECT ON DATABASE " + d + " TO " + r,
		"GRANT USAGE ON SCHEMA public TO " + r,
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + r,
		// Tables and views a later migration creates (store.Migrate re-creates the views).
		"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO " + r,
	}
}

// GrantReadOnly runs ReadOnlyGrants on the database of dbURL (connecting as its owner or a
// superuser) for role, which must exist.
func GrantReadOnly(ctx context.Context, dbURL, role string) error {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return fmt.Errorf("parse database URL: %w", err)
	}
	for _, sql := range ReadOnlyGrants(cfg.Database, role) {
		if err := adminExec(ctx, dbURL, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
	}
	return nil
}

// CreateLoginRole creates a role that may log in with password (and nothing more until granted),
// on the server of adminURL.
func CreateLoginRole(ctx context.Context, adminURL, role, password string) error {
	sql := "CREATE ROLE " + pgx.Identifier{role}.Sanitize() + " LOGIN PASSWORD " + quoteLiteral(password)
	if err := adminExec(ctx, adminURL, sql); err != nil {
		return fmt.Errorf("create role %s: %w", role, err)
	}
	return nil
}

// DropRole revokes what role holds in the database of dbURL and drops it (roles belong to the
// server; a role granted in other databases must be revoked there first).
func DropRole(ctx context.Context, dbURL, role string) error {
	r := pgx.Identifier{role}.Sanitize()
	for _, sql := range []string{"DROP OWNED BY " + r, "DROP ROLE " + r} {
		if err := adminExec(ctx, dbURL, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
	}
	return nil
}

// quoteLiteral quotes s as a SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
