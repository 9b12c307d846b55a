// Package pgtest gives each test its own Postgres database, created from a template migrated
// once per schema version, and drops it when the test ends. Tests run against the real server.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/migrations"
)

// AdminURL is the server tests create their databases on: $SCHEDLENS_TEST_DATABASE_URL, else the
// machine's local Postgres.
func AdminURL() string {
	if u := os.Getenv("SCHEDLENS_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://root@127.0.0.1:5432/test?sslmode=disable"
}

// Unavailable ends a test that cannot reach a service it needs: a failure in CI (CI=true), a
// skip with the reason elsewhere. It never lets the test pass silently.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// URL returns the URL of a new, migrated, empty database for this test.
func URL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		Unavailable(t, "postgres at %s unreachable: %v", AdminURL(), err)
	}
	defer admin.Close(ctx)

	tmpl, err := ensureTemplate(ctx, admin)
	if err != nil {
		t.Fatalf("prepare template database: %v", err)
	}
	name := "schedlens_test_" + randomHex(6)
	if _, err := admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, tmpl)); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return withDatabase(AdminURL(), name)
}

// ensureTemplate creates and migrates the template for the current migrations once; concurrent
// test processes wait on an advisory lock.
func ensureTemplate(ctx context.Context, admin *pgx.Conn) (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "schedlens_tmpl_" + sum[:12]
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
	if _, err := admin.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, building)); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s`, building)); err != nil {
		return "", err
	}
	db, err := store.Open(ctx, withDatabase(AdminURL(), building), slog.New(slog.DiscardHandler))
	if err != nil {
		return "", err
	}
	err = db.Migrate(ctx)
	db.Close()
	if err != nil {
		return "", err
	}
	// Renamed only once complete, so a crash mid-migration never leaves a broken template.
	if _, err := admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, building, name)); err != nil {
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

func withDatabase(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		panic(fmt.Sprintf("pgtest: bad admin url %q: %v", base, err))
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
