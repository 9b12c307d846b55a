package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

// TestStoredComparisonServesAFreshProcess checks the comparisons and run slices kept in
// Postgres (stored.go): a process that never read the experiment (a second DB on the same
// database, its caches empty) serves the comparison one row holds — equal to building it from
// every pod, snapshot and request — without computing a run slice or building, and the input
// from the stored run slices alone; after the rest of the experiment is stored, a fresh process
// builds again, still equal to the direct build; WarmComparisons builds only what changed; one run's rows rewritten, a fresh process computes that run alone;
// and what is served really is what is stored (a stored body changed
// by hand is served as changed while its key holds, and a row of another format is not used).
func TestStoredComparisonServesAFreshProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	first := pgtest.Open(t, url)
	cfg := eventgen.Default()
	cfg.Runs = 5
	cfg.OversizedRuns = 1 // each run's never-scheduled pod is deleted a run later: finished runs end every pod
	envs := eventgen.Generate(cfg)
	// The last run stored last: the first part holds four whole runs and part of the fifth.
	cut := len(envs) * 9 / 10
	ingestInBatches(t, first, envs[:cut], 200)

	direct := func(stage string) string {
		t.Helper()
		in, err := first.ComparisonInputDirect(ctx, cfg.Experiment, "")
		if err != nil {
			t.Fatalf("%s: direct: %v", stage, err)
		}
		c, err := compare.Build(in, "")
		if err != nil {
			t.Fatal(err)
		}
		return jsonOf(t, c)
	}
	serve := func(stage string, db *store.DB) string {
		t.Helper()
		c, err := db.Comparison(ctx, cfg.Experiment, "", "")
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		return jsonOf(t, c)
	}
	stats := func(stage string, db *store.DB, want store.StoredStats) {
		t.Helper()
		if got := db.StoredStats(); got != want {
			t.Errorf("%s: stats %+v, want %+v", stage, got, want)
		}
	}

	want := direct("first part")
	if n, err := first.WarmComparisons(ctx, false); err != nil || n != 1 {
		t.Fatalf("WarmComparisons = %d, %v; want 1 built", n, err)
	}
	if n, err := first.WarmComparisons(ctx, false); err != nil || n != 0 {
		t.Fatalf("WarmComparisons again = %d, %v; want 0 built (nothing changed)", n, err)
	}
	runs := first.StoredStats().SlicesComputed
	if runs < 5 {
		t.Fatalf("the first process computed %d run slices, want one per run (5 or more)", runs)
	}

	fresh := pgtest.Open(t, url)
	if got := serve("fresh process", fresh); got != want {
		t.Fatalf("fresh process: comparison differs from the direct build\nserved %s\ndirect %s", got, want)
	}
	stats("fresh process", fresh, store.StoredStats{Loaded: 1})
	in, err := fresh.ComparisonInput(ctx, cfg.Experiment, "")
	if err != nil {
		t.Fatal(err)
	}
	wantIn, err := fresh.ComparisonInputDirect(ctx, cfg.Experiment, "")
	if err != nil {
		t.Fatal(err)
	}
	if g, w := jsonOf(t, in), jsonOf(t, wantIn); g != w {
		t.Fatalf("input from stored run slices differs from the direct read\nstored %s\ndirect %s", g, w)
	}
	stats("fresh process's input", fresh, store.StoredStats{SlicesLoaded: runs, Loaded: 1})

	// The rest, shuffled: late results and snapshots, heartbeats (which change every run's
	// fingerprint: the scope watches are part of it).
	rest := envs[cut:]
	shuffle(rest, 5, 8)
	ingestInBatches(t, first, rest, 200)
	want = direct("everything")
	later := pgtest.Open(t, url)
	if got := serve("after the rest", later); got != want {
		t.Fatalf("after the rest: comparison differs from the direct build\nserved %s\ndirect %s", got, want)
	}
	if st := later.StoredStats(); st.Built != 1 || st.SlicesComputed+st.SlicesLoaded != runs {
		t.Errorf("after the rest: %+v; want %d run slices computed or loaded, one build", st, runs)
	}
	// One run's pod rows rewritten (as a late result attributed to one of its pods does): a
	// fresh process computes that run alone and reads the others' slices.
	if n, err := first.Exec(ctx, `UPDATE pods SET exp_run = exp_run WHERE exp_run = '3'`); err != nil || n == 0 {
		t.Fatalf("touch run 3: %d rows, %v", n, err)
	}
	one := pgtest.Open(t, url)
	if got := serve("one run rewritten", one); got != want {
		t.Fatalf("one run rewritten: comparison differs from the direct build\nserved %s\ndirect %s", got, want)
	}
	stats("one run rewritten", one, store.StoredStats{SlicesComputed: 1, SlicesLoaded: runs - 1, Built: 1})
	if n, err := first.WarmComparisons(ctx, false); err != nil || n != 0 {
		t.Errorf("WarmComparisons after another process stored the same state = %d, %v; want 0 built", n, err)
	}

	// A collector's heartbeat rewrites its scope watch's row: only the runs with a pod not ended
	// read it (pod_timeline); the finished runs keep their stored slices.
	if n, err := first.Exec(ctx, `UPDATE scope_watches SET live_until = live_until + interval '1 second'`); err != nil || n == 0 {
		t.Fatalf("heartbeat: %d watches, %v", n, err)
	}
	open := int64(countRows(t, url, `SELECT count(DISTINCT COALESCE(exp_run, '')) FROM pods WHERE exp_name = 'day20' AND ended_at IS NULL AND scope_key IS NOT NULL`))
	if open == 0 || open >= runs {
		t.Fatalf("%d of %d runs have a pod not ended: the check needs some of each", open, runs)
	}
	want = direct("after a heartbeat")
	beat := pgtest.Open(t, url)
	if got := serve("after a heartbeat", beat); got != want {
		t.Fatalf("after a heartbeat: comparison differs from the direct build\nserved %s\ndirect %s", got, want)
	}
	stats("after a heartbeat", beat, store.StoredStats{SlicesComputed: open, SlicesLoaded: runs - open, Built: 1})

	// What a fresh process serves is the stored row: a body changed by hand (its key unchanged)
	// is served as it is.
	if _, err := first.Exec(ctx, `UPDATE stored_comparisons SET body = convert_to(replace(convert_from(body, 'UTF8'), '"experiment":"day20"', '"experiment":"tampered"'), 'UTF8')`); err != nil {
		t.Fatal(err)
	}
	c, err := pgtest.Open(t, url).Comparison(ctx, cfg.Experiment, "", "")
	if err != nil || c.Experiment != "tampered" {
		t.Fatalf("a fresh process served experiment %q (err %v); want the stored row's %q", c.Experiment, err, "tampered")
	}
	// Rows of another format (another build, another idle threshold) are not used.
	if _, err := first.Exec(ctx, `UPDATE stored_comparisons SET key = sha256(key); UPDATE run_slices SET format = 'another build'`); err != nil {
		t.Fatal(err)
	}
	other := pgtest.Open(t, url)
	if got := serve("rows of another format", other); got != want {
		t.Fatalf("rows of another format: comparison differs from the direct build\nserved %s\ndirect %s", got, want)
	}
	stats("rows of another format", other, store.StoredStats{SlicesComputed: runs, Built: 1})
	// A process with another GPU idle threshold reads summaries differently: it uses none of
	// the rows the default threshold stored.
	idle := pgtest.Open(t, url, store.WithIdleThreshold(50))
	if _, err := idle.Comparison(ctx, cfg.Experiment, "", ""); err != nil {
		t.Fatal(err)
	}
	stats("another idle threshold", idle, store.StoredStats{SlicesComputed: runs, Built: 1})

	// Maintenance drops the rows of experiments and runs without pods, and only those.
	if _, err := first.Exec(ctx, `INSERT INTO run_slices (experiment, namespace, run, fingerprint, format, body) VALUES
		('gone', '', '1', '', '', ''), ('day20', '', '99', '', '', '');
		INSERT INTO stored_comparisons (experiment, namespace, baseline, key, nodes, body) VALUES ('gone', '', '', '', '{}', '')`); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Maintain(ctx, store.Retention{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int64{
		`SELECT count(*) FROM run_slices WHERE experiment = 'gone' OR run = '99'`: 0,
		`SELECT count(*) FROM stored_comparisons WHERE experiment = 'gone'`:       0,
		`SELECT count(*) FROM run_slices WHERE experiment = 'day20'`:              runs,
		`SELECT count(*) FROM stored_comparisons WHERE experiment = 'day20'`:      1,
	} {
		if n := countRows(t, url, q); int64(n) != want {
			t.Errorf("after maintenance, %s: %d, want %d", q, n, want)
		}
	}
}

// TestWarmComparisonsWaitsForQuiet: as the correlator calls it (onlyQuiet), WarmComparisons
// builds an experiment only when its runs held still since the previous call — not on first
// sight, not while batches keep arriving — and then once.
func TestWarmComparisonsWaitsForQuiet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t)
	cfg := eventgen.Default()
	cfg.Runs = 3
	envs := eventgen.Generate(cfg)
	half := len(envs) / 2
	ingestInBatches(t, db, envs[:half], 200)
	warm := func(stage string, want int) {
		t.Helper()
		if n, err := db.WarmComparisons(ctx, true); err != nil || n != want {
			t.Fatalf("%s: WarmComparisons built %d (%v), want %d", stage, n, err, want)
		}
	}
	warm("first sight", 0)
	ingestInBatches(t, db, envs[half:], 200)
	warm("changed since", 0)
	warm("held still", 1)
	warm("already stored", 0)
}
