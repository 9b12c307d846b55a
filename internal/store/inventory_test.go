package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/eventstest"
	"github.com/schedlens/schedlens/internal/pgtest"
)

// Inventories applied incrementally in the store give what align computes from all of them at
// once, in every arrival order: a pod gone before a list, one revived by a later snapshot, one
// listed by an inventory that arrives before its snapshots, one listed and then missing.
func TestInventoriesInAnyOrderAgreeWithAlign(t *testing.T) {
	t.Parallel()
	scope := events.Scope{Namespaces: []string{"ai-lab"}, Selector: events.LabelExperiment}
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	uid := func(i int) string { return fmt.Sprintf("0f0f0f0f-0000-4000-8000-%012d", i) }
	mk := func(id string, when time.Time, pod *events.PodRef, payload any, kind events.Kind) *events.Envelope {
		return eventstest.RoundTrip(t, &events.Envelope{V: 1, ID: id, Kind: kind, Cluster: "lab", Source: "test", OccurredAt: when, ObservedAt: when, Pod: pod, Payload: payload})
	}
	snap := func(i, s int) *events.Envelope {
		created := at(0)
		ref := &events.PodRef{Namespace: "ai-lab", Name: fmt.Sprintf("p%d", i), UID: uid(i)}
		return mk(fmt.Sprintf("pod_status/%d/%d", i, s), at(s), ref, &events.PodStatus{Phase: "Running", CreationTimestamp: &created, Scope: &scope}, events.KindPodStatus)
	}
	inv := func(s int, pods ...int) *events.Envelope {
		uids := []string{}
		for _, p := range pods {
			uids = append(uids, uid(p))
		}
		return mk(fmt.Sprintf("inventory/%d", s), at(s), nil, &events.Inventory{Scope: scope, PodUIDs: uids}, events.KindInventory)
	}
	heartbeat := func(since, s int) *events.Envelope {
		return mk(fmt.Sprintf("heartbeat/%d", s), at(s), nil, &events.Heartbeat{Scope: scope, Since: at(since)}, events.KindHeartbeat)
	}
	envs := []*events.Envelope{
		snap(1, 10),               // pod 1: gone before the list at 100
		snap(2, 10), snap(2, 150), // pod 2: not listed at 100 but seen at 150: revived; listed at 300
		snap(3, 10),  // pod 3: listed at 100 and 200, missing at 300
		snap(4, 120), // pod 4: seen at 120, listed at 200 (which may arrive first), missing at 300
		snap(5, 310), // pod 5: seen after the list at 300
		inv(100, 3), inv(200, 2, 3, 4), inv(300, 2),
		// The watch that began with the list at 300 is live at 350: pods 2 and 5 were there.
		heartbeat(300, 350), heartbeat(100, 120),
		// Then nobody watched, and the scope emptied: an empty list ends pods 2 and 5.
		inv(400),
	}
	var uids []string
	for i := 1; i <= 5; i++ {
		uids = append(uids, uid(i))
	}
	for seed := range uint64(6) {
		order := append([]*events.Envelope{}, envs...)
		shuffle(order, seed, 3)
		db := pgtest.DB(t)
		ingestInBatches(t, db, order, 1+int(seed%3))
		checkAgainstAlign(t, fmt.Sprintf("order %d", seed), db, envs, uids)
	}
	// The cases are what the test says they are.
	ended := func(i int) string {
		tl, _ := align.Build(uid(i), envs, events.DefaultLabelKeys)
		if tl.Milestones.Ended == nil {
			return ""
		}
		return fmt.Sprintf("%s@%s", *tl.EndedReason, tl.Milestones.Ended.Sub(t0))
	}
	if diff := cmp.Diff([]string{"deleted_unobserved@1m40s", "deleted_unobserved@6m40s", "deleted_unobserved@5m0s", "deleted_unobserved@5m0s", "deleted_unobserved@6m40s"},
		[]string{ended(1), ended(2), ended(3), ended(4), ended(5)}); diff != "" {
		t.Errorf("align's ends (-want +got):\n%s", diff)
	}
	// Observation lasts until the last heartbeat of the live watch, before the empty list.
	until := func(i int) time.Duration {
		tl, _ := align.Build(uid(i), envs, events.DefaultLabelKeys)
		return tl.ObservedUntil.Sub(t0)
	}
	if diff := cmp.Diff([]time.Duration{10 * time.Second, 350 * time.Second, 200 * time.Second, 200 * time.Second, 350 * time.Second},
		[]time.Duration{until(1), until(2), until(3), until(4), until(5)}); diff != "" {
		t.Errorf("align's observed_until (-want +got):\n%s", diff)
	}
}

// Migration 00010 moved what inventories prove from columns of pods (updated by every
// inventory) to lookups at read time: going down recomputes the old columns and coming back up
// rebuilds the listings from the stored inventories, and neither changes a timeline.
func TestInventoriesKeptAcrossMigration10(t *testing.T) {
	ctx := context.Background()
	db, envs := withDefaultExperiment(t, 64)
	uids := podUIDs(envs)
	before := timelines(t, db, uids)
	if endedUnobserved(before) == 0 {
		t.Fatal("eventgen's default experiment ended no pod unobserved: the test checks nothing")
	}
	if err := db.DownTo(ctx, 9); err != nil {
		t.Fatalf("down to 9: %v", err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	if diff := cmp.Diff(before, timelines(t, db, uids)); diff != "" {
		t.Errorf("timelines differ (-before +after down to 9 and up):\n%s", diff)
	}
}
