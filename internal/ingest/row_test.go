package ingest_test

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/ingest"
)

const uid = "0b6f6f3c-8a2e-4f0e-9f57-2d1c5e6a7b80"

func TestParseNDJSONGoodRows(t *testing.T) {
	tests := []struct {
		name string
		row  string
		want request
	}{{
		name: "pod by uid",
		row:  `{"pod_uid":"` + uid + `","pod_namespace":"infer","pod_name":"llm-0","sent_at":"2025-03-01T10:00:00.123456789Z","latency_ms":41.5,"status":200,"target":"http://llm/v1/completions","method":"POST","bytes_in":512,"bytes_out":64}`,
		want: request{ID: "request/ingest/lab/#", OccurredAt: "2025-03-01T10:00:00.123456Z", Pod: "infer/llm-0 " + uid,
			Data: events.Request{Target: "http://llm/v1/completions", Status: 200, OK: true, LatencyMS: 41.5, BytesIn: 512, BytesOut: 64, Method: "POST"}},
	}, {
		name: "pod by ip only",
		row:  `{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:01Z","latency_ms":12,"status":503,"error":"upstream overloaded"}`,
		want: request{ID: "request/ingest/lab/#", OccurredAt: "2025-03-01T10:00:01Z",
			Data: events.Request{Status: 503, OK: false, LatencyMS: 12, Error: "upstream overloaded", PodIP: "10.1.2.3"}},
	}, {
		name: "uid and ip, ipv4-mapped ip normalised",
		row:  `{"pod_uid":"` + uid + `","pod_namespace":"infer","pod_name":"llm-0","pod_ip":"::ffff:10.1.2.3","sent_at":"2025-03-01T10:00:02Z","latency_ms":3,"status":204}`,
		want: request{ID: "request/ingest/lab/#", OccurredAt: "2025-03-01T10:00:02Z", Pod: "infer/llm-0 " + uid,
			Data: events.Request{Status: 204, OK: true, LatencyMS: 3, PodIP: "10.1.2.3"}},
	}, {
		name: "received_at instead of latency_ms, offset time in UTC",
		row:  `{"pod_ip":"fd00::7","sent_at":"2025-03-01T11:00:00.5+01:00","received_at":"2025-03-01T11:00:00.7505+01:00","status":200}`,
		want: request{ID: "request/ingest/lab/#", OccurredAt: "2025-03-01T10:00:00.5Z",
			Data: events.Request{Status: 200, OK: true, LatencyMS: 250.5, PodIP: "fd00::7"}},
	}, {
		name: "ok defaults to false without a status",
		row:  `{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:03Z","latency_ms":30000,"error":"context deadline exceeded"}`,
		want: request{ID: "request/ingest/lab/#", OccurredAt: "2025-03-01T10:00:03Z",
			Data: events.Request{OK: false, LatencyMS: 30000, Error: "context deadline exceeded", PodIP: "10.1.2.3"}},
	}, {
		name: "ok defaults to false with an error despite a 200",
		row:  `{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:04Z","latency_ms":5,"status":200,"error":"truncated body"}`,
		want: request{ID: "request/ingest/lab/#", OccurredAt: "2025-03-01T10:00:04Z",
			Data: events.Request{Status: 200, OK: false, LatencyMS: 5, Error: "truncated body", PodIP: "10.1.2.3"}},
	}, {
		name: "explicit ok overrides the default",
		row:  `{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:05Z","latency_ms":5,"status":200,"ok":false}`,
		want: request{ID: "request/ingest/lab/#", OccurredAt: "2025-03-01T10:00:05Z",
			Data: events.Request{Status: 200, OK: false, LatencyMS: 5, PodIP: "10.1.2.3"}},
	}, {
		name: "explicit id",
		row:  `{"id":"run7-000042","pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:06Z","latency_ms":0,"status":302}`,
		want: request{ID: "request/ingest/lab/run7-000042", OccurredAt: "2025-03-01T10:00:06Z",
			Data: events.Request{Status: 302, OK: true, LatencyMS: 0, PodIP: "10.1.2.3"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			envs, rejected, err := ingest.ParseNDJSON(strings.NewReader(tt.row+"\n"), options())
			if err != nil || len(rejected) != 0 {
				t.Fatalf("ParseNDJSON: err %v, rejected %v", err, lineErrors(rejected))
			}
			if diff := cmp.Diff([]request{tt.want}, requests(t, envs, "loadgen")); diff != "" {
				t.Errorf("envelopes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseNDJSONBadRows(t *testing.T) {
	ok := `{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":1,"status":200}`
	ip := `"pod_ip":"10.1.2.3",`
	at := `"sent_at":"2025-03-01T10:00:00Z",`
	input := strings.Join([]string{
		/* 1 */ ok,
		/* 2 */ `pod_ip=10.1.2.3 latency=1`,
		/* 3 */ `{"pod_ip":"10.1.2.3","latency_ms":1}`,
		/* 4 */ `{` + at + `"latency_ms":1,"status":200}`,
		/* 5 */ `{"pod_uid":"llm-0",` + at + `"latency_ms":1}`,
		/* 6 */ `{` + ip + at + `"latency_ms":-3}`,
		/* 7 */ `{"pod_uid":"` + uid + `","pod_name":"llm-0",` + at + `"latency_ms":1}`,
		/* 8 */ `{"pod_uid":"` + uid + `","pod_namespace":"infer",` + at + `"latency_ms":1}`,
		/* 9 */ ``,
		/* 10 */ `   `,
		/* 11 */ `{` + ip + at + `"status":200}`,
		/* 12 */ `{` + ip + `"sent_at":"yesterday","latency_ms":1}`,
		/* 13 */ `{` + ip + at + `"received_at":"2025-03-01T09:59:59Z"}`,
		/* 14 */ `{` + ip + at + `"latency_ms":"fast"}`,
		/* 15 */ `{` + ip + at + `"latency":1}`,
		/* 16 */ `{"pod_ip":"llm-0.infer",` + at + `"latency_ms":1}`,
		/* 17 */ `{"pod_name":"llm-0",` + ip + at + `"latency_ms":1}`,
		/* 18 */ `[` + ok + `]`,
		/* 19 */ `{` + ip + at + `"latency_ms":1} {"more":1}`,
		/* 20 */ `{` + ip + at + `"latency_ms":1,"status":42}`,
		/* 21 */ `{` + ip + at + `"latency_ms":1,"error":"nul \u0000 byte"}`,
		/* 22 */ `{"id":"has space",` + ip + at + `"latency_ms":1}`,
		/* 23 */ `{"pod_ip":"10.1.2.4","sent_at":"2025-03-01T10:00:00Z","latency_ms":1,"status":200}`,
	}, "\r\n") // CRLF line endings are read too
	envs, rejected, err := ingest.ParseNDJSON(strings.NewReader(input), options())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`line 2: not valid JSON`,
		`line 3: sent_at: missing`,
		`line 4: names no pod: give pod_uid (with pod_namespace and pod_name) or pod_ip`,
		`line 5: pod_uid: "llm-0" is not a Kubernetes UID`,
		`line 6: latency_ms: negative (-3)`,
		`line 7: pod_namespace: missing (required with pod_uid)`,
		`line 8: pod_name: missing (required with pod_uid)`,
		`line 11: latency_ms: missing (give latency_ms or received_at)`,
		`line 12: sent_at: not an RFC 3339 time: "yesterday"`,
		`line 13: received_at: 2025-03-01T09:59:59Z is before sent_at`,
		`line 14: latency_ms: want float64, got string`,
		`line 15: json: unknown field "latency"`,
		`line 16: pod_ip: "llm-0.infer" is not an IP address`,
		`line 17: pod_uid: missing (pod_namespace and pod_name need it; without a UID name the pod by pod_ip)`,
		`line 18: want a JSON object, got an array`,
		`line 19: not valid JSON: more after the object`,
		`line 20: status: 42 is not an HTTP status code`,
		`line 21: invalid envelope: contains \u0000, which Postgres jsonb cannot store`,
		`line 22: id: "has space" contains a space or control character`,
	}
	if diff := cmp.Diff(want, lineErrors(rejected)); diff != "" {
		t.Errorf("rejected lines (-want +got):\n%s", diff)
	}
	var podIPs []string
	for _, env := range envs {
		podIPs = append(podIPs, env.Payload.(*events.Request).PodIP)
	}
	if diff := cmp.Diff([]string{"10.1.2.3", "10.1.2.4"}, podIPs); diff != "" {
		t.Errorf("good rows kept beside the bad (-want +got):\n%s", diff)
	}
	for _, le := range rejected {
		if le.Line == 21 && !errors.Is(le, events.ErrInvalid) {
			t.Errorf("line 21: a codec failure should match events.ErrInvalid: %v", le)
		}
	}
}

func TestParseNDJSONLongLine(t *testing.T) {
	row := `{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":1}`
	long := `{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":1,"error":"` + strings.Repeat("x", 2<<20) + `"}`
	envs, rejected, err := ingest.ParseNDJSON(strings.NewReader(long+"\n"+row), options())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"line 1: longer than 1048576 bytes"}, lineErrors(rejected)); diff != "" {
		t.Errorf("rejected (-want +got):\n%s", diff)
	}
	if len(envs) != 1 {
		t.Errorf("got %d envelopes, want the row after the long line (without a final newline)", len(envs))
	}
}

func TestParseNDJSONReadError(t *testing.T) {
	row := `{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":1}` + "\n"
	r := iotest.TimeoutReader(strings.NewReader(row + row)) // fails on its second read
	_, _, err := ingest.ParseNDJSON(r, options())
	if err == nil || !strings.Contains(err.Error(), iotest.ErrTimeout.Error()) {
		t.Errorf("err = %v, want the read error", err)
	}
}

func TestParseNDJSONBadOptions(t *testing.T) {
	for _, o := range []ingest.Options{{}, {Cluster: "lab.one"}} {
		if _, _, err := ingest.ParseNDJSON(strings.NewReader(""), o); err == nil {
			t.Errorf("cluster %q: want an error", o.Cluster)
		}
	}
}

func TestNDJSONIDs(t *testing.T) {
	rows := []string{
		`{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":200}`,
		`{"pod_ip":"10.1.2.4","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":200}`,
		`{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00.000000001Z","latency_ms":10,"status":200}`,
		`{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":10.001,"status":200}`,
		`{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":201}`,
		`{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":200,"ok":false}`,
		`{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":200,"error":"x"}`,
		`{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":200,"target":"/a"}`,
		`{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":200,"method":"GET"}`,
		`{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":200,"bytes_in":1}`,
		`{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":200,"bytes_out":1}`,
		`{"pod_uid":"` + uid + `","pod_namespace":"infer","pod_name":"llm-0","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":200}`,
		`{"id":"a","pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":200}`,
	}
	input := strings.Join(rows, "\n")
	first, rejected, err := ingest.ParseNDJSON(strings.NewReader(input), options())
	if err != nil || len(rejected) != 0 {
		t.Fatalf("err %v, rejected %v", err, lineErrors(rejected))
	}
	second, _, _ := ingest.ParseNDJSON(strings.NewReader(input), options())
	if diff := cmp.Diff(ids(first), ids(second)); diff != "" {
		t.Errorf("the same input twice gave other ids (-first +second):\n%s", diff)
	}
	seen := map[string]int{}
	for i, id := range ids(first) {
		if j, dup := seen[id]; dup {
			t.Errorf("rows %d and %d differ but share id %s", j+1, i+1, id)
		}
		seen[id] = i
	}

	// Spellings of the same result are the same request.
	same := []string{
		rows[0],
		`{"status":200,"latency_ms":10.0,"sent_at":"2025-03-01T11:00:00+01:00","pod_ip":"10.1.2.3"}`,
		`{"pod_ip":"::ffff:10.1.2.3","sent_at":"2025-03-01T10:00:00Z","received_at":"2025-03-01T10:00:00.010Z","status":200,"ok":true}`,
	}
	envs, rejected, err := ingest.ParseNDJSON(strings.NewReader(strings.Join(same, "\n")), options())
	if err != nil || len(rejected) != 0 {
		t.Fatalf("err %v, rejected %v", err, lineErrors(rejected))
	}
	// Pinned: a changed id scheme would store every re-imported result a second time.
	const golden = "request/ingest/lab/c174839fb2f6cf9533906ceeb422f0e4"
	if diff := cmp.Diff([]string{golden, golden, golden}, ids(envs)); diff != "" {
		t.Errorf("ids of one result spelt three ways (-want +got):\n%s", diff)
	}
	// The id the same row had before ids included the cluster, pinned as it was then.
	results, _, _ := ingest.Parse(ingest.FormatNDJSON, strings.NewReader(same[0]), options())
	if len(results) != 1 || results[0].LegacyID != "request/ingest/c174839fb2f6cf9533906ceeb422f0e4" || results[0].Line != 1 {
		t.Errorf("legacy id: %+v", results)
	}
}

// The cluster is part of every id (escaped, so a '/' in it cannot make two ids one); the
// source is not: the same result from a relabelled importer is the same result.
func TestNDJSONIDsIncludeTheCluster(t *testing.T) {
	rows := strings.Join([]string{
		`{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":200}`,
		`{"id":"b/c","pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":10,"status":200}`,
	}, "\n")
	parse := func(cluster, source string) []ingest.Result {
		t.Helper()
		o := options()
		o.Cluster, o.Source = cluster, source
		results, rejected, err := ingest.Parse(ingest.FormatNDJSON, strings.NewReader(rows), o)
		if err != nil || len(rejected) != 0 || len(results) != 2 {
			t.Fatalf("cluster %q: %d results, err %v, rejected %v", cluster, len(results), err, lineErrors(rejected))
		}
		return results
	}
	var got []string
	for _, c := range []string{"lab", "bar", "a/b", "a"} {
		for _, r := range parse(c, "loadgen") {
			got = append(got, r.Envelope.ID+" legacy "+r.LegacyID)
		}
	}
	want := []string{
		"request/ingest/lab/c174839fb2f6cf9533906ceeb422f0e4 legacy request/ingest/c174839fb2f6cf9533906ceeb422f0e4",
		"request/ingest/lab/b/c legacy request/ingest/b/c",
		"request/ingest/bar/c174839fb2f6cf9533906ceeb422f0e4 legacy request/ingest/c174839fb2f6cf9533906ceeb422f0e4",
		"request/ingest/bar/b/c legacy request/ingest/b/c",
		"request/ingest/a%2Fb/c174839fb2f6cf9533906ceeb422f0e4 legacy request/ingest/c174839fb2f6cf9533906ceeb422f0e4",
		"request/ingest/a%2Fb/b/c legacy request/ingest/b/c",
		"request/ingest/a/c174839fb2f6cf9533906ceeb422f0e4 legacy request/ingest/c174839fb2f6cf9533906ceeb422f0e4",
		"request/ingest/a/b/c legacy request/ingest/b/c",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ids per cluster (-want +got):\n%s", diff)
	}
	if a, b := parse("lab", "loadgen"), parse("lab", "other"); a[0].Envelope.ID != b[0].Envelope.ID {
		t.Errorf("the source changed the id: %s, %s", a[0].Envelope.ID, b[0].Envelope.ID)
	}
}

// A cluster name too long to fit in ids is refused up front; a client id that does not fit
// with the cluster is refused on its line.
func TestIDLengthLimits(t *testing.T) {
	o := options()
	o.Cluster = strings.Repeat("c", ingest.MaxClusterInID+1)
	if _, _, err := ingest.ParseNDJSON(strings.NewReader(""), o); err == nil || !strings.Contains(err.Error(), "request ids include it") {
		t.Errorf("a %d-byte cluster: err %v", len(o.Cluster), err)
	}
	o.Cluster = strings.Repeat("c", ingest.MaxClusterInID)
	fits := strings.Repeat("i", events.MaxIDLen-len("request/ingest/")-ingest.MaxClusterInID-1)
	input := `{"id":"` + fits + `","pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":1}` + "\n" +
		`{"id":"` + fits + `x","pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":1}`
	envs, rejected, err := ingest.ParseNDJSON(strings.NewReader(input), o)
	if err != nil || len(envs) != 1 || len(envs[0].ID) != events.MaxIDLen {
		t.Fatalf("err %v, %d envelopes", err, len(envs))
	}
	want := []string{"line 2: id: longer than 84 bytes (with the cluster, request ids are at most 200)"}
	if diff := cmp.Diff(want, lineErrors(rejected)); diff != "" {
		t.Errorf("rejected (-want +got):\n%s", diff)
	}
}
