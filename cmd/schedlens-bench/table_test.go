package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
)

// TestTable writes the files `make bench` leaves — the runs' -json figures, a real CPU profile
// of this process decoding envelopes, the render test's log line — and checks that -table prints
// each of issue 27's rows from them with its goal and verdict, and says "not measured" (with
// why) for the run whose file is missing.
func TestTable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text+"\n"+string(b)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var r report
	r.Mixes = []mixReport{{Mix: "requests", Sizes: []sizeReport{{N: 50000, VsCopyFrom: 0.9}}},
		{Mix: "pods", Sizes: []sizeReport{
			{N: 50000, VsCopyFrom: 0.45, EndToEnd: figure{PerSecond: 45000}, CopyFrom: figure{PerSecond: 100000}, BareCopy: &figure{PerSecond: 102273}, VsBareCopy: 0.44},
			{N: 200000, VsCopyFrom: 0.6, EndToEnd: figure{PerSecond: 60000}, CopyFrom: figure{PerSecond: 100000}},
			{N: 1000000, VsCopyFrom: 0.71, EndToEnd: figure{PerSecond: 71000}, CopyFrom: figure{PerSecond: 100000}, BareCopy: &figure{PerSecond: 129091}, VsBareCopy: 0.55}}}}
	write("throughput.txt", "schedlens-bench: sizes …", r)
	write("reads.txt", "schedlens-bench -reads …", readReport{Figures: []readFigure{{Endpoint: "comparison", P95MS: 30}, {Endpoint: readFresh, N: 30, P50MS: 90, P95MS: 140}}})
	var l lagReport
	l.Rate, l.AckedRate, l.Lag.P99, l.Pending.KeptUp = 20000, 19950, 0.31, true
	write("lag.txt", "schedlens-bench -lag …", l)
	write("memory-10000.txt", "schedlens-bench -memory …", memoryReport10k{Collector: procMemory{RSS: 80e6, Peak: 96e6}})
	ui := "=== RUN   TestThousandPodRunRender\n    render_test.go:39: 1,000-pod run (1251 lanes): DOM ready and lanes on screen drawn 1712 ms after navigation start (median of 3: 1700 / 1712 / 1800 ms); frame done by 1750 ms; page received by 300 ms; 50 lanes in the DOM at that frame\n"
	if err := os.WriteFile(filepath.Join(dir, "ui.txt"), []byte(ui), 0o644); err != nil {
		t.Fatal(err)
	}
	// A real profile: this process decoding the eventgen mix for a while.
	envs := eventgen.Generate(eventgen.Default())
	lines := make([][]byte, len(envs))
	for i, e := range envs {
		b, err := events.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = b
	}
	var prof bytes.Buffer
	if err := pprof.StartCPUProfile(&prof); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		for _, b := range lines {
			if _, err := events.Decode(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	pprof.StopCPUProfile()
	if err := os.WriteFile(filepath.Join(dir, "cpu-pods-200000.pprof"), prof.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	if err := run(t.Context(), []string{"schedlens-bench", "-table", dir}, func(string) string { return "" }, &out, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Log(text)
	for _, want := range []string{
		"pod mix end to end ÷ raw CopyFrom, 50 k events  ", "0.45 (45000 vs 100000 events/s)", "≥ 0.7",
		"pod mix end to end ÷ raw CopyFrom, 1 M events", "0.71 (71000 vs 100000 events/s)",
		"pod mix end to end ÷ bare psql \\copy, 50 k events", "0.44 (45000 vs 102273 events/s)", "≥ 0.5",
		"pod mix end to end ÷ bare psql \\copy, 1 M events", "0.55 (71000 vs 129091 events/s)",
		"pod mix end to end ÷ bare psql \\copy, 200 k events  ", "(no psql client in that run)",
		"correlator timed phase's CPU in events.Decode, pod mix 200 k", "≤ 20 %",
		"first comparison on a fresh api replica (300 runs)", "p50 90 / p95 140 ms (n 30)", "p95 < 200 ms",
		"lag, collector publish → stored at 20 k/s offered", "p99 310 ms (19950/s acked, kept up)", "p99 < 250 ms at 20 k/s",
		"collector memory, 10 k pods in scope", "peak 96 MB, settled 80 MB", "peak RSS ≤ 100 MB",
		"collector memory, 50 k pods in scope", "memory-50000.txt: no such file",
		"UI run page, 1,000 pods, headless chromium", "lanes on screen drawn after 1712 ms (median of 3)", "< 1 s",
		"UI run page, 5,000 pods, headless chromium", "ui.txt has no 5,000-pod render",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	verdicts := map[string]string{"50 k events": "NOT MET", "1 M events": "met", "fresh api replica": "met", "at 20 k/s offered": "NOT MET",
		"10 k pods in scope": "met", "1,000 pods": "NOT MET", "events.Decode": "NOT MET"}
	for _, line := range strings.Split(text, "\n") {
		for key, verdict := range verdicts {
			if strings.Contains(line, key) && !strings.HasSuffix(strings.TrimSpace(line), verdict) {
				t.Errorf("row %q: want verdict %s", line, verdict)
			}
		}
	}
	// The profile was nothing but decoding: its share is most of it, read from the real profile.
	share, _, err := decodeShare(filepath.Join(dir, "cpu-pods-200000.pprof"))
	if err != nil || share < 0.5 {
		t.Errorf("decode share of a profile of decoding = %.2f, %v; want most of it", share, err)
	}
}

// memoryReport10k is the part of the memory run's -json figures the table reads.
type memoryReport10k struct {
	Collector procMemory `json:"collector_process"`
}
