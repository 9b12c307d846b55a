package store_test

import (
	"context"
	"log/slog"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/testenv"
	"github.com/schedlens/schedlens/internal/tlstest"
)

// privatePostgres starts a Postgres of the test's own with ssl=on and a certificate of a test
// CA; it returns its URL and the CA's file.
func privatePostgres(t *testing.T) (string, string) {
	t.Helper()
	p := pgtest.NewPrivate(t)
	ca := tlstest.NewCA(t)
	cert, key := ca.Issue(t, p.Dir(), "server", "127.0.0.1", false)
	p.Own(cert, key)
	p.Set("ssl", "on")
	p.Set("ssl_cert_file", cert)
	p.Set("ssl_key_file", key)
	p.Start()
	return p.URL(), ca.CertFile
}

func withParams(t *testing.T, raw string, params map[string]string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// The store connects with sslmode=require (and, with the private server's CA, verify-full),
// and the connection is encrypted (pg_stat_ssl).
func TestOpenWithSSL(t *testing.T) {
	type server struct {
		url    string
		params map[string]string
	}
	var servers []server
	// The test server, when it has SSL on: sslmode=require.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		testenv.Unavailable(t, "postgres: %v", err)
	}
	var ssl string
	err = conn.QueryRow(ctx, "SHOW ssl").Scan(&ssl)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ssl == "on" {
		servers = append(servers, server{pgtest.AdminURL(), map[string]string{"sslmode": "require"}})
	}
	// Always a private server with a certificate of our own CA: require and verify-full.
	private, caFile := privatePostgres(t)
	servers = append(servers, server{private, map[string]string{"sslmode": "require"}},
		server{private, map[string]string{"sslmode": "verify-full", "sslrootcert": caFile}})
	for _, srv := range servers {
		params := srv.params
		u := withParams(t, srv.url, params)
		db, err := store.Open(context.Background(), u, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("%v: %v", params, err)
		}
		if err := db.Ping(context.Background()); err != nil {
			t.Errorf("%v: %v", params, err)
		}
		db.Close()
		conn, err := pgx.Connect(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		var ssl bool
		if err := conn.QueryRow(context.Background(), "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
			t.Errorf("%v: ssl %v (%v), want an encrypted connection", params, ssl, err)
		}
		conn.Close(context.Background())
	}
}
