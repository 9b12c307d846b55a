package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/record"
)

// `api compare NAME` takes its flags before the command, before NAME or after it: the
// environment names an unreachable database, so only an honoured -database-url reaches the
// empty test database and its answer that there is no such experiment.
func TestCompareFlagsInAnyOrder(t *testing.T) {
	url := pgtest.URL(t)
	env := pgtest.UnreachableEnv("root")
	for _, args := range [][]string{
		{"compare", "day99", "-database-url", url, "-baseline", "control"},
		{"compare", "-database-url", url, "-baseline", "control", "day99"},
		{"compare", "-baseline", "control", "day99", "-database-url", url},
		{"-database-url", url, "compare", "day99", "-namespace", "ai-lab"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"api"}, args...), env, &stdout, &stderr)
		if err == nil || err.Error() != `compare: no experiment "day99"` {
			t.Errorf("api %q: %v; want the database reached and no experiment day99\n%s", args, err, stderr.String())
		}
	}
	for _, args := range [][]string{
		{"compare"},
		{"compare", "-baseline", "control"},
		{"compare", "a", "-baseline", "control", "b"},
		{"frobnicate"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"api"}, args...), env, &bytes.Buffer{}, &stderr)
		if err == nil || !strings.Contains(stderr.String(), "usage:") {
			t.Errorf("api %q: %v; want a usage error", args, err)
		}
	}
}

// Without authentication the api refuses a non-loopback address, saying how to proceed; with
// -insecure-no-auth it goes on (here to an unreachable database).
func TestNonLoopbackWithoutAuthRefusesToStart(t *testing.T) {
	env := pgtest.UnreachableEnv("root")
	for _, addr := range []string{":0", "0.0.0.0:0"} {
		err := run(context.Background(), []string{"api", "-http-addr", addr}, env, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "not a loopback address") || !strings.Contains(err.Error(), "-insecure-no-auth") {
			t.Errorf("-http-addr %s without auth: %v, want a refusal naming -insecure-no-auth", addr, err)
		}
	}
	// With -insecure-no-auth it serves (until the context ends: the pool connects lazily).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	err := run(ctx, []string{"api", "-http-addr", "127.0.0.1:0", "-insecure-no-auth"}, env, &bytes.Buffer{}, &stderr)
	if err != nil {
		t.Errorf("with -insecure-no-auth on loopback: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stderr.Reset()
	if err := run(ctx, []string{"api", "-http-addr", ":0", "-insecure-no-auth"}, env, &bytes.Buffer{}, &stderr); err != nil {
		t.Errorf("with -insecure-no-auth on every interface: %v", err)
	}
	if !strings.Contains(stderr.String(), "serving without authentication") {
		t.Errorf("no warning logged for -insecure-no-auth:\n%s", stderr.String())
	}
	err = run(context.Background(), []string{"api", "-auth", "token"}, env, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-auth-token-file") {
		t.Errorf("-auth token without a file: %v", err)
	}
}

// The database password is never printed: not by -h, not with the usage after a bad flag, not
// in the error of a failed connection.
func TestSecretsAreNotPrinted(t *testing.T) {
	const password = "s3cret-pw-do-not-print"
	env := pgtest.UnreachableEnv("schedlens:" + password)
	for _, args := range [][]string{{"-h"}, {"-no-such-flag"}, {"-gpu-idle-threshold", "200"}, {"compare", "day1"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"api"}, args...), env, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if err != nil {
			out += err.Error()
		}
		if strings.Contains(out, password) {
			t.Errorf("api %q printed the password:\n%s", args, out)
		}
	}
}

// `api record NAME` writes NAME.record.json (or -o FILE, - for stdout) from the database, says
// where with its digest; an experiment without pods is an error; no NAME is a usage error.
func TestRecordCommand(t *testing.T) {
	url := pgtest.URL(t)
	if _, err := pgtest.Open(t, url).Append(context.Background(), eventgen.Generate(eventgen.Default()), nil); err != nil {
		t.Fatal(err)
	}
	env := pgtest.UnreachableEnv("root")
	tmp := t.TempDir()
	t.Chdir(tmp)
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"api", "record", "day20", "-database-url", url}, env, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(tmp, "day20.record.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r record.Record
	if err := json.Unmarshal(b, &r); err != nil || record.Verify(r) != nil {
		t.Fatalf("written record: %v %v", err, record.Verify(r))
	}
	if want := "record of day20 written to day20.record.json (" + strconv.Itoa(len(b)) + " bytes, " + r.Digest + ")\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	stdout.Reset()
	if err := run(context.Background(), []string{"api", "-database-url", url, "-o", "-", "record", "day20"}, env, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stdout.Bytes(), b) {
		t.Error("-o - wrote other bytes than the file")
	}
	if err := run(context.Background(), []string{"api", "record", "day99", "-database-url", url}, env, &bytes.Buffer{}, &bytes.Buffer{}); err == nil ||
		err.Error() != `record: no pods of experiment "day99"` {
		t.Errorf("unknown experiment: %v", err)
	}
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"api", "record"}, env, &bytes.Buffer{}, &stderr); err == nil || !strings.Contains(stderr.String(), "usage:") {
		t.Errorf("record without NAME: %v", err)
	}
}
