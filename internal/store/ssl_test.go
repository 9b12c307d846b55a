package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/clock"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/tlstest"
)

// sslServer returns the URL of a Postgres server with SSL on: the test server when it has SSL
// (SHOW ssl), else a private instance started from the local Postgres binaries with a
// generated certificate (and its CA's file, "" for the test server).
func sslServer(t *testing.T) (adminURL, caFile string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		pgtest.Unavailable(t, "postgres: %v", err)
	}
	var ssl string
	err = conn.QueryRow(ctx, "SHOW ssl").Scan(&ssl)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ssl == "on" && os.Getenv("SCHEDLENS_TEST_PRIVATE_POSTGRES") == "" {
		return pgtest.AdminURL(), ""
	}
	return privatePostgres(t)
}

// privatePostgres runs initdb and pg_ctl (ssl=on, loopback only) in a temporary directory
// until the test ends. As root it runs them as user postgres (initdb refuses root).
func privatePostgres(t *testing.T) (string, string) {
	t.Helper()
	bindir := ""
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		bindir = strings.TrimSpace(string(out))
	}
	if _, err := os.Stat(filepath.Join(bindir, "initdb")); err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
		if len(matches) == 0 {
			t.Fatalf("no Postgres binaries (pg_config --bindir, /usr/lib/postgresql/*/bin) for a private SSL server")
		}
		bindir = filepath.Dir(matches[len(matches)-1])
	}
	dir, err := os.MkdirTemp("", "schedlens-pg-ssl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ca := tlstest.NewCA(t)
	cert, key := ca.Issue(t, dir, "server", "127.0.0.1", false)
	cmd := func(name string, args ...string) *exec.Cmd {
		if os.Geteuid() == 0 {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(bindir, name)}, args...)...)
		}
		return exec.Command(filepath.Join(bindir, name), args...)
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "-R", "postgres", dir).CombinedOutput(); err != nil {
			t.Fatalf("chown %s to postgres: %v %s", dir, err, out)
		}
		_ = os.Chmod(dir, 0o700)
	}
	data := filepath.Join(dir, "data")
	if out, err := cmd("initdb", "-D", data, "-U", "root", "-A", "trust").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file=%s -c ssl_key_file=%s", port, dir, cert, key)
	if out, err := cmd("pg_ctl", "start", "-w", "-t", "60", "-D", data, "-l", filepath.Join(dir, "log"), "-o", opts).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	t.Cleanup(func() {
		if out, err := cmd("pg_ctl", "stop", "-w", "-m", "fast", "-D", data).CombinedOutput(); err != nil {
			t.Errorf("pg_ctl stop: %v\n%s", err, out)
		}
	})
	u := fmt.Sprintf("postgres://root@127.0.0.1:%d/postgres?sslmode=disable", port)
	if !clock.Until(30*time.Second, 100*time.Millisecond, func() bool {
		c, err := pgx.Connect(context.Background(), u)
		if err == nil {
			c.Close(context.Background())
		}
		return err == nil
	}) {
		t.Fatal("the private Postgres did not accept connections within 30s")
	}
	return u, ca.CertFile
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
	admin, caFile := sslServer(t)
	modes := []map[string]string{{"sslmode": "require"}}
	if caFile != "" {
		modes = append(modes, map[string]string{"sslmode": "verify-full", "sslrootcert": caFile})
	}
	for _, params := range modes {
		u := withParams(t, admin, params)
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
