package store_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
)

// chunked is eventgen.ChunkInventories, failing the test on an error or when the experiment has
// fewer than two inventories.
func chunked(t *testing.T, envs []*events.Envelope, size int, drop map[string]bool) []*events.Envelope {
	t.Helper()
	out, n, err := eventgen.ChunkInventories(envs, size, drop)
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("%d inventories in the generated experiment, want several", n)
	}
	return out
}

// timelinesWithoutEvents leaves out the events list (the parts are other events than the whole
// inventory): the derived timeline — phases, milestones, the end and its reason — stays.
func timelinesWithoutEvents(tls map[string]align.Timeline) map[string]align.Timeline {
	out := map[string]align.Timeline{}
	for uid, tl := range tls {
		tl.Events = nil
		out[uid] = tl
	}
	return out
}

// An inventory published in parts gives every pod the same timeline as the whole inventory,
// whatever order and batches the parts arrive in; its parts are applied once, as one
// inventory, when the last arrives.
func TestChunkedInventoryEqualsWhole(t *testing.T) {
	t.Parallel()
	whole, envs := withDefaultExperiment(t, 50)
	parts := pgtest.DB(t)
	split := chunked(t, envs, 3, nil)
	shuffle(split, 14, 6)
	ingestInBatches(t, parts, split, 17)

	uids := podUIDs(envs)
	want := timelinesWithoutEvents(timelines(t, whole, uids))
	if diff := cmp.Diff(want, timelinesWithoutEvents(timelines(t, parts, uids))); diff != "" {
		t.Errorf("timelines differ (-whole +parts):\n%s", diff)
	}
	if endedUnobserved(want) == 0 {
		t.Fatal("no pod ended by an inventory: the test shows nothing")
	}
	// A rebuild applies them the same way.
	if _, err := parts.Rebuild(context.Background(), 40); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, timelinesWithoutEvents(timelines(t, parts, uids))); diff != "" {
		t.Errorf("rebuilt timelines differ (-whole +parts):\n%s", diff)
	}
}

// An inventory missing a part is not applied at all — a part alone would end the pods the
// missing part lists — and the store agrees with align over the same events.
func TestIncompleteChunkedInventoryEndsNothing(t *testing.T) {
	t.Parallel()
	envs := eventgen.Generate(eventgen.Default())
	all := chunked(t, envs, 3, nil)
	missing := chunked(t, envs, 3, map[string]bool{"2/1": true}) // the second inventory ends the oversized pod
	db, complete := pgtest.DB(t), pgtest.DB(t)
	ingestInBatches(t, db, missing, 23)
	ingestInBatches(t, complete, all, 23)
	uids := podUIDs(envs)
	got := timelinesWithoutEvents(timelines(t, db, uids))
	for _, uid := range uids {
		want, _ := align.Build(uid, missing, events.DefaultLabelKeys)
		want.Events = nil
		if diff := cmp.Diff(want, got[uid]); diff != "" {
			t.Errorf("pod %s: store and align disagree (-align +store):\n%s", uid, diff)
		}
	}
	if cmp.Equal(got, timelinesWithoutEvents(timelines(t, complete, uids))) {
		t.Error("missing a part of an inventory that ends a pod changed nothing: the test shows nothing")
	}
}
