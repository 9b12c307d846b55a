package store_test

import (
	"context"
	"errors"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/summary"
)

// countRows runs a count query on a connection of its own.
func countRows(t *testing.T, url, q string, args ...any) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// A copy of an event is stored once however late it comes while its day is kept — across the
// boundary between two days' partitions, with a later day's partition made meanwhile, and from
// a process that never saw the first delivery — and refused (expired, applied to nothing) once
// retention has dropped its day.
func TestIdempotencyAcrossPartitions(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db := pgtest.Open(t, url)
	cfg := eventgen.Default()
	// The experiment's runs straddle midnight: its events fall in two days' partitions.
	cfg.Start = time.Date(2026, 11, 20, 23, 58, 0, 0, time.UTC)
	envs := eventgen.Generate(cfg)
	days := map[string]bool{}
	for _, env := range envs {
		days[env.OccurredAt.UTC().Format(time.DateOnly)] = true
	}
	if len(days) < 2 {
		t.Fatalf("the experiment spans %d day(s); the test needs two", len(days))
	}
	first, err := db.Append(ctx, envs, nil)
	if err != nil {
		t.Fatal(err)
	}
	uids := podUIDs(envs)
	before := timelines(t, db, uids)

	// A day later: the next days' partitions exist, and a second process redelivers all of it.
	if _, err := db.Maintain(ctx, store.Retention{}, cfg.Start.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	other := pgtest.Open(t, url)
	again, err := other.Append(ctx, envs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Inserted != 0 || again.Duplicates != first.Inserted {
		t.Errorf("redelivered: %d inserted, %d duplicates; want 0 and %d", again.Inserted, again.Duplicates, first.Inserted)
	}
	if n := countRows(t, url, `SELECT count(*) FROM events`); n != first.Inserted {
		t.Errorf("%d events stored, want %d", n, first.Inserted)
	}
	if n := countRows(t, url, `SELECT count(DISTINCT tableoid) FROM events`); n < 2 {
		t.Errorf("the events are in %d partition(s), want at least 2", n)
	}
	if diff := cmp.Diff(before, timelines(t, other, uids)); diff != "" {
		t.Errorf("timelines changed by the redelivery (-before +after):\n%s", diff)
	}

	// Retention drops both days (the experiment's events are kept); a copy arriving after that
	// is refused, and changes nothing.
	res, err := db.Maintain(ctx, store.Retention{Events: 24 * time.Hour}, cfg.Start.Add(72*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Dropped) == 0 || res.Kept == 0 {
		t.Fatalf("maintenance dropped %v and kept %d events; want days dropped and the experiment kept", res.Dropped, res.Kept)
	}
	stored := countRows(t, url, `SELECT count(*) FROM events`)
	late, err := other.Append(ctx, envs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if late.Expired != len(envs) || late.Inserted != 0 {
		t.Errorf("after the drop: %d expired, %d inserted; want %d and 0", late.Expired, late.Inserted, len(envs))
	}
	if n := countRows(t, url, `SELECT count(*) FROM events`); n != stored {
		t.Errorf("%d events stored after the late copy, want %d", n, stored)
	}
	if diff := cmp.Diff(before, timelines(t, other, uids)); diff != "" {
		t.Errorf("timelines changed (-before +after the drop and a late copy):\n%s", diff)
	}
}

// retentionWorld is an observed Deployment taken through rollouts, a drain and a node failure
// one a day from 2026-11-20, beside an experiment of 2026-11-20 (its pods long ended), and the
// time five days later.
func retentionWorld(t *testing.T, db *store.DB) (work, exp []*events.Envelope, now time.Time) {
	t.Helper()
	wcfg := eventgen.DefaultWorkload()
	wcfg.Start = time.Date(2026, 11, 20, 2, 0, 0, 0, time.UTC)
	wcfg.Rollouts, wcfg.Drains, wcfg.NodeFailures, wcfg.Gap = 2, 1, 1, 24*time.Hour
	wcfg.RequestsEvery = 10 * time.Minute
	work, _ = eventgen.Workload(wcfg)
	ecfg := eventgen.Default()
	ecfg.Start = time.Date(2026, 11, 20, 4, 32, 0, 0, time.UTC)
	exp = eventgen.Generate(ecfg)
	ingestInBatches(t, db, append(slices.Clone(work), exp...), 500)
	return work, exp, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
}

// Retention drops whole days and the pods that ended before the horizon; every kept pod keeps
// its timeline (milestones, end, counts, its snapshots and Kubernetes events), the experiment
// its every event and its comparison, and a read of a window inside the retention its answer.
func TestRetentionKeepsWhatKeptPodsAndExperimentsRead(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db := pgtest.Open(t, url)
	work, exp, now := retentionWorld(t, db)
	expUIDs, workUIDs := podUIDs(exp), podUIDs(work)
	expBefore := timelines(t, db, expUIDs)
	workBefore := timelines(t, db, workUIDs)
	cmpBefore, err := db.Comparison(ctx, "day20", "", "")
	if err != nil {
		t.Fatal(err)
	}
	horizon := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	from, to := horizon.Add(store.Lookback+time.Hour), now
	disBefore, err := db.Disruptions(ctx, store.WorkloadFilter{}, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(disBefore) == 0 {
		t.Fatal("no disruption inside the retention window: the test checks nothing there")
	}
	eventsBefore := countRows(t, url, `SELECT count(*) FROM events`)

	res, err := db.Maintain(ctx, store.Retention{Events: 72 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Horizon.Equal(horizon) {
		t.Fatalf("horizon %s, want %s", res.Horizon, horizon)
	}
	for _, want := range []string{"events_raw_20261120", "events_raw_20261121", "inventories_20261120", "inventory_pods_20261120"} {
		if !slices.Contains(res.Dropped, want) {
			t.Errorf("dropped %v: %s missing", res.Dropped, want)
		}
	}
	if n := countRows(t, url, `SELECT count(*) FROM events_raw WHERE occurred_at < $1`, horizon); n != 0 {
		t.Errorf("%d raw events older than the horizon left", n)
	}
	if after := countRows(t, url, `SELECT count(*) FROM events`); after >= eventsBefore {
		t.Errorf("%d events before, %d after: nothing dropped", eventsBefore, after)
	}

	// The experiment: every event, every timeline, the comparison.
	if diff := cmp.Diff(expBefore, timelines(t, db, expUIDs)); diff != "" {
		t.Errorf("experiment timelines changed (-before +after):\n%s", diff)
	}
	cmpAfter, err := db.Comparison(ctx, "day20", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(jsonOf(t, cmpBefore), jsonOf(t, cmpAfter)); diff != "" {
		t.Errorf("comparison changed (-before +after):\n%s", diff)
	}

	// The workload: pods that ended before the horizon are gone; the others keep their
	// timeline but the requests and GPU samples of the dropped days.
	var gone, kept int
	for _, uid := range workUIDs {
		b := workBefore[uid]
		after, err := db.Timeline(ctx, uid)
		if b.ObservedUntil != nil && b.ObservedUntil.Before(horizon) {
			gone++
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("pod %s ended %s, before the horizon: timeline %v, want not found", b.Pod.Name, b.ObservedUntil, err)
			}
			continue
		}
		kept++
		if err != nil {
			t.Fatalf("kept pod %s: %v", b.Pod.Name, err)
		}
		want := b
		want.Events = slices.DeleteFunc(slices.Clone(b.Events), func(e align.Event) bool {
			return e.OccurredAt.Before(horizon) && (e.Kind == events.KindRequest || e.Kind == events.KindGPUSample)
		})
		if diff := cmp.Diff(want, after); diff != "" {
			t.Errorf("kept pod %s: timeline changed (-before without the dropped requests +after):\n%s", b.Pod.Name, diff)
		}
	}
	if gone == 0 || kept == 0 {
		t.Fatalf("%d pods dropped and %d kept: the test needs both", gone, kept)
	}
	disAfter, err := db.Disruptions(ctx, store.WorkloadFilter{}, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(jsonOf(t, disBefore), jsonOf(t, disAfter)); diff != "" {
		t.Errorf("disruptions inside the retention window changed (-before +after):\n%s", diff)
	}

	// Maintaining again drops nothing more and changes nothing.
	again, err := db.Maintain(ctx, store.Retention{Events: 72 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Dropped) != 0 || again.Pods != 0 || again.Kept != 0 {
		t.Errorf("second maintenance: dropped %v, %d pods, %d kept; want nothing", again.Dropped, again.Pods, again.Kept)
	}
	if diff := cmp.Diff(expBefore, timelines(t, db, expUIDs)); diff != "" {
		t.Errorf("experiment timelines changed by a second maintenance (-before +after):\n%s", diff)
	}
}

// Of several processes maintaining one store at once, each partition is dropped by exactly
// one, and a process that finds the maintenance lock held does nothing.
func TestMaintenanceByOneOfN(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db := pgtest.Open(t, url)
	_, _, now := retentionWorld(t, db)

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('schedlens maintenance'))`); err != nil {
		t.Fatal(err)
	}
	res, err := db.Maintain(ctx, store.Retention{Events: 72 * time.Hour}, now)
	if err != nil || !res.Skipped || len(res.Dropped) != 0 {
		t.Fatalf("with the lock held elsewhere: %+v, %v; want skipped, nothing dropped", res, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtext('schedlens maintenance'))`); err != nil {
		t.Fatal(err)
	}

	const n = 4
	var (
		mu      sync.Mutex
		dropped []string
		wg      sync.WaitGroup
	)
	for range n {
		other := pgtest.Open(t, url)
		wg.Go(func() {
			res, err := other.Maintain(ctx, store.Retention{Events: 72 * time.Hour}, now)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			dropped = append(dropped, res.Dropped...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(dropped)
	if len(dropped) == 0 || len(slices.Compact(slices.Clone(dropped))) != len(dropped) {
		t.Errorf("partitions dropped by %d processes: %v; want each once", n, dropped)
	}
	if left := countRows(t, url, `SELECT count(*) FROM partitions WHERE upper <= '2026-11-22' AND parent IN ('events_raw', 'inventories', 'inventory_pods')`); left != 0 {
		t.Errorf("%d expired partitions left", left)
	}
}

// A store that already held events before partitioning keeps them: migrating makes the old
// table the first partition of each (no rewrite: the same file on disk) up to the end of the
// day it is migrated on, every timeline reads as before, the next days get partitions of their own, and retention drops the old table whole,
// keeping the experiment's events.
func TestMigrationAdoptsStoredEvents(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db := pgtest.Open(t, url)
	envs := eventgen.Generate(eventgen.Default())
	ingestInBatches(t, db, envs, 200)
	uids := podUIDs(envs)
	before := timelines(t, db, uids)
	if err := db.DownTo(ctx, 12); err != nil {
		t.Fatalf("down to 12: %v", err)
	}
	files := countRows(t, url, `SELECT relfilenode::int FROM pg_class WHERE relname = 'events'`)
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if got := countRows(t, url, `SELECT relfilenode::int FROM pg_class WHERE relname = 'events_until_partitioning'`); got != files {
		t.Errorf("the old events table's file is %d, was %d: it was rewritten", got, files)
	}
	if diff := cmp.Diff(before, timelines(t, db, uids)); diff != "" {
		t.Errorf("timelines changed by migrating (-before +after):\n%s", diff)
	}
	now := time.Now()
	ahead, err := db.Maintain(ctx, store.Retention{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if tomorrow := "events_raw_" + now.UTC().Add(24*time.Hour).Format("20060102"); !slices.Contains(ahead.Created, tomorrow) {
		t.Errorf("created %v: %s missing", ahead.Created, tomorrow)
	}
	res, err := db.Maintain(ctx, store.Retention{Events: 24 * time.Hour}, now.Add(120*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Dropped, "events_until_partitioning") {
		t.Errorf("dropped %v: the old table is not among them", res.Dropped)
	}
	if diff := cmp.Diff(before, timelines(t, db, uids)); diff != "" {
		t.Errorf("experiment timelines changed by retention (-before +after):\n%s", diff)
	}
}

// Deleting an experiment deletes its definition, its pods and their victims, every event of
// them, kept or raw, and its stored comparison and run slices; the other experiment and the
// observed workload are untouched.
func TestDeleteExperiment(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db := pgtest.Open(t, url)
	work, exp, now := retentionWorld(t, db)
	other := eventgen.Default()
	other.Experiment, other.Seed, other.IDPrefix, other.Namespace = "day21", 21, "day21/", "ai-lab-2"
	other.Scope = &events.Scope{Namespaces: []string{"ai-lab-2"}, Selector: events.LabelExperiment}
	kept := eventgen.Generate(other)
	ingestInBatches(t, db, kept, 500)
	if _, err := db.Maintain(ctx, store.Retention{Events: 72 * time.Hour}, now); err != nil {
		t.Fatal(err)
	}
	keptBefore := timelines(t, db, podUIDs(kept))
	workEvents := countRows(t, url, `SELECT count(*) FROM events WHERE pod_uid = ANY($1)`, podUIDs(work))
	if n, err := db.WarmComparisons(ctx, false); err != nil || n != 2 {
		t.Fatalf("WarmComparisons: %d built, %v; want both experiments' comparisons stored", n, err)
	}

	if err := db.DeleteExperiment(ctx, "day20"); err != nil {
		t.Fatal(err)
	}
	for _, uid := range podUIDs(exp) {
		if _, err := db.Timeline(ctx, uid); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("pod %s of the deleted experiment: %v, want not found", uid, err)
		}
	}
	if n := countRows(t, url, `SELECT count(*) FROM events WHERE pod_uid = ANY($1) OR (kind = 'experiment' AND envelope->'data'->>'name' = 'day20')`, podUIDs(exp)); n != 0 {
		t.Errorf("%d events of the deleted experiment left", n)
	}
	if _, err := db.Experiment(ctx, "day20"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the deleted experiment: %v, want not found", err)
	}
	for _, table := range []string{"run_slices", "stored_comparisons"} {
		if n := countRows(t, url, `SELECT count(*) FROM `+table+` WHERE experiment = 'day20'`); n != 0 {
			t.Errorf("%d rows of the deleted experiment left in %s", n, table)
		}
		if n := countRows(t, url, `SELECT count(*) FROM `+table+` WHERE experiment = 'day21'`); n == 0 {
			t.Errorf("the other experiment's rows in %s were deleted", table)
		}
	}
	if diff := cmp.Diff(keptBefore, timelines(t, db, podUIDs(kept))); diff != "" {
		t.Errorf("the other experiment changed (-before +after):\n%s", diff)
	}
	if n := countRows(t, url, `SELECT count(*) FROM events WHERE pod_uid = ANY($1)`, podUIDs(work)); n != workEvents {
		t.Errorf("the workload's events: %d, were %d", n, workEvents)
	}
	if err := db.DeleteExperiment(ctx, "day20"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting it again: %v, want not found", err)
	}
}

// Past the samples' horizon, the request results of pods outside experiment runs become
// per-pod 10 s buckets whose counts are the raw ones and whose latency quantiles are within
// summary.RelativeAccuracy of the exact ones; an experiment's results stay raw; a late copy of
// a summarised result is refused; and the workload's disruptions read the same from buckets.
func TestSummarisedSamples(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db := pgtest.Open(t, url)
	wcfg := eventgen.DefaultWorkload()
	wcfg.Start = time.Date(2026, 11, 20, 2, 0, 0, 0, time.UTC)
	wcfg.Gap = 40 * time.Minute
	work, _ := eventgen.Workload(wcfg)
	ecfg := eventgen.Default()
	ecfg.Start = time.Date(2026, 11, 20, 4, 32, 0, 0, time.UTC)
	exp := eventgen.Generate(ecfg)
	ingestInBatches(t, db, append(slices.Clone(work), exp...), 1000)

	type podCounts struct{ requests, errors int }
	exact := map[string]podCounts{}
	latencies := map[string][]float64{}
	for _, env := range work {
		r, ok := env.Payload.(*events.Request)
		if !ok {
			continue
		}
		c := exact[env.PodUID()]
		c.requests++
		if !r.OK {
			c.errors++
		} else {
			latencies[env.PodUID()] = append(latencies[env.PodUID()], r.LatencyMS)
		}
		exact[env.PodUID()] = c
	}
	if len(exact) == 0 {
		t.Fatal("the workload sent no requests: the test checks nothing")
	}
	expRequests := countRows(t, url, `SELECT count(*) FROM events WHERE kind = 'request' AND pod_uid = ANY($1)`, podUIDs(exp))
	from, to := wcfg.Start.Add(-time.Minute), work[len(work)-1].OccurredAt.Add(time.Minute)
	disBefore, err := db.Disruptions(ctx, store.WorkloadFilter{}, from, to)
	if err != nil {
		t.Fatal(err)
	}

	res, err := db.Maintain(ctx, store.Retention{Samples: time.Hour}, time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if res.Buckets == 0 || res.Kept == 0 {
		t.Fatalf("maintenance made %d buckets and kept %d samples; want both", res.Buckets, res.Kept)
	}
	if n := countRows(t, url, `SELECT count(*) FROM events WHERE kind = 'request' AND pod_uid = ANY($1)`, podUIDs(work)); n != 0 {
		t.Errorf("%d raw results of the workload left", n)
	}
	if n := countRows(t, url, `SELECT count(*) FROM events WHERE kind = 'request' AND pod_uid = ANY($1)`, podUIDs(exp)); n != expRequests {
		t.Errorf("the experiment's raw results: %d, were %d", n, expRequests)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	readBuckets := func() map[string]podCounts {
		rows, err := conn.Query(ctx, `SELECT pod_uid::text, sum(requests)::int, sum(errors)::int FROM request_buckets GROUP BY pod_uid`)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]podCounts{}
		var uid string
		var c podCounts
		if _, err := pgx.ForEachRow(rows, []any{&uid, &c.requests, &c.errors}, func() error { got[uid] = c; return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if diff := cmp.Diff(exact, readBuckets(), cmp.AllowUnexported(podCounts{})); diff != "" {
		t.Errorf("bucket counts differ from the raw results (-raw +buckets):\n%s", diff)
	}
	for uid, lat := range latencies {
		rows, err := conn.Query(ctx, `SELECT latency FROM request_buckets WHERE pod_uid = $1 AND latency IS NOT NULL`, uid)
		if err != nil {
			t.Fatal(err)
		}
		merged := summary.NewSketch()
		var enc []byte
		if _, err := pgx.ForEachRow(rows, []any{&enc}, func() error {
			s, err := summary.DecodeLatency(enc)
			if err != nil {
				return err
			}
			return merged.MergeWith(s)
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(lat)
		for _, q := range []float64{0.5, 0.95, 0.99} {
			want := lat[int(q*float64(len(lat)-1))]
			got, err := merged.GetValueAtQuantile(q)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-want) > summary.RelativeAccuracy*want {
				t.Errorf("pod %s: q%.2f %.4g from buckets, exact %.4g", uid, q, got, want)
			}
		}
	}

	late, err := db.Append(ctx, work, nil)
	if err != nil {
		t.Fatal(err)
	}
	if late.Expired != countKind(work, events.KindRequest)+countKind(work, events.KindGPUSample) || late.Inserted != 0 {
		t.Errorf("a late copy: %d expired, %d inserted; want every result and sample expired, nothing inserted", late.Expired, late.Inserted)
	}
	if diff := cmp.Diff(exact, readBuckets(), cmp.AllowUnexported(podCounts{})); diff != "" {
		t.Errorf("a late copy changed the buckets (-raw +buckets):\n%s", diff)
	}
	disAfter, err := db.Disruptions(ctx, store.WorkloadFilter{}, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(jsonOf(t, disBefore), jsonOf(t, disAfter)); diff != "" {
		t.Errorf("disruptions read from buckets differ (-raw +buckets):\n%s", diff)
	}
}

func countKind(envs []*events.Envelope, k events.Kind) int {
	n := 0
	for _, env := range envs {
		if env.Kind == k {
			n++
		}
	}
	return n
}

// The store reports its size by class, and maintenance's time.
func TestStorage(t *testing.T) {
	ctx := context.Background()
	db := pgtest.DB(t)
	_, _, now := retentionWorld(t, db)
	if _, err := db.Maintain(ctx, store.Retention{Samples: time.Hour}, now); err != nil {
		t.Fatal(err)
	}
	st, err := db.Storage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range store.StorageClasses {
		if _, ok := st.Bytes[c]; !ok {
			t.Errorf("no size for class %s", c)
		}
	}
	for _, c := range []string{"events", "kept_events", "summaries", "projections"} {
		if st.Bytes[c] <= 0 {
			t.Errorf("class %s: %d bytes, want some", c, st.Bytes[c])
		}
	}
	if !st.MaintainedAt.Equal(now) {
		t.Errorf("maintained at %s, want %s", st.MaintainedAt, now)
	}
}

// A store that retention has worked on survives pg_dump and pg_restore into an empty database
// (docs/operations.md#backup-and-restore): every timeline and the comparison read the same,
// its partitions are partitions again (maintenance drops the next expired one), and new
// events append.
func TestBackupAndRestore(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db := pgtest.Open(t, url)
	work, exp, now := retentionWorld(t, db)
	if _, err := db.Maintain(ctx, store.Retention{Events: 96 * time.Hour, Samples: 24 * time.Hour}, now); err != nil {
		t.Fatal(err)
	}
	uids := append(podUIDs(exp), podUIDs(work)...)
	keptUIDs := uids[:0:0]
	for _, uid := range uids {
		if _, err := db.Timeline(ctx, uid); err == nil {
			keptUIDs = append(keptUIDs, uid)
		}
	}
	before := timelines(t, db, keptUIDs)
	cmpBefore, err := db.Comparison(ctx, "day20", "", "")
	if err != nil {
		t.Fatal(err)
	}

	dump := filepath.Join(t.TempDir(), "schedlens.dump")
	if out, err := exec.Command("pg_dump", "--format=custom", "--no-owner", "--file", dump, "--dbname", url).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	restored := pgtest.EmptyURL(t)
	if out, err := exec.Command("pg_restore", "--no-owner", "--exit-on-error", "--dbname", restored, dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}
	rdb := pgtest.Open(t, restored)
	if err := rdb.Migrate(ctx); err != nil {
		t.Fatalf("migrate the restored store: %v", err)
	}
	if diff := cmp.Diff(before, timelines(t, rdb, keptUIDs)); diff != "" {
		t.Errorf("timelines differ after restore (-before +restored):\n%s", diff)
	}
	cmpAfter, err := rdb.Comparison(ctx, "day20", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(jsonOf(t, cmpBefore), jsonOf(t, cmpAfter)); diff != "" {
		t.Errorf("comparison differs after restore (-before +restored):\n%s", diff)
	}
	res, err := rdb.Maintain(ctx, store.Retention{Events: 72 * time.Hour, Samples: 24 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Dropped, "events_raw_20261121") {
		t.Errorf("maintenance of the restored store dropped %v; want events_raw_20261121 among them", res.Dropped)
	}
	more := eventgen.Default()
	more.Seed, more.FirstRun, more.FirstRequest, more.IDPrefix = 21, 4, 10_000, "more/"
	if r, err := rdb.Append(ctx, eventgen.Generate(more), nil); err != nil || r.Inserted == 0 {
		t.Errorf("append to the restored store: %+v, %v", r, err)
	}
}
