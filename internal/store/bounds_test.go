package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

const boundsPod = "5a7c9e1b-3d5f-4a6b-9c8d-0e2f4a6b8c0d"

func decode(t *testing.T, msg string) *events.Envelope {
	t.Helper()
	env, err := events.Decode([]byte(msg))
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, msg)
	}
	return env
}

// failedScheduling is a FailedScheduling event of series series with the given count, about
// the pod spelt uid.
func failedScheduling(t *testing.T, series int, count int64, uid string) *events.Envelope {
	return decode(t, fmt.Sprintf(`{"v":1,"id":"k8s_event:fs-%d:%d","kind":"k8s_event","cluster":"lab","source":"collector/lab-0",
		"occurred_at":"2026-11-30T04:33:1%dZ","observed_at":"2026-11-30T04:33:1%dZ",
		"pod":{"namespace":"ai-lab","name":"day20-treatment-2","uid":%q},
		"data":{"reason":"FailedScheduling","type":"Warning","note":"0/6 nodes are available: 6 Insufficient nvidia.com/gpu.",
		        "event_uid":"series-%d","count":%d}}`, series, count, series, series, uid, series, count))
}

// Counts as large as the codec allows (events.MaxCount, 2^31-1) add up beyond 32 bits: two
// series of them used to overflow the view's sum and fail every read of the pod with
// "integer out of range" (a 500 from the API); restarts summed over containers likewise.
func TestCountsBeyond32BitsAddUp(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	envs := []*events.Envelope{
		failedScheduling(t, 1, events.MaxCount, boundsPod),
		failedScheduling(t, 2, events.MaxCount, boundsPod),
		failedScheduling(t, 3, 5, boundsPod),
		decode(t, fmt.Sprintf(`{"v":1,"id":"pod_status:%[1]s:1","kind":"pod_status","cluster":"lab","source":"collector/lab-0",
			"occurred_at":"2026-11-30T04:34:00Z","observed_at":"2026-11-30T04:34:00Z",
			"pod":{"namespace":"ai-lab","name":"day20-treatment-2","uid":%[1]q},
			"data":{"phase":"Running","containers":[
				{"name":"a","ready":true,"restart_count":%[2]d},{"name":"b","ready":true,"restart_count":%[2]d}]}}`, boundsPod, events.MaxCount)),
	}
	if _, err := db.Append(context.Background(), envs, nil); err != nil {
		t.Fatalf("ingest: %v", err)
	}
	tl, err := db.Timeline(context.Background(), boundsPod)
	if err != nil {
		t.Fatalf("timeline: %v", err)
	}
	want := align.Counts{FailedScheduling: 2*events.MaxCount + 5, Restarts: 2 * events.MaxCount}
	got := tl.Counts
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	built, _ := align.Build(boundsPod, envs, events.DefaultLabelKeys)
	if diff := cmp.Diff(built.Counts, got); diff != "" {
		t.Errorf("stored counts differ from align's (-align +stored):\n%s", diff)
	}
	page, err := db.ListPods(context.Background(), store.PodFilter{}, 10, "")
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	if len(page.Pods) != 1 || page.Pods[0].Counts.FailedScheduling != 2*events.MaxCount+5 {
		t.Errorf("pod list = %+v, want one pod with %d FailedScheduling", page.Pods, 2*events.MaxCount+5)
	}
}

// A UID spelt in upper case by one source and lower case by another is one pod.
func TestUpperCaseUIDIsTheSamePod(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	envs := []*events.Envelope{
		failedScheduling(t, 1, 2, boundsPod),
		failedScheduling(t, 2, 3, strings.ToUpper(boundsPod)),
	}
	if _, err := db.Append(context.Background(), envs, nil); err != nil {
		t.Fatalf("ingest: %v", err)
	}
	st, err := db.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.PodsTotal != 1 {
		t.Errorf("pods = %d, want 1", st.PodsTotal)
	}
	tl, err := db.Timeline(context.Background(), boundsPod)
	if err != nil {
		t.Fatalf("timeline: %v", err)
	}
	if tl.Counts.FailedScheduling != 5 {
		t.Errorf("FailedScheduling = %d, want 5 (both spellings)", tl.Counts.FailedScheduling)
	}
}

// A page of dead letters keeps within its budgets: each raw cut, and no more letters once
// the raws add up to the page's; the response says what it left out.
func TestDeadLetterPageWithinBudget(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	var dead []store.DeadLetter
	for i := range 5 {
		dead = append(dead, store.DeadLetter{Stream: "SCHEDLENS", Seq: uint64(i + 1), Subject: "schedlens.v1.lab.pod_status",
			Raw: []byte(strings.Repeat(string(rune('a'+i)), 100)), Error: "invalid envelope: " + strings.Repeat("e", 50)})
	}
	if _, err := db.Append(context.Background(), nil, dead); err != nil {
		t.Fatal(err)
	}
	page, err := db.DeadLetterPage(context.Background(), 10, 10, 25)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range page.DeadLetters {
		got = append(got, fmt.Sprintf("%d %s %d/%v %d", d.StreamSeq, d.Raw, d.RawBytes, d.RawTruncated, len(d.Error)))
	}
	want := []string{"5 eeeeeeeeee 100/true 10", "4 dddddddddd 100/true 10"}
	if diff := cmp.Diff(want, got); diff != "" || !page.Truncated || page.Omitted != 3 {
		t.Errorf("page (-want +got):\n%s\ntruncated %v, omitted %d; want true, 3", diff, page.Truncated, page.Omitted)
	}
	// Within the default budgets nothing is cut.
	all, err := db.DeadLetterPage(context.Background(), 10, store.DeadLetterRawBytes, store.DeadLetterPageBytes)
	if err != nil || len(all.DeadLetters) != 5 || all.Truncated || all.Omitted != 0 || all.DeadLetters[0].Raw != strings.Repeat("e", 100) {
		t.Errorf("default page: %d letters, truncated %v, omitted %d, err %v", len(all.DeadLetters), all.Truncated, all.Omitted, err)
	}
}
