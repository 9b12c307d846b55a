// Package pgtest gives each test its own Postgres database, created from a template migrated
// once per schema version, and drops it when the test ends. Tests run against the real server.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/testenv"
)

// AdminURL is the server tests create their databases on: $SCHEDLENS_TEST_DATABASE_URL, else the
// machine's local Postgres.
func AdminURL() string {
	if u := os.Getenv("SCHEDLENS_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://root@127.0.0.1:5432/test?sslmode=disable"
}

// UnreachableURL is a Postgres URL, as userinfo (user or user:password), that nothing answers
// (port 1 of loopback; connect_timeout 2 s): what a test puts in the environment to show that
// only an honoured flag reaches a database.
func UnreachableURL(userinfo string) string {
	return "postgres://" + userinfo + "@127.0.0.1:1/nothing?sslmode=disable&connect_timeout=2"
}

// UnreachableEnv is a getenv whose SCHEDLENS_DATABASE_URL is UnreachableURL(userinfo) and that
// sets nothing else.
func UnreachableEnv(userinfo string) func(string) string {
	return func(k string) string {
		if k == "SCHEDLENS_DATABASE_URL" {
			return UnreachableURL(userinfo)
		}
		return ""
	}
}

// URL returns the URL of a new, migrated, empty database for this test.
func URL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, true)
}

// EmptyURL returns the URL of a new database without the schema, for what creates its own
// tables (the store's baselines).
func EmptyURL(t testing.TB) string {
	t.Helper()
	return newDatabase(t, false)
}

// Open opens the store at url for this test, logging nowhere, and closes it when the test ends.
func Open(t testing.TB, url string, opts ...store.Option) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), url, slog.New(slog.DiscardHandler), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// DB opens the store over a new, migrated, empty database of this test's own (URL, Open).
func DB(t testing.TB, opts ...store.Option) *store.DB {
	t.Helper()
	return Open(t, URL(t), opts...)
}

// newDatabase creates a database dropped when the test ends: from the migrated template when
// migrated, else empty.
func newDatabase(t testing.TB, migrated bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := store.CheckServer(ctx, AdminURL()); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	var tmpl string
	if migrated {
		var err error
		if tmpl, err = store.TemplateDatabase(ctx, AdminURL()); err != nil {
			t.Fatalf("prepare the template database: %v", err)
		}
	}
	name := "schedlens_test_" + randomHex(6)
	dbURL, err := store.CreateDatabase(ctx, AdminURL(), name, tmpl)
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := store.DropDatabase(ctx, AdminURL(), name); err != nil {
			t.Errorf("%v", err)
		}
	})
	return dbURL
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
