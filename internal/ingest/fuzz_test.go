package ingest_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/ingest"
)

// checkParse holds the properties of a line format for one input: no error from an in-memory
// reader; rejected line numbers within the input, increasing; every envelope valid for the
// codec, non-negative in its counts; the same result twice; and each accepted line converted
// alone to the same id (lines are independent).
func checkParse(t *testing.T, format ingest.Format, body []byte) {
	results, rejected, err := ingest.Parse(format, bytes.NewReader(body), options())
	if err != nil {
		t.Fatalf("parse of an in-memory body: %v", err)
	}
	lines := bytes.Count(body, []byte("\n")) + 1
	last := 0
	for _, le := range rejected {
		if le.Line <= last || le.Line > lines || le.Err == nil {
			t.Fatalf("rejected line %d (after %d, of %d): %v", le.Line, last, lines, le.Err)
		}
		last = le.Line
	}
	if len(results)+len(rejected) > lines {
		t.Fatalf("%d results and %d rejections for %d lines", len(results), len(rejected), lines)
	}
	for _, r := range results {
		b, err := events.Encode(r.Envelope)
		if err != nil {
			t.Fatalf("line %d: encode: %v", r.Line, err)
		}
		env, err := events.Decode(b)
		if err != nil {
			t.Fatalf("line %d: an accepted line is an invalid envelope: %v\n%s", r.Line, err, b)
		}
		req := env.Payload.(*events.Request)
		if req.LatencyMS < 0 || req.BytesIn < 0 || req.BytesOut < 0 || req.Status < 0 {
			t.Fatalf("line %d: negative count in %+v", r.Line, req)
		}
		if env.Pod == nil && req.PodIP == "" {
			t.Fatalf("line %d: attributed to nothing", r.Line)
		}
	}
	again, rejectedAgain, _ := ingest.Parse(format, bytes.NewReader(body), options())
	if diff := cmp.Diff(resultIDs(results), resultIDs(again)); diff != "" {
		t.Fatalf("two parses differ:\n%s", diff)
	}
	if len(rejected) != len(rejectedAgain) {
		t.Fatalf("%d then %d rejections", len(rejected), len(rejectedAgain))
	}
	if bytes.Contains(body, []byte("\uFEFF")) {
		return // a byte order mark is dropped from the first line only
	}
	split := bytes.Split(body, []byte("\n"))
	for _, r := range results {
		alone, _, _ := ingest.Parse(format, bytes.NewReader(split[r.Line-1]), options())
		if len(alone) != 1 || alone[0].Envelope.ID != r.Envelope.ID {
			t.Fatalf("line %d converts to %v alone, %s in the body", r.Line, resultIDs(alone), r.Envelope.ID)
		}
	}
}

func resultIDs(results []ingest.Result) []string {
	var out []string
	for _, r := range results {
		out = append(out, r.Envelope.ID)
	}
	return out
}

// FuzzParseNDJSON: POST /v1/ingest/requests and `collector import ndjson` bodies.
func FuzzParseNDJSON(f *testing.F) {
	for i := range 3 {
		f.Add([]byte(goodRow(i) + "\n" + goodRow(i+1)))
	}
	for _, row := range []string{
		`{"pod_uid":"` + uid + `","pod_namespace":"infer","pod_name":"llm-0","sent_at":"2025-03-01T10:00:00.123456789Z","latency_ms":41.5,"status":200,"target":"http://llm/v1/completions","method":"POST","bytes_in":512,"bytes_out":64}`,
		`{"pod_ip":"fd00::7","sent_at":"2025-03-01T11:00:00.5+01:00","received_at":"2025-03-01T11:00:00.7505+01:00","status":200}`,
		`{"pod_ip":"::ffff:10.1.2.3","sent_at":"2025-03-01T10:00:02Z","latency_ms":3,"status":204,"ok":false}`,
		`{"id":"x","pod_ip":"10.1.2.3","sent_at":"1999-03-01T10:00:02Z","latency_ms":-3}`,
		`{"pod_uid":"` + uid + `","sent_at":"2025-03-01T10:00:02Z","latency_ms":1e400}` + "\r\n\n[1]\n{\"sent_at\":1}",
	} {
		f.Add([]byte(row))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkParse(t, ingest.FormatNDJSON, body) })
}

// FuzzParseVegeta: `vegeta encode -to json` output for `collector import vegeta`.
func FuzzParseVegeta(f *testing.F) {
	file, err := os.Open(filepath.Join("testdata", "vegeta.json"))
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	var all []byte
	for sc.Scan() {
		f.Add(bytes.Clone(sc.Bytes()))
		all = append(append(all, sc.Bytes()...), '\n')
	}
	f.Add(all)
	f.Add([]byte(`{"seq":1,"code":200,"timestamp":"2026-11-30T07:21:06Z","latency":-5,"bytes_in":-1,"method":"GET","url":"http://[fd00::1]:80/x"}`))
	f.Add([]byte(`{"seq":1,"code":99999999999,"timestamp":"2026-11-30T07:21:06Z","latency":5,"url":"http://user:pw@10.0.0.1/"}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkParse(t, ingest.FormatVegeta, body) })
}
