package e2e

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The collector is stopped mid-run while pods change, then started again beside nothing: it
// re-publishes the state it lists under the same ids, so no fact is stored twice; what changed
// while it was down is recovered (a restart count, a new pod) and a pod deleted meanwhile ends
// deleted_unobserved.
func TestCollectorRestartPublishesNoDuplicate(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"restart-1", "restart-2", "restart-3"} {
		e.create(podSpec{name: n, arm: "control"})
	}
	pods := e.waitReady("restart-1", "restart-2", "restart-3")
	e.settle()

	e.s.StopCollector()
	ctx := context.Background()
	zero := int64(0)
	if err := client.CoreV1().Pods(e.ns).Delete(ctx, "restart-1", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := kubelt.Crash(e.ns, "restart-2"); err != nil {
		t.Fatal(err)
	}
	newPod := e.create(podSpec{name: "restart-4", arm: "control"})
	e.waitGone("restart-1")
	e.waitReady("restart-2", "restart-4")
	restarted, _ := e.pod("restart-2")

	if err := e.s.StartCollector(ctx); err != nil {
		t.Fatal(err)
	}
	// A second replica at the same time publishes the same ids too.
	if err := e.s.StartCollector(ctx); err != nil {
		t.Fatal(err)
	}
	e.settle()

	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT kind, key, count(*) FROM (
		  SELECT kind, concat_ws('/', pod_uid, envelope->'data'->>'resource_version', envelope->'data'->>'deleted') AS key FROM events WHERE kind = 'pod_status'
		  UNION ALL
		  SELECT kind, concat_ws('/', envelope->'data'->>'event_uid', envelope->'data'->>'count') FROM events WHERE kind = 'k8s_event'
		) f GROUP BY kind, key HAVING count(*) > 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var kind, key string
		var n int
		if err := rows.Scan(&kind, &key, &n); err != nil {
			t.Fatal(err)
		}
		t.Errorf("%s %s stored %d times", kind, key, n)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}

	if tl := e.timeline(pods["restart-1"].UID); deref(tl.EndedReason) != "deleted_unobserved" {
		t.Errorf("pod deleted while the collector was down: ended_reason %q, want deleted_unobserved", deref(tl.EndedReason))
	}
	if tl := e.timeline(restarted.UID); tl.Counts.Restarts != 1 {
		t.Errorf("pod crashed while the collector was down: restarts %d, want 1", tl.Counts.Restarts)
	}
	if tl := e.timeline(newPod.UID); tl.Milestones.Ready == nil || tl.Milestones.Scheduled == nil {
		t.Errorf("pod created while the collector was down: milestones %+v, want scheduled and ready recovered", tl.Milestones)
	}
}
