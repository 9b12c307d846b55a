package store_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/schedlens/schedlens/internal/store"
)

// A connection failure or a bad URL is reported without the URL's password (pgx redacts it;
// this keeps it so).
func TestOpenErrorsHideThePassword(t *testing.T) {
	for _, u := range []string{
		"postgres://schedlens:s3cr3t@127.0.0.1:1/schedlens?connect_timeout=2",
		"postgres://schedlens:s3cr3t@127.0.0.1:1/schedlens?sslmode=bogus",
		"postgres://schedlens:s3cr3t@[::1/schedlens",
	} {
		db, err := store.Open(context.Background(), u, slog.New(slog.DiscardHandler))
		if err == nil {
			err = db.Ping(context.Background())
			db.Close()
		}
		if err == nil || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: error %v, want one without the password", strings.Replace(u, "s3cr3t", "…", 1), err)
		}
	}
}
