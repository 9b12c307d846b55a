package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

// A control plane runs once per process, so a test that needs a second lab re-runs this test
// binary as the lab command (SCHEDLENS_LAB_TEST_AS_MAIN=1).
func TestMain(m *testing.M) {
	if os.Getenv("SCHEDLENS_LAB_TEST_AS_MAIN") == "1" {
		if err := run(context.Background(), append([]string{"lab"}, os.Args[1:]...), os.Getenv, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// labProcess runs the lab command with args in a process of its own (this test binary again,
// see TestMain), on a database of the test's and a free API port, and returns what it printed.
func labProcess(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	return labProcessOn(t, pgtest.URL(t), timeout, args...)
}

// labProcessOn is labProcess on the database at dbURL.
func labProcessOn(t *testing.T, dbURL string, timeout time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SCHEDLENS_LAB_TEST_AS_MAIN=1", "SCHEDLENS_DATABASE_URL="+dbURL, "SCHEDLENS_HTTP_ADDR=127.0.0.1:0")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("lab %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// copyDir copies the regular files of a directory tree.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// lab demo -manifests runs the day20 Kustomize manifests (here with 2 repeats instead of 3) and
// prints the same summary and comparison as the built-in definition: every arm of the
// manifests, the background pods the priority arm preempts, a verdict per arm.
func TestDemoManifests(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, "../../../deploy/examples/day20", dir)
	cmPath := filepath.Join(dir, "experiment", "configmap.yaml")
	cm, err := os.ReadFile(cmPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cm, []byte(`repeats: "3"`)) {
		t.Fatalf("%s: no repeats: \"3\" to shorten", cmPath)
	}
	if err := os.WriteFile(cmPath, bytes.Replace(cm, []byte(`repeats: "3"`), []byte(`repeats: "2"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	text := labProcess(t, 8*time.Minute, "demo", "-exit", "-manifests", dir, "-speed-percent", "25", "-dir", t.TempDir())
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^experiment day20: 5 arms × 2 repeats, 3 pods each`),
		regexp.MustCompile(`(?m)^control \(baseline\)\s+6\s+6\s+0\s+0\s`),
		regexp.MustCompile(`(?m)^affinity\s+6\s+6\s+0\s`),
		regexp.MustCompile(`(?m)^priority\s+6\s+6\s+0\s+0\s.*\sh100×6$`),
		regexp.MustCompile(`(?m)^background\s+8\s+8\s+0\s+[1-8]\s`),
		regexp.MustCompile(`(?m)^timeslice\s+6\s+6\s+0\s+0\s.*\sa100-shared×6$`),
		regexp.MustCompile(`(?m)^mig\s+6\s+6\s+0\s+0\s.*\sa100-mig×6$`),
		regexp.MustCompile(`(?m)^day20: arms against control \(alpha 0\.05; primary: `),
		regexp.MustCompile(`(?m)^priority — 2 runs, 6 pods: (IMPROVEMENT|REGRESSION|TRADE_OFF|NO_EFFECT|INCONCLUSIVE|INSUFFICIENT_DATA) — `),
		regexp.MustCompile(`(?m)^mig — 2 runs, 6 pods: (IMPROVEMENT|REGRESSION|TRADE_OFF|NO_EFFECT|INCONCLUSIVE|INSUFFICIENT_DATA) — `),
	} {
		if !want.MatchString(text) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

// lab demo run again on the same database names its experiment after the last one and chains
// its record to it: the second run's record links the digest the first run printed.
func TestDemoChains(t *testing.T) {
	dbURL := pgtest.URL(t)
	demo := func() string {
		t.Helper()
		return labProcessOn(t, dbURL, 3*time.Minute, "demo", "-exit", "-workload=false", "-experiment", "testdata/chain.yaml", "-speed-percent", "25", "-dir", t.TempDir())
	}
	record := regexp.MustCompile(`(?m)^the record of its conditions and results \((\d+) events\): (sha256:[0-9a-f]{64})\n  http://127\.0\.0\.1:\d+/v1/experiments/(\S+)/record$`)
	first := demo()
	m1 := record.FindStringSubmatch(first)
	if m1 == nil || m1[3] != "chain" {
		t.Fatalf("first demo: no record line of experiment chain:\n%s", first)
	}
	if strings.Contains(first, "chained to") {
		t.Errorf("the first demo on an empty database chains to something:\n%s", first)
	}
	second := demo()
	m2 := record.FindStringSubmatch(second)
	if m2 == nil || m2[3] != "chain-2" {
		t.Fatalf("second demo: no record line of experiment chain-2:\n%s", second)
	}
	chained := regexp.MustCompile(`(?m)^chained to the record of chain \(the previous demo on this database\): (\S+)\n  what changed since: http://127\.0\.0\.1:\d+/ui/experiments/chain-2/against/chain$`).FindStringSubmatch(second)
	// The link is the first experiment's record as the store reads it now: the one the first
	// demo printed, unless events of its pods were stored after it printed (then the record,
	// read again, is another; the counts say so).
	db, err := store.Open(context.Background(), dbURL, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	prev, err := db.Record(context.Background(), "chain", "")
	if err != nil {
		t.Fatal(err)
	}
	if chained == nil || chained[1] != prev.Digest {
		t.Errorf("second demo does not chain to the first experiment's record %s:\n%s", prev.Digest, second)
	}
	if prev.Digest != m1[2] {
		t.Logf("the first demo printed %s over %s events; its record now holds %d events (stored after it printed)", m1[2], m1[1], prev.Events.Count)
		if strconv.FormatInt(prev.Events.Count, 10) == m1[1] {
			t.Errorf("the first experiment's record changed with no event added: printed %s, now %s", m1[2], prev.Digest)
		}
	}
	if !regexp.MustCompile(`(?m)^experiment chain-2: 2 arms × 1 repeats, 1 pods each`).MatchString(second) {
		t.Errorf("second demo's experiment is not chain-2:\n%s", second)
	}
}

// lab demo -exit runs an experiment end to end and prints a summary whose numbers come from
// the API: every pod scheduled, the background pods preempted by the priority arm.
func TestDemo(t *testing.T) {
	var out, errb bytes.Buffer
	env := map[string]string{"SCHEDLENS_DATABASE_URL": pgtest.URL(t), "SCHEDLENS_HTTP_ADDR": "127.0.0.1:0"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := run(ctx, []string{"lab", "demo", "-exit", "-experiment", "testdata/mini.yaml", "-speed-percent", "25", "-dir", t.TempDir()},
		func(k string) string { return env[k] }, &out, &errb)
	if err != nil {
		t.Fatalf("lab demo: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	text := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^control \(baseline\)\s+4\s+4\s+0\s+0\s`),
		regexp.MustCompile(`(?m)^priority\s+4\s+4\s+0\s+0\s`),
		// 4 background pods per repeat fill the h100 pool; each priority pod preempts one.
		regexp.MustCompile(`(?m)^background\s+8\s+8\s+0\s+4\s`),
		// MIG instances of the single strategy, on the MIG node only.
		regexp.MustCompile(`(?m)^mig\s+4\s+4\s+0\s+0\s.*\sa100-mig×4$`),
		regexp.MustCompile(`(?m)^drain\s+\d+\s`),
		regexp.MustCompile(`(?m)^rolling-update\s+8\s+8\s`),
		// The failed node's pods (1 or 2 of the 2 each repeat) replaced by the ReplicaSet.
		regexp.MustCompile(`(?m)^node-rejoin\s+[5-8]\s+[5-8]\s`),
		// The scenarios and the preemptions, found from what happened (scenario labels unread):
		// each scenario once per repeat.
		regexp.MustCompile(`(?m)^disruptions schedlens found in namespace mini-\d{8}-\d{6} \(from what happened; no label read\): rollout ×2, drain ×2, node_failure ×2, preemption ×[1-4](, scale ×\d+)?$`),
		// The workload scenario after the experiment, through the real controllers.
		regexp.MustCompile(`(?m)^workload: Deployment prod-\d{8}-\d{6}/infer, 3 pods of \S+ with one GPU each`),
		regexp.MustCompile(`(?m)^\s+rollout\s+replicaset infer-\w+ → infer-\w+: complete in \d+\.\ds$`),
		regexp.MustCompile(`(?m)^\s+drain\s+gpu-\S+\s+cordoned, [1-3] evicted \(Eviction API\)`),
		regexp.MustCompile(`(?m)^\s+node_failure\s+gpu-\S+\s+heartbeats stopped; NotReady at \d+\.\ds, [1-3] pods deleted by the controller`),
		// What schedlens found, from what happened: the three, in order, each on the Deployment.
		regexp.MustCompile(`(?m)^what schedlens found in namespace prod-\d{8}-\d{6}, from what happened`),
		regexp.MustCompile(`(?ms)^\s+rollout\s+—\s+\S+\s+\S+\s+Deployment/infer\s.*^\s+drain\s+gpu-\S+\s+\S+\s+\S+\s+Deployment/infer\s+\d+\.\ds\s+[0-3] of 3\s.*^\s+node_failure\s+gpu-\S+\s+\S+\s+\S+\s+Deployment/infer\s+\d+\.\ds\s+[0-3] of 3\s`),
		regexp.MustCompile(`(?m)^in the web UI: http://127\.0\.0\.1:\d+/ui/disruptions\?namespace=prod-\S+ and the workload: http://\S+/ui/workloads/prod-\S+/Deployment/infer\?from=-1h$`),
		// The web UI's address, at the start and beside the summary (checked to answer).
		regexp.MustCompile(`(?m)^web UI \(updates live\): http://127\.0\.0\.1:\d+/ui/experiments/mini\?namespace=mini-\d{8}-\d{6}$`),
		regexp.MustCompile(`(?m)^in the web UI: http://127\.0\.0\.1:\d+/ui/experiments/mini\?namespace=mini-\S+ \(runs: http://\S+/ui/experiments/mini/runs/1\?namespace=mini-\S+\)$`),
		// The record's digest, and where to read it.
		regexp.MustCompile(`(?m)^the record of its conditions and results \(\d+ events\): sha256:[0-9a-f]{64}\n  http://127\.0\.0\.1:\d+/v1/experiments/mini/record$`),
		// Pods bound at once read a pending of tens of milliseconds (sub-second milestones), not
		// the up to one second a creation timestamp's whole second would add.
		regexp.MustCompile(`(?m)^control \(baseline\)\s+4\s+4\s+0\s+0\s+0\.[0-2]\d\d\s`),
		// The comparison follows: every arm against the baseline with a verdict, the
		// definition's metrics as the primary ones.
		regexp.MustCompile(`(?m)^mini: arms against control \(alpha 0\.05; primary: pending_p50_s, pending_p95_s, latency_p50_ms, latency_p95_ms\)$`),
		regexp.MustCompile(`(?m)^priority — 2 runs, 4 pods: (IMPROVEMENT|REGRESSION|TRADE_OFF|NO_EFFECT|INCONCLUSIVE|INSUFFICIENT_DATA) — `),
	} {
		if !want.MatchString(text) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	// The summary's error rate is the served one: the failures before Ready (the prober probes
	// from Running on, so every pod has some) are counted apart, not in it.
	row := regexp.MustCompile(`(?m)^control \(baseline\)(?:\s+\S+){11}\s+(\S+)\s+(\S+)\s`).FindStringSubmatch(text)
	if row == nil {
		t.Fatalf("no control row with an error rate and pre-Ready errors:\n%s", text)
	}
	served, err1 := strconv.ParseFloat(row[1], 64)
	preReady, err2 := strconv.ParseFloat(row[2], 64)
	if err1 != nil || err2 != nil || preReady <= 0 || served >= 0.5 {
		t.Errorf("control: served error rate %q, pre-Ready errors per pod %q; want the failures before Ready apart (> 0) and the served rate well under the pre-Ready share", row[1], row[2])
	}
	if regexp.MustCompile(`(?m)^E\d{4} `).MatchString(errb.String()) || strings.Contains(errb.String(), "level=ERROR") {
		t.Errorf("stderr has errors:\n%s", errb.String())
	}
}

// lab demo -dra: on the DRA pools the real scheduler allocates the claims; the summary says
// which GPU each arm got and how it was shared — the device plugin's and DRA's in one table —
// and splits the admission arm's pending into the gate's wait and the scheduler's.
func TestDemoDRA(t *testing.T) {
	text := labProcess(t, 5*time.Minute, "demo", "-exit", "-dra", "-workload=false", "-experiment", "testdata/mini-dra.yaml", "-speed-percent", "25", "-dir", t.TempDir())
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^lab up: 10 GPU nodes`),
		regexp.MustCompile(`(?m)^control \(baseline\)\s+4\s+4\s+0\s+0\s.*\sexclusive\s`),
		// One claim per repeat, both pods on one H200 time-sliced by the driver's config.
		regexp.MustCompile(`(?m)^sharing-dra\s+4\s+4\s+0\s+0\s.*\sNVIDIA-H200 time-slicing\s+h200-dra×4$`),
		regexp.MustCompile(`(?m)^dra-mig\s+4\s+4\s+0\s+0\s.*\sNVIDIA-A100-SXM4-80GB mig\s+a100-mig-dra×4$`),
		// Held 2 s by the gate (×0.25 does not scale it: the runner holds it in real time),
		// then scheduled at once.
		regexp.MustCompile(`(?m)^admission\s+4\s+4\s+0\s+0\s.*\s[2-3]\.\d{3}\s+0\.[0-4]\d\d\s+\S+ exclusive\s`),
	} {
		if !want.MatchString(text) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"lab"}, {"lab", "frobnicate"}, {"lab", "up", "-no-such-flag"}, {"lab", "up", "extra"}, {"lab", "demo", "-speed-percent", "0"}} {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, func(string) string { return "" }, &out, &errb)
		if err == nil || !strings.Contains(errb.String(), "usage: lab up") {
			t.Errorf("%q: err %v, stderr %q; want an error and the usage", args, err, errb.String())
		}
	}
}

// lab preflight has its own flags and exit statuses: 2 for bad usage, 1 for errors found, 0
// otherwise (here the lab's day20 arms on the lab's cluster: warnings only).
func TestPreflight(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		status int
		out    string
	}{
		{[]string{"lab", "preflight"}, 2, "usage: lab preflight"},
		{[]string{"lab", "preflight", "-experiment", "day20", "-o", "json"}, 0, `"errors": 0`},
		{[]string{"lab", "preflight", "-f", "testdata/mini.yaml"}, 2, "not a Kubernetes object"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), tc.args, func(string) string { return "" }, &out, &errb)
		status := 0
		var st config.ExitStatus
		if errors.As(err, &st) {
			status = int(st)
		} else if err != nil {
			t.Errorf("%q: %v", tc.args, err)
		}
		if status != tc.status || !strings.Contains(out.String()+errb.String(), tc.out) {
			t.Errorf("%q: exit %d (want %d), output lacks %q:\n%s%s", tc.args, status, tc.status, tc.out, out.String(), errb.String())
		}
	}
}
