package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/internal/compare"
)

// While the collector watches, a pod the scheduler cannot place reads the whole of its wait —
// the watch's heartbeats say it is still there — not the time of its last event; and a pod the
// scheduler binds at once reads a pending of milliseconds, not the up to one second its
// creation timestamp's whole second would add.
func TestPendingReadsTheWaitAndTheBinding(t *testing.T) {
	e := newEnv(t)
	waiting := e.create(podSpec{name: "waits-1", arm: "oversized", gpus: 3})
	bound := e.create(podSpec{name: "bound-1", arm: "control"})
	e.waitReady("bound-1")

	const wait = 60 * time.Second
	time.Sleep(wait)
	e.settle()

	tl := e.timeline(waiting.UID)
	if tl.Milestones.Scheduled != nil || tl.Milestones.Created == nil || tl.ObservedUntil == nil {
		t.Fatalf("the oversized pod: milestones %+v, observed_until %v; want created, never scheduled", tl.Milestones, tl.ObservedUntil)
	}
	waited := tl.ObservedUntil.Sub(*tl.Milestones.Created)
	t.Logf("pod Pending for %s while watched: observed %s waiting (FailedScheduling events: %d)", wait, waited.Round(time.Millisecond), tl.Counts.FailedScheduling)
	if waited < 55*time.Second {
		t.Errorf("pod Pending for %s while the collector watched: observed waiting %s; want at least 55s", wait, waited)
	}
	// The comparison's pending of that run is a lower bound at least that long.
	values, lower := compare.RunMetrics(compare.RunData{Pods: []compare.PodData{{Summary: tl.Summary}}})
	if v := values["pending_max_s"]; v < 55 || !lower["pending_max_s"] {
		t.Errorf("pending_max_s of the run: %.1f s, lower bound %v; want a lower bound of at least 55 s", v, lower["pending_max_s"])
	}

	tb := e.timeline(bound.UID)
	if tb.Durations.Pending == nil {
		t.Fatalf("bound pod: no pending (milestones %+v)", tb.Milestones)
	}
	p, _ := e.pod("bound-1")
	created := p.CreationTimestamp.Time
	t.Logf("pod bound at once: pending %.1f ms (creationTimestamp %s, milestones created %s, scheduled %s)", 1000**tb.Durations.Pending,
		created.Format(time.RFC3339Nano), tb.Milestones.Created.Format(time.RFC3339Nano), tb.Milestones.Scheduled.Format(time.RFC3339Nano))
	if *tb.Durations.Pending < 0 || *tb.Durations.Pending >= 0.1 {
		t.Errorf("pod created and bound at once: pending %.3f s; want under 100 ms", *tb.Durations.Pending)
	}
}

// Every pod of the scope is deleted while the collector is down: the collector starts again,
// lists nothing, and its empty inventory — stored, not dead-lettered — ends them all.
func TestEmptyInventoryEndsEveryPodOfTheScope(t *testing.T) {
	e := newEnv(t)
	pods := []string{"gone-1", "gone-2"}
	for _, n := range pods {
		e.create(podSpec{name: n, arm: "control"})
	}
	ready := e.waitReady(pods...)
	e.settle()

	e.s.StopCollector()
	e.deleteAll()
	ctx := context.Background()
	if l, err := client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("pods left in %s: %v %v", e.ns, l, err)
	}
	if err := e.s.StartCollector(ctx); err != nil {
		t.Fatal(err)
	}
	e.settle()

	for _, n := range pods {
		tl := e.timeline(ready[n].UID)
		if deref(tl.EndedReason) != "deleted_unobserved" || tl.Milestones.Ended == nil {
			t.Errorf("%s, deleted while the collector was down with its whole scope: ended %v (%q); want deleted_unobserved",
				n, tl.Milestones.Ended, deref(tl.EndedReason))
		}
	}
	var stats struct {
		DeadLetters int `json:"dead_letters_total"`
	}
	if e.get("/v1/stats", &stats) != 200 || stats.DeadLetters != 0 {
		t.Errorf("dead letters %d; want none (an empty inventory is a statement, not an error)", stats.DeadLetters)
	}
}
