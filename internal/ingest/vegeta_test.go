package ingest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/ingest"
)

var update = flag.Bool("update", false, "regenerate testdata/vegeta.json with vegeta's attacker and JSON encoder")

const fixture = "testdata/vegeta.json"

// fixtureWant is what testdata/vegeta.json (and every regeneration of it) converts to: results
// as "METHOD URL status ok attribution bytes_in/bytes_out error", ports shown as PORT.
var fixtureWant = []string{
	`GET http://127.0.0.1:PORT/v1/infer 200 ok=true pod_ip=127.0.0.1 in=17/out=0 error=""`,
	`POST http://127.0.0.1:PORT/v1/infer 200 ok=true pod_ip=127.0.0.1 in=17/out=16 error=""`,
	`GET http://127.0.0.1:PORT/v1/overloaded 503 ok=false pod_ip=127.0.0.1 in=11/out=0 error="503 Service Unavailable"`,
	`GET http://127.0.0.1:PORT/v1/infer 0 ok=false pod_ip=127.0.0.1 in=0/out=0 error="Get \"http://127.0.0.1:PORT/v1/infer\": dial tcp 0.0.0.0:PORT->127.0.0.1:PORT: connect: connection refused"`,
}

var fixtureRejected = []string{
	`line 4: not a vegeta JSON result: the line ends inside the object (truncated?)`,
	`line 5: cannot attribute: host "localhost" is not a pod IP (map it to a pod)`,
}

// port matches the loopback addresses of the generated results, whose ports vary.
var port = regexp.MustCompile(`\b(127\.0\.0\.1|localhost|0\.0\.0\.0):\d+\b`)

func summarise(envs []*events.Envelope) []string {
	var out []string
	for _, env := range envs {
		r := env.Payload.(*events.Request)
		who := "pod_ip=" + r.PodIP
		if env.Pod != nil {
			who = "pod=" + env.Pod.Namespace + "/" + env.Pod.Name
		}
		s := fmt.Sprintf("%s %s %d ok=%v %s in=%d/out=%d error=%q", r.Method, r.Target, r.Status, r.OK, who, r.BytesIn, r.BytesOut, r.Error)
		out = append(out, port.ReplaceAllString(s, "$1:PORT"))
	}
	return out
}

// checkAgainstInput compares each envelope's time, latency and id shape with its input line,
// read by encoding/json rather than vegeta's decoder.
func checkAgainstInput(t *testing.T, input []byte, envs []*events.Envelope) {
	t.Helper()
	type raw struct {
		Timestamp time.Time `json:"timestamp"`
		Latency   int64     `json:"latency"`
		URL       string    `json:"url"`
	}
	byURL := map[string][]raw{}
	for _, line := range bytes.Split(input, []byte("\n")) {
		var r raw
		if json.Unmarshal(line, &r) == nil {
			byURL[r.URL] = append(byURL[r.URL], r)
		}
	}
	seen := map[string]bool{}
	for _, env := range envs {
		req := env.Payload.(*events.Request)
		rs := byURL[req.Target]
		if len(rs) == 0 {
			t.Errorf("%s: no input line with url %s", env.ID, req.Target)
			continue
		}
		r := rs[0]
		byURL[req.Target] = rs[1:]
		if want := r.Timestamp.Truncate(time.Microsecond).UTC(); !env.OccurredAt.Equal(want) || env.OccurredAt.Location() != time.UTC {
			t.Errorf("%s: occurred_at %s, want %s", env.ID, env.OccurredAt, want)
		}
		if want := float64(r.Latency) / 1e6; req.LatencyMS != want {
			t.Errorf("%s: latency_ms %v, want %v", env.ID, req.LatencyMS, want)
		}
		if !hashed.MatchString(env.ID) || !strings.HasPrefix(env.ID, "request/vegeta/") || seen[env.ID] {
			t.Errorf("id %q: want a distinct request/vegeta/lab/<32 hex>", env.ID)
		}
		seen[env.ID] = true
	}
}

// parseLikeFixture parses vegeta results and checks they convert as the fixture does: the same
// results, the same rejected lines, each result true to its input line.
func parseLikeFixture(t *testing.T, input []byte) []*events.Envelope {
	t.Helper()
	envs, rejected, err := ingest.ParseVegeta(bytes.NewReader(input), options())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fixtureWant, summarise(envs)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(fixtureRejected, lineErrors(rejected)); diff != "" {
		t.Errorf("rejected lines (-want +got):\n%s", diff)
	}
	checkAgainstInput(t, input, envs)
	return envs
}

func TestParseVegetaFixture(t *testing.T) {
	input, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	envs := parseLikeFixture(t, input)
	requests(t, envs, "loadgen") // checks the common envelope fields

	again, _, _ := ingest.ParseVegeta(bytes.NewReader(input), options())
	if diff := cmp.Diff(ids(envs), ids(again)); diff != "" {
		t.Errorf("the same file twice gave other ids (-first +second):\n%s", diff)
	}
}

func TestParseVegetaHostPods(t *testing.T) {
	input, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	o := options()
	o.HostPods = map[string]events.PodRef{"LocalHost": {Namespace: "infer", Name: "llm-0", UID: uid}}
	envs, rejected, err := ingest.ParseVegeta(bytes.NewReader(input), o)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Insert(slices.Clone(fixtureWant), 3,
		`GET http://localhost:PORT/v1/infer 200 ok=true pod=infer/llm-0 in=17/out=0 error=""`)
	if diff := cmp.Diff(want, summarise(envs)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(fixtureRejected[:1], lineErrors(rejected)); diff != "" {
		t.Errorf("rejected lines (-want +got):\n%s", diff)
	}

	o.HostPods = map[string]events.PodRef{"localhost": {Name: "llm-0"}}
	if _, _, err := ingest.ParseVegeta(bytes.NewReader(input), o); err == nil {
		t.Error("a host mapped to an incomplete pod ref: want an error")
	}
}

func TestParseVegetaLines(t *testing.T) {
	line := func(fields string) string {
		return `{"attack":"a","seq":1,"code":200,"timestamp":"2025-03-01T10:00:00Z","latency":2000000,"bytes_out":0,"bytes_in":3,"error":"","body":"b2sK","method":"GET"` + fields + `,"headers":null}`
	}
	input := strings.Join([]string{
		/* 1 */ line(`,"url":"http://[fd00::1%25eth0]:8000/v1/infer"`),
		/* 2 */ ``,
		/* 3 */ `{"attack":"a","seq":2,"code":200,"latency":1,"url":"http://10.0.0.1/"}`,
		/* 4 */ `{"attack":"a","seq":3,"timestamp":"2025-03-01T10:00:00Z","latency":-1,"url":"http://10.0.0.1/"}`,
		/* 5 */ line(`,"url":"/v1/infer"`),
		/* 6 */ line(`,"url":"http://10.0.0.1:bad/"`),
		/* 7 */ `[]`,
		/* 8 */ line(`,"url":"http://10.0.0.2/"`), // no final newline: vegeta's decoder would drop it
	}, "\n")
	envs, rejected, err := ingest.ParseVegeta(strings.NewReader(input), options())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`GET http://[fd00::1%25eth0]:8000/v1/infer 200 ok=true pod_ip=fd00::1 in=3/out=0 error=""`,
		`GET http://10.0.0.2/ 200 ok=true pod_ip=10.0.0.2 in=3/out=0 error=""`,
	}
	if diff := cmp.Diff(want, summarise(envs)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	wantRejected := []string{
		`line 3: timestamp: missing`,
		`line 4: latency: negative (-1 ns)`,
		`line 5: cannot attribute: url "/v1/infer" has no host`,
		`line 6: url: parse "http://10.0.0.1:bad/": invalid port ":bad" after host`,
		`line 7: not a vegeta JSON result: parse error: expected { near offset 1 of ''`,
	}
	if diff := cmp.Diff(wantRejected, lineErrors(rejected)); diff != "" {
		t.Errorf("rejected lines (-want +got):\n%s", diff)
	}
}

func TestVegetaIDs(t *testing.T) {
	result := func(ts, url string) string {
		return `{"attack":"golden","seq":7,"code":200,"timestamp":"` + ts + `","latency":1500000,"bytes_out":0,"bytes_in":12,"error":"","body":null,"method":"GET","url":"` + url + `","headers":null}`
	}
	input := strings.Join([]string{
		result("2025-03-01T10:00:00.123456789Z", "http://10.1.2.3:8080/v1/infer"),
		result("2025-03-01T11:00:00.123456789+01:00", "http://10.1.2.3:8080/v1/infer"), // the same instant
		result("2025-03-01T10:00:00.123456788Z", "http://10.1.2.3:8080/v1/infer"),
		result("2025-03-01T10:00:00.123456789Z", "http://10.1.2.4:8080/v1/infer"),
	}, "\n")
	envs, rejected, err := ingest.ParseVegeta(strings.NewReader(input), options())
	if err != nil || len(rejected) != 0 {
		t.Fatalf("err %v, rejected %v", err, lineErrors(rejected))
	}
	// Pinned: a changed id scheme would store every re-imported result a second time.
	const golden = "request/vegeta/lab/899cacc4e578b75a50ea4e44437aa99d"
	got := ids(envs)
	if diff := cmp.Diff([]string{golden, golden}, got[:2]); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	if got[2] == golden || got[3] == golden || got[2] == got[3] {
		t.Errorf("results with another timestamp or url share an id: %v", got)
	}

	// The id before ids included the cluster, pinned as it was then; the cluster and a pod
	// named by -host-pod make results distinct, the source does not.
	idsOf := func(o ingest.Options) []string {
		results, rejected, err := ingest.Parse(ingest.FormatVegeta, strings.NewReader(input), o)
		if err != nil || len(rejected) != 0 {
			t.Fatalf("err %v, rejected %v", err, lineErrors(rejected))
		}
		return []string{results[0].Envelope.ID, results[0].LegacyID}
	}
	const legacy = "request/vegeta/899cacc4e578b75a50ea4e44437aa99d"
	o := options()
	o.Source = "someone-else"
	bar := options()
	bar.Cluster = "bar"
	mapped := options()
	mapped.HostPods = map[string]events.PodRef{"10.1.2.3": {Namespace: "infer", Name: "llm-0", UID: "8a4c2f7e-1b3d-4e5f-9a8b-7c6d5e4f3a2b"}}
	remapped := options()
	remapped.HostPods = map[string]events.PodRef{"10.1.2.3": {Namespace: "infer", Name: "llm-1", UID: "9a4c2f7e-1b3d-4e5f-9a8b-7c6d5e4f3a2b"}}
	for name, tc := range map[string]struct {
		o    ingest.Options
		want []string
	}{
		"another source":  {o, []string{golden, legacy}},
		"another cluster": {bar, []string{"request/vegeta/bar/899cacc4e578b75a50ea4e44437aa99d", legacy}},
	} {
		if diff := cmp.Diff(tc.want, idsOf(tc.o)); diff != "" {
			t.Errorf("%s: ids (-want +got):\n%s", name, diff)
		}
	}
	for _, got := range [][]string{idsOf(mapped), idsOf(remapped)} {
		if got[0] == golden || got[1] != legacy || !hashed.MatchString(got[0]) {
			t.Errorf("a result mapped to a pod: ids %v, want a new request/vegeta/lab/<hash> and the legacy id", got)
		}
	}
	if a, b := idsOf(mapped), idsOf(remapped); a[0] == b[0] {
		t.Errorf("results mapped to two pods share id %s", a[0])
	}
}

// TestVegetaGenerator produces vegeta results the way testdata/README.md describes, with
// vegeta's own attacker and JSON encoder against a server on 127.0.0.1, and checks they convert
// like the fixture. With -update it rewrites the fixture.
func TestVegetaGenerator(t *testing.T) {
	var buf bytes.Buffer
	generateVegeta(t, &buf)
	parseLikeFixture(t, buf.Bytes())
	if *update && !t.Failed() {
		if err := os.WriteFile(filepath.FromSlash(fixture), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// generateVegeta writes five genuine vegeta results, one per target in order, and after the
// third a truncated copy of the first (as when vegeta is killed mid-write).
func generateVegeta(t *testing.T, w io.Writer) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/overloaded" {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, `{"text":"hello"}`+"\n")
	}))
	defer srv.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()
	_, srvPort, _ := net.SplitHostPort(srv.Listener.Addr().String())

	targets := []vegeta.Target{
		{Method: "GET", URL: srv.URL + "/v1/infer"},
		{Method: "POST", URL: srv.URL + "/v1/infer", Body: []byte(`{"prompt":"hi"}` + "\n")},
		{Method: "GET", URL: srv.URL + "/v1/overloaded"},
		{Method: "GET", URL: "http://localhost:" + srvPort + "/v1/infer"},
		{Method: "GET", URL: "http://" + refused + "/v1/infer"},
	}
	// One worker, so sequence numbers follow the targets' order.
	atk := vegeta.NewAttacker(vegeta.Workers(1), vegeta.MaxWorkers(1), vegeta.KeepAlive(false), vegeta.Timeout(5*time.Second))
	pacer := hitsPacer{hits: uint64(len(targets)), every: 10 * time.Millisecond}
	var results vegeta.Results
	for res := range atk.Attack(vegeta.NewStaticTargeter(targets...), pacer, 0, "schedlens-fixture") {
		results = append(results, *res)
	}
	if len(results) != len(targets) {
		t.Fatalf("vegeta gave %d results, want %d", len(results), len(targets))
	}
	slices.SortFunc(results, func(a, b vegeta.Result) int { return int(a.Seq) - int(b.Seq) })

	var lines bytes.Buffer
	enc := vegeta.NewJSONEncoder(&lines)
	for i := range results {
		if err := enc.Encode(&results[i]); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	sc := bufio.NewScanner(&lines)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	first := out[0]
	cut := strings.Index(first, `"code":200,`) + len(`"code":200,`)
	out = slices.Insert(out, 3, first[:cut])
	if _, err := io.WriteString(w, strings.Join(out, "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
}

// hitsPacer paces a fixed number of hits, one every interval.
type hitsPacer struct {
	hits  uint64
	every time.Duration
}

func (p hitsPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= p.hits {
		return 0, true
	}
	return max(0, time.Duration(hits)*p.every-elapsed), false
}

func (p hitsPacer) Rate(time.Duration) float64 { return float64(time.Second / p.every) }
