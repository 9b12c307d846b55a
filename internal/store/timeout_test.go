package store

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/testenv"
)

// serverURL is the test server's admin database, as pgtest finds it (pgtest imports this
// package, so this internal test cannot import it): no schema is needed here.
func serverURL(t *testing.T) string {
	u := os.Getenv("SCHEDLENS_TEST_DATABASE_URL")
	if u == "" {
		u = "postgres://root@127.0.0.1:5432/test?sslmode=disable"
	}
	db, err := Open(context.Background(), u, slog.New(slog.DiscardHandler))
	if err == nil {
		err = db.Ping(context.Background())
		db.Close()
	}
	if err != nil {
		testenv.Unavailable(t, "postgres at %s unreachable: %v", u, err)
	}
	return u
}

// WithStatementTimeout sets statement_timeout on every connection of the pool: a statement
// running longer is cancelled by the server (IsTimeout), a DB opened without it keeps the
// server's setting.
func TestStatementTimeout(t *testing.T) {
	url := serverURL(t)
	ctx := context.Background()
	db, err := Open(ctx, url, slog.New(slog.DiscardHandler), WithStatementTimeout(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var setting string
	if err := db.pool.QueryRow(ctx, `SHOW statement_timeout`).Scan(&setting); err != nil || setting != "150ms" {
		t.Errorf("statement_timeout = %q, %v; want 150ms", setting, err)
	}
	_, err = db.pool.Exec(ctx, `SELECT pg_sleep(5)`)
	if !IsTimeout(err) {
		t.Errorf("a 5 s statement under a 150 ms timeout: %v, want a statement timeout", err)
	}
	if IsTimeout(context.Canceled) || IsTimeout(nil) {
		t.Error("IsTimeout of a non-database error")
	}

	plain, err := Open(ctx, url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.pool.QueryRow(ctx, `SHOW statement_timeout`).Scan(&setting); err != nil || setting != "0" {
		t.Errorf("without the option statement_timeout = %q, %v; want the server's 0", setting, err)
	}
}
