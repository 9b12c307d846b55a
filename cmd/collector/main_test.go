package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schedlens/schedlens/internal/natstest"
)

// subjects counts the stream's messages per subject.
func subjects(t *testing.T, url string) map[string]uint64 {
	t.Helper()
	return natstest.StreamInfo(t, url, jetstream.WithSubjectFilter("schedlens.v1.>")).State.Subjects
}

// writeFile writes lines to a file in the test's temporary directory.
func writeFile(t *testing.T, name string, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Flags work before the command, between it and its arguments, and after them: -cluster
// reaches the envelopes in every order, for import and for replay.
func TestFlagsInAnyOrder(t *testing.T) {
	srv := natstest.Start(t)
	fixture, err := os.ReadFile("../../internal/ingest/testdata/vegeta.json")
	if err != nil {
		t.Fatal(err)
	}
	results := writeFile(t, "vegeta.json", strings.Split(string(fixture), "\n")[:3]) // the three good first lines
	sample, err := os.ReadFile("../../testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// Two envelopes that name no cluster (replay gives them -cluster), with ids of their own
	// per case so that JetStream does not drop them as copies of the previous case's.
	envelopes := func(c string) string {
		var anonymous []string
		for _, line := range strings.Split(string(sample), "\n")[:2] {
			line = strings.Replace(line, `"cluster":"lab",`, "", 1)
			anonymous = append(anonymous, strings.Replace(line, `","kind":`, "-"+c+`","kind":`, 1))
		}
		return writeFile(t, c+".jsonl", anonymous)
	}

	nats := []string{"-nats-url", srv.URL()}
	for _, tc := range []struct {
		cluster string
		args    []string
		want    uint64
		say     string
	}{
		{"i1", []string{"import", "-cluster", "i1", "-wait", "0", "vegeta", results}, 3, "published 3 request results"},
		{"i2", []string{"import", "vegeta", "-cluster", "i2", "-wait=0", results}, 3, "published 3 request results"},
		{"i3", []string{"import", "vegeta", results, "-cluster", "i3", "-wait", "0"}, 3, "published 3 request results"},
		{"i4", []string{"-cluster", "i4", "-wait", "0", "import", "vegeta", results}, 3, "published 3 request results"},
		{"r1", []string{"replay", "-cluster", "r1", envelopes("r1")}, 2, "published 2 envelopes"},
		{"r2", []string{"replay", envelopes("r2"), "-cluster", "r2"}, 2, "published 2 envelopes"},
		{"r3", []string{"-cluster", "r3", "replay", envelopes("r3")}, 2, "published 2 envelopes"},
	} {
		var stdout, stderr bytes.Buffer
		args := append(append([]string{"collector"}, tc.args...), nats...)
		if err := run(context.Background(), args, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Errorf("collector %q: %v\n%s", tc.args, err, stderr.String())
			continue
		}
		if !strings.Contains(stdout.String(), tc.say) {
			t.Errorf("collector %q said %q, want %q", tc.args, stdout.String(), tc.say)
		}
		var got uint64
		for subject, n := range subjects(t, srv.URL()) {
			if strings.HasPrefix(subject, "schedlens.v1."+tc.cluster+".") {
				got += n
			}
		}
		if got != tc.want {
			t.Errorf("collector %q: %d envelopes of cluster %s, want %d", tc.args, got, tc.cluster, tc.want)
		}
	}
}

// Wrong positional arguments are usage errors in every order.
func TestPositionalArgumentErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "-cluster", "bar", "vegeta"}, "import takes a format"},
		{[]string{"import", "csv", "-cluster", "bar", "FILE"}, "import takes a format"},
		{[]string{"import", "vegeta", "a", "b"}, "import takes a format"},
		{[]string{"import", "vegeta", "FILE", "-wait", "-1s"}, "-wait must be ≥ 0"},
		{[]string{"replay", "a", "-cluster", "x", "b"}, "replay takes one FILE"},
		{[]string{"-cluster", "x", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"run", "-cluster", "x", "extra"}, "run takes no arguments"},
		{[]string{"import", "vegeta", "FILE", "-no-such-flag"}, "no-such-flag"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"collector"}, tc.args...), func(string) string { return "" }, strings.NewReader(""), &bytes.Buffer{}, &stderr)
		if err == nil || !strings.Contains(err.Error()+stderr.String(), tc.want) || !strings.Contains(stderr.String(), "usage:") {
			t.Errorf("collector %q: err %v, stderr %q; want a usage error saying %q", tc.args, err, stderr.String(), tc.want)
		}
	}
}

// A cluster name too long for request ids stops `collector run` before it starts (its
// POST /v1/ingest/requests puts the name in ids) and `collector import` before it publishes.
func TestClusterTooLongForIDs(t *testing.T) {
	long := strings.Repeat("c", 101)
	for _, args := range [][]string{
		{"run", "-cluster", long, "-kubeconfig", "/nonexistent"},
		{"import", "ndjson", "-", "-cluster", long, "-nats-url", "nats://127.0.0.1:1"},
	} {
		err := run(context.Background(), append([]string{"collector"}, args...), func(string) string { return "" }, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "longer than 100 bytes (request ids include it)") {
			t.Errorf("collector %s: %v", args[0], err)
		}
	}
}

// The ingest listener without authentication refuses a non-loopback address before connecting
// to anything; NATS credentials in the URL are never printed (-h, a bad flag, a failed dial).
func TestIngestWithoutAuthNeedsLoopbackAndSecretsStayHidden(t *testing.T) {
	none := func(string) string { return "" }
	err := run(context.Background(), []string{"collector", "run", "-ingest-addr", ":9102", "-kubeconfig", "/nonexistent"}, none, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `ingest listener ":9102" is not a loopback address`) {
		t.Errorf("-ingest-addr :9102 without auth: %v, want a refusal", err)
	}
	const password = "nats-pw-do-not-print"
	env := func(k string) string {
		if k == "SCHEDLENS_NATS_URL" {
			return "nats://collector:" + password + "@127.0.0.1:1"
		}
		return ""
	}
	for _, args := range [][]string{{"-h"}, {"-no-such-flag"}, {"replay", "-"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"collector"}, args...), env, strings.NewReader(""), &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if err != nil {
			out += err.Error()
		}
		if strings.Contains(out, password) {
			t.Errorf("collector %q printed the NATS password:\n%s", args, out)
		}
	}
}
