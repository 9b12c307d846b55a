// Package e2e runs the pipeline against real NATS JetStream and Postgres and checks what the API
// serves: the correlator and the api as the same apps the binaries run (correlatorapp,
// apiapp) in this process, the command-line tools (`collector replay`, `collector import`,
// `api compare`) as the built binaries; one test runs the daemons as binaries too, the way the
// README starts them.
package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/apiapp"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/correlatorapp"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/testenv"
)

// binaries are cmd/collector, correlator and api, built once per test process.
var commands = testenv.NewBinaries("../cmd/collector", "../cmd/correlator", "../cmd/api")

func binaries(t *testing.T) string { return commands.Dir(t) }

func TestMain(m *testing.M) {
	code := m.Run()
	commands.Remove()
	os.Exit(code)
}

// daemon starts a long-running binary and stops it with SIGTERM when the test ends, failing the
// test if it does not exit cleanly.
func daemon(t *testing.T, bin string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s exited with %v; log:\n%s", filepath.Base(bin), err, logs.String())
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s did not stop on SIGINT; log:\n%s", filepath.Base(bin), logs.String())
		}
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	if !testenv.Until(60*time.Second, 100*time.Millisecond, ok) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func get(t *testing.T, url string) (int, string, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

func readSample(t *testing.T) []*events.Envelope {
	t.Helper()
	b, err := os.ReadFile("../testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []*events.Envelope
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		env, err := events.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// startPipeline runs the correlator and the api in-process, replays the sample with the
// collector binary, waits until everything is stored, and returns the API's base URL and the
// database.
func startPipeline(t *testing.T) (string, string) {
	t.Helper()
	base, dbURL, _ := startPipelineNATS(t)
	return base, dbURL
}

// startPipelineNATS is startPipeline that also returns the NATS URL.
func startPipelineNATS(t *testing.T) (string, string, string) {
	t.Helper()
	return pipeline(t, false)
}

// pipeline starts the daemons — as the binaries the README starts when asBinaries, else as their
// apps in this process — and replays the sample through `collector replay`.
func pipeline(t *testing.T, asBinaries bool) (string, string, string) {
	t.Helper()
	bin := binaries(t)
	nats := natstest.Start(t)
	dbURL := pgtest.URL(t)
	apiAddr := testenv.FreeAddr(t)
	common := []string{"SCHEDLENS_NATS_URL=" + nats.URL(), "SCHEDLENS_DATABASE_URL=" + dbURL}
	if asBinaries {
		daemon(t, bin+"/correlator", append(common, "SCHEDLENS_METRICS_ADDR="+testenv.FreeAddr(t), "SCHEDLENS_BATCH_WAIT=50ms"))
		daemon(t, bin+"/api", append(common, "SCHEDLENS_HTTP_ADDR="+apiAddr))
	} else {
		cfg := correlator.DefaultConfig()
		cfg.BatchWait = 50 * time.Millisecond
		inProcess(t, "correlator", func(ctx context.Context) error {
			return correlatorapp.Run(ctx, correlatorapp.Options{NATSURL: nats.URL(), DatabaseURL: dbURL, MetricsAddr: "127.0.0.1:0", Correlator: cfg,
				WarmInterval: 200 * time.Millisecond})
		})
		inProcess(t, "api", func(ctx context.Context) error {
			return apiapp.Run(ctx, apiapp.Options{HTTPAddr: apiAddr, DatabaseURL: dbURL})
		})
	}
	base := "http://" + apiAddr
	waitFor(t, "api /readyz", func() bool { code, _, _ := get(t, base+"/readyz"); return code == 200 })

	replay := exec.Command(bin+"/collector", "replay", "../testdata/sample.jsonl")
	replay.Env = append(os.Environ(), common...)
	out, err := replay.CombinedOutput()
	if err != nil {
		t.Fatalf("collector replay: %v\n%s", err, out)
	}
	sample := readSample(t)
	if want := fmt.Sprintf("published %d envelopes", len(sample)); !strings.Contains(string(out), want) {
		t.Errorf("replay said %q, want it to contain %q", out, want)
	}
	var stats struct {
		EventsTotal int64 `json:"events_total"`
	}
	waitFor(t, "all sample events stored", func() bool {
		_, _, b := get(t, base+"/v1/stats")
		return json.Unmarshal(b, &stats) == nil && stats.EventsTotal == int64(len(sample))
	})
	return base, dbURL, nats.URL()
}

// inProcess runs an app until the test ends, failing the test if it stops with an error.
func inProcess(t *testing.T, name string, run func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("%s did not stop", name)
		}
	})
}

// getJSON decodes a 200 answer of the API into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	code, _, b := get(t, url)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// The README's way: correlator and api as the built daemons, collector replay of the sample; the
// API then serves the documented timelines.
func TestReplayedSampleBecomesDocumentedTimelines(t *testing.T) {
	base, _, _ := pipeline(t, true)
	sample := readSample(t)
	var stats struct {
		EventsTotal int64            `json:"events_total"`
		PodsTotal   int64            `json:"pods_total"`
		ByKind      map[string]int64 `json:"by_kind"`
	}
	getJSON(t, base+"/v1/stats", &stats)

	// Every pod's timeline as served equals align's over the sample, including the event list.
	uids := map[string]bool{}
	for _, env := range sample {
		if env.PodUID() != "" {
			uids[env.PodUID()] = true
		}
	}
	if stats.PodsTotal != int64(len(uids)) {
		t.Errorf("pods_total = %d, want %d", stats.PodsTotal, len(uids))
	}
	for uid := range uids {
		code, ctype, body := get(t, base+"/v1/pods/"+uid+"/timeline")
		if code != 200 || ctype != "application/json" {
			t.Fatalf("timeline %s: %d %s %s", uid, code, ctype, body)
		}
		want, _ := align.Build(uid, sample, events.DefaultLabelKeys)
		wantJSON, _ := json.Marshal(want)
		if diff := cmp.Diff(decodeJSON(t, wantJSON), decodeJSON(t, body)); diff != "" {
			t.Errorf("timeline %s (-align +api):\n%s", uid, diff)
		}
	}

	// Pages of 5 over one arm walk every pod of that arm exactly once.
	seen, cursor, pages := map[string]bool{}, "", 0
	for {
		url := base + "/v1/pods?experiment=day20&arm=control&limit=5"
		if cursor != "" {
			url += "&cursor=" + cursor
		}
		code, _, body := get(t, url)
		if code != 200 {
			t.Fatalf("list pods: %d %s", code, body)
		}
		var page struct {
			Pods       []align.Summary `json:"pods"`
			NextCursor *string         `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Pods {
			if seen[p.Pod.UID] || *p.Experiment.Arm != "control" {
				t.Errorf("pod %s listed twice or from arm %v", p.Pod.UID, *p.Experiment.Arm)
			}
			seen[p.Pod.UID] = true
		}
		pages++
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if len(seen) != 9 || pages != 2 {
		t.Errorf("control arm: %d pods in %d pages, want 9 pods (3 runs × 3) in 2 pages", len(seen), pages)
	}

	for _, c := range []struct {
		path string
		code int
	}{
		{"/v1/pods/not-a-uid/timeline", 400},
		{"/v1/pods/00000000-0000-0000-0000-000000000000/timeline", 404},
		{"/v1/pods?limit=0", 400},
		{"/v1/pods?limit=abc", 400},
		{"/v1/pods?cursor=garbage", 400},
		{"/v1/nothing-here", 404},
	} {
		code, ctype, body := get(t, base+c.path)
		var p struct {
			Status int    `json:"status"`
			Title  string `json:"title"`
		}
		if code != c.code || ctype != "application/problem+json" || json.Unmarshal(body, &p) != nil || p.Status != c.code || p.Title == "" {
			t.Errorf("GET %s = %d %s %s; want %d application/problem+json", c.path, code, ctype, body, c.code)
		}
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		if code, _, _ := get(t, base+path); code != 200 {
			t.Errorf("GET %s = %d", path, code)
		}
	}
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

// Invalid lines are reported with their numbers and make the exit status non-zero; the valid
// lines are still published.
func TestReplayReportsInvalidLinesAndPublishesTheRest(t *testing.T) {
	bin := binaries(t)
	nats := natstest.Start(t)
	sample := readSample(t)
	noCluster := strings.Replace(string(sample[2].Raw), `"cluster":"lab",`, "", 1)
	input := strings.Join([]string{
		string(sample[0].Raw),
		noCluster,
		`{"v":1,"id":"x"}`,
		"",
		string(sample[1].Raw),
		`not json`,
	}, "\n")
	cmd := exec.Command(bin+"/collector", "replay", "-")
	cmd.Env = append(os.Environ(), "SCHEDLENS_NATS_URL="+nats.URL(), "SCHEDLENS_CLUSTER=lab")
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("replay with invalid lines: err %v, want a non-zero exit", err)
	}
	for _, want := range []string{"line 3: invalid envelope: kind: missing", "line 6: invalid envelope: not valid JSON"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
	if !strings.Contains(stdout.String(), "published 3 envelopes") {
		t.Errorf("stdout %q: want 3 published (one given SCHEDLENS_CLUSTER)", stdout.String())
	}
}

func TestFlags(t *testing.T) {
	bin := binaries(t)
	for _, name := range []string{"collector", "correlator", "api"} {
		help := exec.Command(bin+"/"+name, "-h")
		out, err := help.CombinedOutput()
		if err != nil {
			t.Errorf("%s -h: %v", name, err)
		}
		for _, env := range []string{"SCHEDLENS_NATS_URL", "SCHEDLENS_DATABASE_URL", "SCHEDLENS_HTTP_ADDR", "SCHEDLENS_METRICS_ADDR", "SCHEDLENS_CLUSTER"} {
			documented := strings.Contains(string(out), env)
			wanted := map[string][]string{
				"collector":  {"SCHEDLENS_NATS_URL", "SCHEDLENS_CLUSTER", "SCHEDLENS_METRICS_ADDR"},
				"correlator": {"SCHEDLENS_NATS_URL", "SCHEDLENS_DATABASE_URL", "SCHEDLENS_METRICS_ADDR"},
				"api":        {"SCHEDLENS_DATABASE_URL", "SCHEDLENS_HTTP_ADDR"},
			}[name]
			if !documented && contains(wanted, env) {
				t.Errorf("%s -h does not document %s:\n%s", name, env, out)
			}
		}
		bad := exec.Command(bin+"/"+name, "-no-such-flag")
		out, err = bad.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || !strings.Contains(string(out), "usage:") {
			t.Errorf("%s -no-such-flag: err %v, output %q; want non-zero exit with usage", name, err, out)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "extra"}, "usage:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"-kubeconfig", "/nonexistent/kubeconfig"}, "kubernetes config"},
		{[]string{"run", "-kubeconfig", "../internal/collector/testdata/kubeconfig.yaml", "-selector", "a in (", "-metrics-addr", "127.0.0.1:0"}, "pod selector"},
		{[]string{"run", "-kubeconfig", "../internal/collector/testdata/kubeconfig.yaml", "-cluster", "a.b"}, "cannot be a subject token"},
	} {
		out, err := exec.Command(bin+"/collector", tc.args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || !strings.Contains(string(out), tc.want) {
			t.Errorf("collector %q: err %v, output %q; want a non-zero exit saying %q", tc.args, err, out, tc.want)
		}
	}
	cmd := exec.Command(bin+"/correlator", "migrate")
	cmd.Env = append(os.Environ(), "SCHEDLENS_BATCH_SIZE=many")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "SCHEDLENS_BATCH_SIZE") {
		t.Errorf("a bad environment value: err %v, output %q; want a non-zero exit naming the variable", err, out)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// collector import vegeta publishes vegeta's results as request envelopes, reports the lines it
// cannot use with their numbers, exits 1 for them, and re-importing stores nothing twice.
func TestImportVegeta(t *testing.T) {
	bin := binaries(t)
	nats := natstest.Start(t)
	run := func() (string, string, error) {
		// No api runs here: -wait 0 publishes without reading back (TestImportReportsAttribution does).
		cmd := exec.Command(bin+"/collector", "import", "vegeta", "-wait", "0", "../internal/ingest/testdata/vegeta.json")
		cmd.Env = append(os.Environ(), "SCHEDLENS_NATS_URL="+nats.URL(), "SCHEDLENS_CLUSTER=lab")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	out, errOut, err := run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("import: err %v; want exit 1 for the fixture's bad lines\nstdout %s\nstderr %s", err, out, errOut)
	}
	if !strings.Contains(errOut, "line ") {
		t.Errorf("stderr %q: want the rejected lines with their numbers", errOut)
	}
	var published, dups, rejected, failed int
	if _, err := fmt.Sscanf(out, "published %d request results (%d already in the stream), %d rejected lines, %d not acknowledged", &published, &dups, &rejected, &failed); err != nil || published == 0 || dups != 0 || rejected == 0 || failed != 0 {
		t.Fatalf("stdout %q (%v): want some published, some rejected", out, err)
	}
	out, _, _ = run()
	if want := fmt.Sprintf("published %d request results (%d already in the stream)", published, published); !strings.HasPrefix(out, want) {
		t.Errorf("re-import: %q, want %q: the same results have the same ids", out, want)
	}
}

// The comparison of the sample's arms: JSON with the baseline first, every metric with its
// interval and verdict, an overall verdict per arm, the definition's thresholds checked; the
// same as CSV; bad requests as problem+json.
func TestComparison(t *testing.T) {
	api, dbURL := startPipeline(t)
	var c struct {
		Experiment, Baseline, Method string
		Arms                         []struct {
			Arm         string
			Baseline    bool
			Runs, Pods  int
			Verdict     string
			Explanation string
			Breaches    []string `json:"threshold_breaches"`
			Metrics     []struct {
				Metric, Verdict, Role string
				AcrossRuns            struct {
					Mean float64
					Low  *float64 `json:"ci95_low"`
				} `json:"across_runs"`
			}
		}
		UnknownThresholds []string `json:"unknown_thresholds"`
		Placement         map[string]struct {
			Nodes            map[string]int `json:"nodes"`
			GPUModels        map[string]int `json:"gpu_models"`
			Sharing          map[string]int `json:"sharing"`
			FailedScheduling map[string]int `json:"failed_scheduling_reasons"`
		}
	}
	// The correlator stores the default comparison (-comparison-warm-interval, 200 ms here)
	// without any api asking for it; once it holds still (the same for five intervals: everything
	// is stored) it is what the api serves.
	storedBody := func() []byte {
		conn, err := pgx.Connect(context.Background(), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var body []byte
		if err := conn.QueryRow(context.Background(), `SELECT body FROM stored_comparisons WHERE experiment = 'day20' AND namespace = '' AND baseline = ''`).Scan(&body); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return body
	}
	var stored []byte
	waitFor(t, "the correlator to store day20's comparison, holding still", func() bool {
		before := storedBody()
		time.Sleep(time.Second)
		stored = storedBody()
		return stored != nil && bytes.Equal(before, stored)
	})
	var storedDoc, servedDoc any
	if err := json.Unmarshal(stored, &storedDoc); err != nil {
		t.Fatal(err)
	}
	getJSON(t, api+"/v1/experiments/day20/comparison", &servedDoc)
	if diff := cmp.Diff(storedDoc, servedDoc); diff != "" {
		t.Errorf("the comparison served differs from the one the correlator stored (-stored +served):\n%s", diff)
	}
	getJSON(t, api+"/v1/experiments/day20/comparison", &c)
	var inNS struct {
		Namespace string
		Arms      []struct{ Arm string }
	}
	getJSON(t, api+"/v1/experiments/day20/comparison?namespace=ai-lab", &inNS)
	if inNS.Namespace != "ai-lab" || len(inNS.Arms) != len(c.Arms) {
		t.Errorf("comparison in namespace ai-lab: %+v, want the same %d arms", inNS, len(c.Arms))
	}
	if p := c.Placement["sharing"]; p.Sharing["time-slicing"] != 9 || p.GPUModels["NVIDIA-A100-SXM4-80GB"] != 9 || len(p.Nodes) == 0 {
		t.Errorf("sharing placement %+v: want its 9 pods on time-sliced A100s", p)
	}
	if p := c.Placement["oversized"]; p.FailedScheduling["Insufficient nvidia.com/gpu"] == 0 {
		t.Errorf("oversized placement %+v: want the FailedScheduling reasons counted", p)
	}
	var names []string
	for _, a := range c.Arms {
		names = append(names, a.Arm)
	}
	for _, want := range []string{"control", "affinity", "priority", "sharing"} {
		if !contains(names, want) {
			t.Errorf("comparison arms %v lack %s", names, want)
		}
	}
	if c.Baseline != "control" || !c.Arms[0].Baseline || c.Arms[0].Arm != "control" {
		t.Fatalf("comparison: baseline %q, first %+v", c.Baseline, c.Arms[0].Arm)
	}
	// The served error rate leaves out the requests sent before Ready (30 % of the sample's); one
	// served request in 50 fails, which is over the 1 % threshold.
	if !contains(c.Arms[0].Breaches, "error_rate: error_rate 0.02667 > 0.01") {
		t.Errorf("control breaches %v; want the served error rate over the error_rate threshold", c.Arms[0].Breaches)
	}
	verdicts := map[string]bool{"improvement": true, "regression": true, "trade_off": true, "no_effect": true, "inconclusive": true, "insufficient_data": true}
	metricVerdicts := map[string]bool{"better": true, "worse": true, "equivalent": true, "inconclusive": true, "insufficient_data": true}
	roles := map[string]bool{"primary": true, "guardrail": true, "secondary": true}
	for _, a := range c.Arms[1:] {
		if !verdicts[a.Verdict] || a.Explanation == "" {
			t.Errorf("arm %s: verdict %q (%s)", a.Arm, a.Verdict, a.Explanation)
		}
		for _, m := range a.Metrics {
			if !metricVerdicts[m.Verdict] || !roles[m.Role] {
				t.Errorf("arm %s metric %s: verdict %q role %q", a.Arm, m.Metric, m.Verdict, m.Role)
			}
		}
		t.Logf("%s: %s — %s; breaches %v", a.Arm, a.Verdict, a.Explanation, a.Breaches)
	}
	// The sample's definition names pending, model_load and time_to_first_success.
	for _, m := range c.Arms[0].Metrics {
		want := map[string]string{"pending_p50_s": "primary", "model_load_p50_s": "primary", "latency_p95_ms": "guardrail", "gpu_util_mean_pct": "secondary"}[m.Metric]
		if want != "" && m.Role != want {
			t.Errorf("%s: role %q, want %q", m.Metric, m.Role, want)
		}
	}
	for _, a := range c.Arms {
		if a.Arm == "sharing" {
			if a.Runs != 3 || len(a.Metrics) == 0 {
				t.Errorf("sharing: %d runs, %d metrics", a.Runs, len(a.Metrics))
			}
		}
	}
	resp, err := http.Get(api + "/v1/experiments/day20/comparison.csv")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") || !strings.HasPrefix(string(body), "arm,baseline,metric,") {
		t.Errorf("csv: %s\n%.200s", ct, body)
	}
	for path, code := range map[string]int{
		"/v1/experiments/nope/comparison":                  404,
		"/v1/experiments/day20/comparison?baseline=nobody": 400,
		"/v1/experiments/nope":                             404,
		"/v1/experiments/day20/comparison?namespace=nope":  404,
	} {
		resp, err := http.Get(api + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s, want %d problem+json", path, resp.StatusCode, resp.Header.Get("Content-Type"), code)
		}
	}
	// The same comparison for a terminal.
	cmd := exec.Command(binaries(t)+"/api", "compare", "day20", "-baseline", "control")
	cmd.Env = append(os.Environ(), "SCHEDLENS_DATABASE_URL="+dbURL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("api compare: %v\n%s", err, out)
	}
	for _, want := range []string{"day20: arms against control", "control — 3 runs, 9 pods (baseline)", "affinity — 3 runs", "pending_p50_s (s, lower better)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("api compare output lacks %q:\n%s", want, out)
		}
	}
	if out, err := exec.Command(binaries(t)+"/api", "compare").CombinedOutput(); err == nil || !strings.Contains(string(out), "usage:") {
		t.Errorf("api compare without a name: err %v, %s", err, out)
	}

	// A definition given through the API.
	put := func(name, body string) int {
		req, _ := http.NewRequest(http.MethodPut, api+"/v1/experiments/"+name, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := put("day21", `{"change":"MIG instead of time-slicing","repeats":3,"baseline":"control","thresholds":{"error_rate":0.05}}`); code != 204 {
		t.Fatalf("PUT day21: %d", code)
	}
	for body, want := range map[string]int{`{"name":"other"}`: 400, `{"repeats":`: 400, `{"repeats":-1}`: 400} {
		if code := put("day21", body); code != want {
			t.Errorf("PUT %s: %d, want %d", body, code, want)
		}
	}
	var day21 struct {
		Name       string
		Definition struct {
			Change     string
			Thresholds map[string]float64
		}
		Pods int
	}
	waitFor(t, "the PUT definition stored", func() bool {
		code, _, b := get(t, api+"/v1/experiments/day21")
		return code == 200 && json.Unmarshal(b, &day21) == nil
	})
	if day21.Definition.Change != "MIG instead of time-slicing" || day21.Definition.Thresholds["error_rate"] != 0.05 || day21.Pods != 0 {
		t.Errorf("day21: %+v", day21)
	}

	var list struct {
		Experiments []struct {
			Name       string
			Definition *struct{ Baseline string }
			Arms       []string
		}
	}
	getJSON(t, api+"/v1/experiments", &list)
	if len(list.Experiments) != 2 || list.Experiments[0].Definition == nil || list.Experiments[0].Definition.Baseline != "control" {
		t.Errorf("experiments: %+v", list)
	}
}
