package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

// ingestInBatches stores envs in batches of the given size.
func ingestInBatches(t *testing.T, db *store.DB, envs []*events.Envelope, size int) store.AppendResult {
	t.Helper()
	var total store.AppendResult
	for i := 0; i < len(envs); i += size {
		res, err := db.Append(context.Background(), envs[i:min(i+size, len(envs))], nil)
		if err != nil {
			t.Fatalf("ingest: %v", err)
		}
		total = total.Add(res)
	}
	return total
}

func podUIDs(envs []*events.Envelope) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range envs {
		if uid := e.PodUID(); uid != "" && !seen[uid] {
			seen[uid] = true
			out = append(out, uid)
		}
	}
	slices.Sort(out)
	return out
}

// timelines reads every pod's timeline from the store.
func timelines(t *testing.T, db *store.DB, uids []string) map[string]align.Timeline {
	t.Helper()
	out := map[string]align.Timeline{}
	for _, uid := range uids {
		tl, err := db.Timeline(context.Background(), uid)
		if err != nil {
			t.Fatalf("timeline %s: %v", uid, err)
		}
		out[uid] = tl
	}
	return out
}

// The SQL projection (incremental merges in Postgres, derivation in the pod_timeline view) and
// align (a fold in Go over all events) must give the same timeline for every pod.
func TestProjectionAgreesWithAlign(t *testing.T) {
	t.Parallel()
	db, envs := withDefaultExperiment(t, 37)
	checkAgainstAlign(t, "in batches of 37", db, envs, podUIDs(envs))
}

// normalize re-encodes event data so that jsonb's key order and spacing do not count.
func normalize(tl align.Timeline) align.Timeline {
	out := tl
	out.Events = nil
	for _, e := range tl.Events {
		e.Data = canonicalJSON(e.Data)
		out.Events = append(out.Events, e)
	}
	return out
}

// The same events published twice and shuffled, in other batch sizes, give identical
// timelines and counts.
func TestDuplicatedShuffledEventsGiveIdenticalProjections(t *testing.T) {
	t.Parallel()
	inOrder, envs := withDefaultExperiment(t, 100)
	shuffled := pgtest.DB(t)
	twice := append(slices.Clone(envs), envs...)
	shuffle(twice, 1, 2)
	res := ingestInBatches(t, shuffled, twice, 29)
	if res.Inserted != len(envs) || res.Duplicates != len(envs) {
		t.Errorf("inserted %d, duplicates %d; want %d each", res.Inserted, res.Duplicates, len(envs))
	}

	uids := podUIDs(envs)
	if diff := cmp.Diff(timelines(t, inOrder, uids), timelines(t, shuffled, uids)); diff != "" {
		t.Errorf("timelines differ (-in order +shuffled twice):\n%s", diff)
	}
	if diff := cmp.Diff(stats(t, inOrder), stats(t, shuffled)); diff != "" {
		t.Errorf("stats differ (-in order +shuffled twice):\n%s", diff)
	}
}

func TestRebuildEqualsLive(t *testing.T) {
	t.Parallel()
	db, envs := withDefaultExperiment(t, 50)
	uids := podUIDs(envs)
	live, liveStats := timelines(t, db, uids), stats(t, db)

	res, err := db.Rebuild(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != len(envs) || res.Rejected != 0 {
		t.Errorf("rebuild read %d events (%d rejected), want %d", res.Events, res.Rejected, len(envs))
	}
	if diff := cmp.Diff(live, timelines(t, db, uids)); diff != "" {
		t.Errorf("rebuilt timelines differ (-live +rebuilt):\n%s", diff)
	}
	if diff := cmp.Diff(liveStats, stats(t, db)); diff != "" {
		t.Errorf("rebuilt stats differ (-live +rebuilt):\n%s", diff)
	}
}

func stats(t *testing.T, db *store.DB) store.Stats {
	t.Helper()
	s, err := db.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStatsCountEventsByKind(t *testing.T) {
	t.Parallel()
	db, envs := withDefaultExperiment(t, 200)
	want := store.Stats{ByKind: map[string]int64{}, PodsTotal: int64(len(podUIDs(envs)))}
	for _, e := range envs {
		want.ByKind[string(e.Kind)]++
		want.EventsTotal++
		if want.LastEventAt == nil || e.OccurredAt.After(*want.LastEventAt) {
			at := e.OccurredAt
			want.LastEventAt = &at
		}
	}
	if diff := cmp.Diff(want, stats(t, db)); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestDeadLettersStoredOncePerStreamPosition(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	dl := store.DeadLetter{Stream: "SCHEDLENS", Seq: 7, Subject: "schedlens.v1.lab.pod_status", Raw: []byte("{not json"), Error: "invalid envelope: not valid JSON\x00\xff"}
	for range 2 {
		if _, err := db.Append(context.Background(), nil, []store.DeadLetter{dl}); err != nil {
			t.Fatalf("ingest dead letter: %v", err)
		}
	}
	if got := stats(t, db).DeadLettersTotal; got != 1 {
		t.Errorf("dead letters = %d, want 1", got)
	}
}

func TestTimelineUnknownPod(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	if _, err := db.Timeline(context.Background(), "00000000-0000-0000-0000-000000000000"); err != store.ErrNotFound {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
}

// The idle threshold applies when summaries are read: the same stored samples count as more
// idle time under a higher threshold, without a rebuild.
func TestIdleThresholdAppliesAtReadTime(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	envs := eventgen.Generate(eventgen.Default())
	def := pgtest.Open(t, url)
	ingestInBatches(t, def, envs, 100)
	high := pgtest.Open(t, url, store.WithIdleThreshold(95))
	checked := 0
	for _, uid := range podUIDs(envs) {
		a, b := timelines(t, def, []string{uid})[uid], timelines(t, high, []string{uid})[uid]
		if a.GPU == nil {
			continue
		}
		checked++
		if a.GPU.IdleThresholdPct != 5 || b.GPU.IdleThresholdPct != 95 {
			t.Fatalf("thresholds %v / %v", a.GPU.IdleThresholdPct, b.GPU.IdleThresholdPct)
		}
		// eventgen's utilisation stays under 85%: at 95% all sampled time is idle.
		if b.GPU.IdleSeconds != b.GPU.Seconds || a.GPU.IdleSeconds >= a.GPU.Seconds {
			t.Errorf("pod %s: idle %v of %v s at 5%%, %v of %v s at 95%%", a.Pod.Name, a.GPU.IdleSeconds, a.GPU.Seconds, b.GPU.IdleSeconds, b.GPU.Seconds)
		}
	}
	if checked == 0 {
		t.Fatal("no pod with GPU samples")
	}
}

// The bench's pod mix (inventories every few runs, never-scheduled pods deleted later) agrees
// with align too, stored in batches that split runs.
func TestProjectionAgreesWithAlignOnBusyMix(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	cfg := eventgen.Default()
	cfg.Runs, cfg.InventoryEvery, cfg.OversizedRuns = 8, 3, 2
	envs := eventgen.Generate(cfg)
	ingestInBatches(t, db, envs, 101)
	checkAgainstAlign(t, "busy mix", db, envs, podUIDs(envs))
}
