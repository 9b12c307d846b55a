// Package apitest serves the real api to tests: its own, and those of what reads it (the UI,
// preflight's model-load times), which otherwise each built the same router and test server.
package apitest

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/store"
)

// Handler is the api over db (nil serves the routes that answer before asking it), with its
// metrics on a registry of its own and its logs discarded.
func Handler(t testing.TB, db *store.DB, opts ...api.Option) http.Handler {
	t.Helper()
	reg := prometheus.NewRegistry()
	h, err := api.New(db, slog.New(slog.DiscardHandler), reg, reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Serve serves Handler on a test server closed after the test.
func Serve(t testing.TB, db *store.DB, opts ...api.Option) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Handler(t, db, opts...))
	t.Cleanup(srv.Close)
	return srv
}

// GetJSON decodes the answer to a GET of url into v; any status but 200 OK fails the test.
func GetJSON(t testing.TB, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// Get is the body of the answer to a GET of url; any status but 200 OK fails the test, naming
// the body.
func Get(t testing.TB, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}
