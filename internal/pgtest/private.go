package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/testenv"
)

// Private is a Postgres server of a test's own — initdb'd into a temporary directory, on a free
// loopback port — that the test may stop and start at will without disturbing any other test
// or the machine's server. It runs as the user postgres when the test runs as root (Postgres
// refuses to run as root).
type Private struct {
	t    testing.TB
	bin  string
	dir  string // data directory
	sock string // unix socket directory
	port int
	cred *syscall.Credential
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan error
	sets []string // -c name=value settings given with Set
}

// BinDir finds the directory holding initdb and postgres: `pg_config --bindir`, else the
// newest /usr/lib/postgresql/*/bin, else the directory of initdb on $PATH.
func BinDir() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				return false
			}
		}
		return true
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); has(dir) {
			return dir, nil
		}
	}
	if dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin"); len(dirs) > 0 {
		for i := len(dirs) - 1; i >= 0; i-- {
			if has(dirs[i]) {
				return dirs[i], nil
			}
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if dir := filepath.Dir(p); has(dir) {
			return dir, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, postgres): install the postgresql server package, or put its bin directory first on $PATH (pg_config --bindir)")
}

// StartPrivate initdb's a new cluster and starts it. The test fails — in CI and elsewhere — when
// the server binaries are missing: a fault test that cannot run must say so.
func StartPrivate(t testing.TB) *Private {
	t.Helper()
	p := NewPrivate(t)
	p.Start()
	return p
}

// NewPrivate initdb's a new cluster without starting it (Start does).
func NewPrivate(t testing.TB) *Private {
	t.Helper()
	bin, err := BinDir()
	if err != nil {
		t.Fatalf("private postgres: %v", err)
	}
	// Not t.TempDir: its parents are private to the test's user, and the server may run as
	// another (postgres).
	root, err := os.MkdirTemp("", "schedlens-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	p := &Private{t: t, bin: bin, dir: filepath.Join(root, "data"), sock: root, port: testenv.FreePort(t)}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("private postgres: running as root and there is no user postgres to run the server as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(root, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	init := exec.Command(filepath.Join(bin, "initdb"), "-D", p.dir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	init.Stdout, init.Stderr = &out, &out
	init.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	if err := init.Run(); err != nil {
		t.Fatalf("private postgres: initdb: %v\n%s", err, out.String())
	}
	t.Cleanup(func() {
		if p.cmd != nil {
			p.Stop()
		}
	})
	return p
}

// URL is the superuser's URL of the cluster's postgres database.
func (p *Private) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", p.port)
}

// Set adds a server setting (postgres -c name=value) for the next Start.
func (p *Private) Set(name, value string) { p.sets = append(p.sets, "-c", name+"="+value) }

// Dir is a directory the server can read, for files a test hands it (certificates).
func (p *Private) Dir() string { return p.sock }

// Own gives files the test wrote to the server's user (Postgres refuses a key file it does
// not own).
func (p *Private) Own(paths ...string) {
	p.t.Helper()
	if p.cred == nil {
		return
	}
	for _, path := range paths {
		if err := os.Chown(path, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			p.t.Fatal(err)
		}
	}
}

// Start starts the server on its port and waits until it accepts connections.
func (p *Private) Start() {
	p.t.Helper()
	if p.cmd != nil {
		p.t.Fatal("private postgres: already running")
	}
	p.log = &bytes.Buffer{}
	cmd := exec.Command(filepath.Join(p.bin, "postgres"), "-D", p.dir, "-p", strconv.Itoa(p.port), "-k", p.sock,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=40", "-c", "shared_buffers=32MB")
	cmd.Args = append(cmd.Args, p.sets...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("private postgres: start: %v", err)
	}
	p.cmd, p.done = cmd, make(chan error, 1)
	go func() { p.done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := CheckURL(p.URL()); err == nil {
			return
		}
		select {
		case err := <-p.done:
			p.cmd = nil
			p.t.Fatalf("private postgres exited on start: %v\n%s", err, p.log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("private postgres did not accept connections within 30s\n%s", p.log.String())
		}
	}
}

// Stop shuts the server down as an operator's `pg_ctl stop -m fast` does (SIGINT: open
// transactions are rolled back, connections closed) and waits until it has exited.
func (p *Private) Stop() {
	p.t.Helper()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Errorf("private postgres did not stop within 30s; killed\n%s", p.log.String())
	}
	p.cmd = nil
}

// CheckURL reports whether a server answers at url (a TCP connection to its host).
func CheckURL(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return store.CheckServer(ctx, url)
}

// Standby makes a hot standby of the running primary p — pg_basebackup of it with -R
// (standby.signal and primary_conninfo, streaming) into a data directory of its own — on a
// port of its own, not started (Start does).
func (p *Private) Standby() *Private {
	p.t.Helper()
	root, err := os.MkdirTemp("", "schedlens-pg-standby-")
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { os.RemoveAll(root) })
	s := &Private{t: p.t, bin: p.bin, dir: filepath.Join(root, "data"), sock: root, port: testenv.FreePort(p.t), cred: p.cred}
	if s.cred != nil {
		if err := os.Chown(root, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			p.t.Fatal(err)
		}
	}
	var out bytes.Buffer
	backup := exec.Command(filepath.Join(p.bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(p.port), "-U", "postgres",
		"-D", s.dir, "-R", "-X", "stream", "--no-sync", "-c", "fast")
	backup.Stdout, backup.Stderr = &out, &out
	backup.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if err := backup.Run(); err != nil {
		p.t.Fatalf("private postgres: pg_basebackup: %v\n%s", err, out.String())
	}
	p.t.Cleanup(func() {
		if s.cmd != nil {
			s.Stop()
		}
	})
	return s
}
