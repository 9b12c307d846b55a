package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/schedlens/schedlens/internal/config"
)

// The table (-table DIR) is issue 27's table of speed figures with the goal beside each, read
// from what `make bench` left in DIR, one file per run:
//
//	throughput.txt  schedlens-bench -json -cpu-profile DIR/cpu    (the scaling runs, with
//	                                                             the bare psql \copy)
//	cpu-pods-*.pprof                                             (their timed phases' CPU)
//	reads.txt       schedlens-bench -reads -json
//	lag.txt         schedlens-bench -lag -lag-rate 20000 -json
//	memory-N.txt    schedlens-bench -memory -memory-pods N -json (N = 10000, 50000)
//	ui.txt          go test ./internal/ui -run 'Test(Thousand|FiveThousand)PodRunRender$' -v
//
// A run's file ends with its figures as one JSON object (-json). A figure whose file is missing
// is printed as not measured; nothing is asserted.

type tableOptions struct{ dir string }

func (t *tableOptions) define(fs *config.FlagSet) {
	fs.String(&t.dir, "table", "", "", "instead of running: print issue 27's table of figures and goals from the runs `make bench` wrote to this directory")
}

// tableRow is one line of the table.
type tableRow struct{ what, figure, goal, verdict string }

// decodeFunc is the function whose share of the correlator's CPU the table reports.
const decodeFunc = "github.com/schedlens/schedlens/internal/events.Decode"

func runTable(dir string, stdout io.Writer) error {
	var rows []tableRow
	rows = append(rows, ingestRows(dir)...)
	rows = append(rows, decodeRows(dir)...)
	rows = append(rows, freshRow(dir))
	rows = append(rows, lagRow(dir))
	rows = append(rows, memoryRows(dir)...)
	rows = append(rows, uiRows(dir)...)
	fmt.Fprintf(stdout, "schedlens-bench -table %s: issue 27's figures, each beside its goal (printed, not asserted)\n", dir)
	fmt.Fprintf(stdout, "  %-62s %-44s %-24s %s\n", "what", "measured", "goal", "")
	for _, r := range rows {
		fmt.Fprintf(stdout, "  %-62s %-44s %-24s %s\n", r.what, r.figure, r.goal, r.verdict)
	}
	return nil
}

// runJSON decodes the last line of a run's output that is a JSON object into v.
func runJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 && line[0] == '{' {
			last = slices.Clone(line)
		}
	}
	if last == nil {
		return fmt.Errorf("%s: no JSON figures (was the run given -json?)", path)
	}
	return json.Unmarshal(last, v)
}

func notMeasured(what, goal string, err error) tableRow {
	return tableRow{what, "not measured", goal, "(" + err.Error() + ")"}
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT MET"
}

func ingestRows(dir string) []tableRow {
	const goal = "≥ 0.7"
	var r report
	if err := runJSON(filepath.Join(dir, "throughput.txt"), &r); err != nil {
		return []tableRow{notMeasured("pod mix end to end ÷ raw CopyFrom", goal, err)}
	}
	var out []tableRow
	for _, m := range r.Mixes {
		if m.Mix != "pods" {
			continue
		}
		for _, s := range m.Sizes {
			out = append(out, tableRow{fmt.Sprintf("pod mix end to end ÷ raw CopyFrom, %s events", humanCount(s.N)),
				fmt.Sprintf("%.2f (%.0f vs %.0f events/s)", s.VsCopyFrom, s.EndToEnd.PerSecond, s.CopyFrom.PerSecond), goal, met(s.VsCopyFrom >= 0.7)})
		}
	}
	if len(out) == 0 {
		return []tableRow{notMeasured("pod mix end to end ÷ raw CopyFrom", goal, fmt.Errorf("no pods mix in throughput.txt"))}
	}
	return append(out, bareCopyRows(r)...)
}

// bareCopyRows are the outside measure: the pod mix end to end over psql's \copy of
// the same envelope lines into a bare (id text primary key, body jsonb) table.
func bareCopyRows(r report) []tableRow {
	const goal = "≥ 0.5"
	var out []tableRow
	for _, m := range r.Mixes {
		if m.Mix != "pods" {
			continue
		}
		for _, s := range m.Sizes {
			what := fmt.Sprintf("pod mix end to end ÷ bare psql \\copy, %s events", humanCount(s.N))
			if s.BareCopy == nil {
				out = append(out, notMeasured(what, goal, errors.New("no psql client in that run")))
				continue
			}
			out = append(out, tableRow{what, fmt.Sprintf("%.2f (%.0f vs %.0f events/s)", s.VsBareCopy, s.EndToEnd.PerSecond, s.BareCopy.PerSecond),
				goal, met(s.VsBareCopy >= 0.5)})
		}
	}
	return out
}

// decodeShare is the share of a CPU profile's samples whose stack holds decodeFunc.
func decodeShare(path string) (share float64, total float64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	idx := len(p.SampleType) - 1 // cpu nanoseconds, after samples
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			idx = i
		}
	}
	var all, in int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		all += v
	stack:
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if l.Function != nil && l.Function.Name == decodeFunc {
					in += v
					break stack
				}
			}
		}
	}
	if all == 0 {
		return 0, 0, fmt.Errorf("%s: no samples", path)
	}
	return float64(in) / float64(all), float64(all) / 1e9, nil
}

func decodeRows(dir string) []tableRow {
	const goal = "≤ 20 %"
	what := "correlator timed phase's CPU in events.Decode"
	files, _ := filepath.Glob(filepath.Join(dir, "cpu-pods-*.pprof"))
	if len(files) == 0 {
		return []tableRow{notMeasured(what, goal, fmt.Errorf("no cpu-pods-*.pprof in %s", dir))}
	}
	n := func(f string) int {
		v, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "cpu-pods-"), ".pprof"))
		return v
	}
	slices.SortFunc(files, func(a, b string) int { return n(a) - n(b) })
	var out []tableRow
	for _, f := range files {
		share, secs, err := decodeShare(f)
		if err != nil {
			out = append(out, notMeasured(what, goal, err))
			continue
		}
		out = append(out, tableRow{fmt.Sprintf("%s, pod mix %s", what, humanCount(n(f))),
			fmt.Sprintf("%.0f %% of %.2f s", 100*share, secs), goal, met(share <= 0.20)})
	}
	return out
}

func freshRow(dir string) tableRow {
	const goal = "p95 < 200 ms"
	what := "first comparison on a fresh api replica (300 runs)"
	var r readReport
	if err := runJSON(filepath.Join(dir, "reads.txt"), &r); err != nil {
		return notMeasured(what, goal, err)
	}
	for _, f := range r.Figures {
		if f.Endpoint == readFresh {
			return tableRow{what, fmt.Sprintf("p50 %.0f / p95 %.0f ms (n %d)", f.P50MS, f.P95MS, f.N), goal, met(f.P95MS < 200)}
		}
	}
	return notMeasured(what, goal, fmt.Errorf("reads.txt has no %q", readFresh))
}

func lagRow(dir string) tableRow {
	const goal = "p99 < 250 ms at 20 k/s"
	what := "lag, collector publish → stored"
	var r lagReport
	if err := runJSON(filepath.Join(dir, "lag.txt"), &r); err != nil {
		return notMeasured(what, goal, err)
	}
	kept := "kept up"
	if !r.Pending.KeptUp {
		kept = "fell behind"
	}
	return tableRow{fmt.Sprintf("%s at %s/s offered", what, humanCount(r.Rate)),
		fmt.Sprintf("p99 %.0f ms (%.0f/s acked, %s)", 1000*r.Lag.P99, r.AckedRate, kept), goal,
		met(r.Rate >= 20000 && r.Lag.P99 < 0.25 && r.Pending.KeptUp)}
}

func memoryRows(dir string) []tableRow {
	var out []tableRow
	for _, n := range []int{10000, 50000} {
		target := float64(targetCollectorRSS(n)) / 1e6
		goal := fmt.Sprintf("peak RSS ≤ %.0f MB", target)
		what := fmt.Sprintf("collector memory, %s pods in scope", humanCount(n))
		var r map[string]any
		if err := runJSON(filepath.Join(dir, fmt.Sprintf("memory-%d.txt", n)), &r); err != nil {
			out = append(out, notMeasured(what, goal, err))
			continue
		}
		peak, settled := number(r, "collector_process", "vm_hwm_bytes"), number(r, "collector_process", "vm_rss_bytes")
		if peak == 0 {
			out = append(out, notMeasured(what, goal, fmt.Errorf("memory-%d.txt has no collector_process.vm_hwm_bytes", n)))
			continue
		}
		out = append(out, tableRow{what, fmt.Sprintf("peak %.0f MB, settled %.0f MB", peak/1e6, settled/1e6), goal, met(peak/1e6 <= target)})
	}
	return out
}

// number reads a number at path in a decoded JSON object; 0 when absent.
func number(v map[string]any, path ...string) float64 {
	var cur any = v
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0
		}
		cur = m[k]
	}
	f, _ := cur.(float64)
	return f
}

// uiDrawn is the render tests' log line: its pods and the median time to the first frame with
// the lanes on screen drawn.
var uiDrawn = regexp.MustCompile(`([\d,]+)-pod run \((\d+) lanes\): DOM ready and lanes on screen drawn (\d+) ms`)

func uiRows(dir string) []tableRow {
	goals := map[string]string{"1,000": "< 1 s", "5,000": "< 2 s"}
	limits := map[string]float64{"1,000": 1000, "5,000": 2000}
	b, err := os.ReadFile(filepath.Join(dir, "ui.txt"))
	var out []tableRow
	for _, pods := range []string{"1,000", "5,000"} {
		what := "UI run page, " + pods + " pods, headless chromium"
		if err != nil {
			out = append(out, notMeasured(what, goals[pods], err))
			continue
		}
		var found bool
		for _, m := range uiDrawn.FindAllStringSubmatch(string(b), -1) {
			if m[1] != pods {
				continue
			}
			ms, _ := strconv.ParseFloat(m[3], 64)
			out = append(out, tableRow{what, fmt.Sprintf("lanes on screen drawn after %.0f ms (median of 3)", ms), goals[pods], met(ms < limits[pods])})
			found = true
		}
		if !found {
			out = append(out, notMeasured(what, goals[pods], fmt.Errorf("ui.txt has no %s-pod render", pods)))
		}
	}
	return out
}

// humanCount writes 50000 as 50 k, 1000000 as 1 M.
func humanCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%d M", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%d k", n/1000)
	}
	return strconv.Itoa(n)
}
