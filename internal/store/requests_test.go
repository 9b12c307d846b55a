package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/eventstest"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

// attributionWorld is two clusters' pod IPs and results naming only IPs, some of which no pod
// of their cluster held when they were sent.
func attributionWorld(t *testing.T) (*store.DB, time.Time) {
	t.Helper()
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	mk := func(id, cluster, source string, when time.Time, pod *events.PodRef, payload any, kind events.Kind) *events.Envelope {
		return eventstest.RoundTrip(t, &events.Envelope{V: 1, ID: id, Kind: kind, Cluster: cluster, Source: source, OccurredAt: when, ObservedAt: when, Pod: pod, Payload: payload})
	}
	pod := func(i int) *events.PodRef {
		return &events.PodRef{Namespace: "infer", Name: fmt.Sprintf("llm-%d", i), UID: fmt.Sprintf("0f0f0f0f-0000-4000-8000-%012d", i)}
	}
	snap := func(cluster string, i int, ip string, s int) *events.Envelope {
		return mk(fmt.Sprintf("pod_status/%d/%d", i, s), cluster, "collector", at(s), pod(i), &events.PodStatus{Phase: "Running", PodIP: ip}, events.KindPodStatus)
	}
	req := func(id, cluster, ip string, s int) *events.Envelope {
		return mk(id, cluster, "vegeta", at(s), nil, &events.Request{OK: true, Status: 200, LatencyMS: 3, PodIP: ip}, events.KindRequest)
	}
	envs := []*events.Envelope{
		snap("lab", 1, "10.0.0.1", 10),
		snap("lab", 2, "10.0.0.2", 100),
		snap("bar", 3, "10.0.0.3", 0),
		req("r1", "lab", "10.0.0.1", 20),     // pod 1 held it
		req("r2", "lab", "10.0.0.2", 50),     // pod 2 took it only at 100
		req("r3", "lab", "10.0.0.3", 20),     // only cluster bar knows it
		req("r4", "default", "10.0.0.1", 20), // the wrong cluster: lab knew it
		mk("r5", "lab", "ingest", at(30), pod(4), &events.Request{OK: true, Status: 200, LatencyMS: 1}, events.KindRequest),
		req("r6", "lab", "10.0.0.9", 5), // nobody knows it
	}
	db := pgtest.DB(t)
	ingestInBatches(t, db, envs, 4)
	return db, t0
}

func describeState(s store.RequestState) string {
	out := fmt.Sprintf("%s %s/%s %s", s.ID, s.Cluster, s.Source, s.OccurredAt.Format("15:04:05"))
	switch {
	case s.Pod != nil:
		out += fmt.Sprintf(" attributed to %s/%s", s.Pod.Namespace, s.Pod.Name)
	case s.Waiting != nil:
		out += " waiting: " + describeWait(s.Waiting)
	}
	return out
}

func describeWait(w *store.WaitReason) string {
	seen := "never"
	if w.IPSeenFrom != nil {
		seen = w.IPSeenFrom.Format("15:04:05")
	}
	return fmt.Sprintf("%s seen from %s, clusters %v", w.IP, seen, w.ClustersWithIP)
}

// What became of each result: attributed (by IP or by name) or waiting, with why; ids not
// stored, or not of requests, are absent.
func TestRequestStates(t *testing.T) {
	t.Parallel()
	db, _ := attributionWorld(t)
	got, err := db.RequestStates(context.Background(), []string{"r6", "r1", "r2", "r3", "r4", "r5", "nope", "pod_status/1/10"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, s := range got {
		lines = append(lines, describeState(s))
	}
	want := []string{
		"r1 lab/vegeta 05:00:20 attributed to infer/llm-1",
		"r2 lab/vegeta 05:00:50 waiting: 10.0.0.2 seen from 05:01:40, clusters []",
		"r3 lab/vegeta 05:00:20 waiting: 10.0.0.3 seen from never, clusters [bar]",
		"r4 default/vegeta 05:00:20 waiting: 10.0.0.1 seen from never, clusters [lab]",
		"r5 lab/ingest 05:00:30 attributed to infer/llm-4",
		"r6 lab/vegeta 05:00:05 waiting: 10.0.0.9 seen from never, clusters []",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	reasons := map[string]string{}
	for _, s := range got {
		if s.Waiting != nil {
			reasons[s.ID] = s.Waiting.Reason
		}
	}
	wantReasons := map[string]string{
		"r2": `no pod held 10.0.0.2 in cluster "lab" at 2026-11-30T05:00:50Z (a pod there was first seen with it at 2026-11-30T05:01:40Z); no other cluster had a pod with this IP then`,
		"r3": `no pod held 10.0.0.3 in cluster "lab" at 2026-11-30T05:00:20Z; in cluster "bar" a pod did`,
		"r4": `no pod held 10.0.0.1 in cluster "default" at 2026-11-30T05:00:20Z; in cluster "lab" a pod did`,
		"r6": `no pod held 10.0.0.9 in cluster "lab" at 2026-11-30T05:00:05Z; no other cluster had a pod with this IP then`,
	}
	if diff := cmp.Diff(wantReasons, reasons); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
	if _, err := db.RequestStates(context.Background(), make([]string, store.MaxLookup+1)); err == nil {
		t.Errorf("%d ids: want an error", store.MaxLookup+1)
	}
}

// Waiting results page by time then id, every one exactly once, filtered by cluster and
// source; /v1/stats counts them.
func TestUnattributedPages(t *testing.T) {
	t.Parallel()
	db, _ := attributionWorld(t)
	ctx := context.Background()
	walk := func(f store.UnattributedFilter, limit int) []string {
		t.Helper()
		var out []string
		cursor := ""
		for range 10 {
			page, err := db.Unattributed(ctx, f, limit, cursor)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range page.Requests {
				ids = append(ids, r.ID+"@"+r.Cluster)
			}
			out = append(out, strings.Join(ids, " "))
			if page.NextCursor == "" {
				return out
			}
			cursor = page.NextCursor
		}
		t.Fatalf("more than 10 pages")
		return nil
	}
	for _, tc := range []struct {
		f     store.UnattributedFilter
		limit int
		want  []string
	}{
		{store.UnattributedFilter{}, 2, []string{"r6@lab r3@lab", "r4@default r2@lab"}},
		{store.UnattributedFilter{}, 4, []string{"r6@lab r3@lab r4@default r2@lab"}},
		{store.UnattributedFilter{}, 3, []string{"r6@lab r3@lab r4@default", "r2@lab"}},
		{store.UnattributedFilter{Cluster: "lab"}, 1, []string{"r6@lab", "r3@lab", "r2@lab"}},
		{store.UnattributedFilter{Cluster: "default", Source: "vegeta"}, 5, []string{"r4@default"}},
		{store.UnattributedFilter{Source: "ingest"}, 5, []string{""}},
	} {
		if diff := cmp.Diff(tc.want, walk(tc.f, tc.limit)); diff != "" {
			t.Errorf("%+v by %d (-want +got):\n%s", tc.f, tc.limit, diff)
		}
	}
	page, err := db.Unattributed(ctx, store.UnattributedFilter{Cluster: "default"}, 10, "")
	if err != nil || len(page.Requests) != 1 {
		t.Fatalf("%v %+v", err, page)
	}
	r := page.Requests[0]
	if got := fmt.Sprintf("%s %s %s %s %s", r.ID, r.Cluster, r.Source, r.OccurredAt.Format(time.RFC3339), describeWait(&r.WaitReason)); got != "r4 default vegeta 2026-11-30T05:00:20Z 10.0.0.1 seen from never, clusters [lab]" {
		t.Errorf("row: %s", got)
	}
	for _, bad := range []string{"garbage", "e30"} { // not base64 JSON; {} without fields
		if _, err := db.Unattributed(ctx, store.UnattributedFilter{}, 10, bad); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", bad, err)
		}
	}
	st, err := db.Stats(ctx)
	if err != nil || st.UnattributedRequestsTotal != 4 {
		t.Errorf("stats: %v, unattributed_requests_total %d, want 4", err, st.UnattributedRequestsTotal)
	}
}
