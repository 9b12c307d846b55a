package apiapp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/apiapp"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
)

// caughtUp waits until the standby has replayed everything the primary has written.
func caughtUp(t *testing.T, primary, standby string) {
	t.Helper()
	ctx := context.Background()
	p, err := pgx.Connect(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	s, err := pgx.Connect(ctx, standby)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	var lsn string
	// The insert position: the private primary commits asynchronously (synchronous_commit off),
	// so its write position may not hold the last commit yet.
	if err := p.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var done bool
		if err := s.QueryRow(ctx, `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn).Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby did not replay up to %s within 30s", lsn)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The api reads from a hot standby (a real streaming replica: pg_basebackup of a private
// primary, standby.signal) every answer the api on the primary gives once the standby has
// caught up; its /readyz says it reads a standby and how far behind; and what the primary
// stores after the api's caches were filled shows on the standby once replayed (the caches are
// keyed by what the standby holds, not by time).
func TestAPIOnAHotStandby(t *testing.T) {
	ctx := context.Background()
	primary := pgtest.StartPrivate(t)
	db := pgtest.Open(t, primary.URL())
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	work, _ := eventgen.Workload(eventgen.DefaultWorkload())
	exp := eventgen.Default()
	if _, err := db.Append(ctx, append(work, eventgen.Generate(exp)...), nil); err != nil {
		t.Fatal(err)
	}
	standby := primary.Standby()
	standby.Start()
	caughtUp(t, primary.URL(), standby.URL())

	onPrimary := start(t, apiapp.Options{DatabaseURL: primary.URL(), InsecureNoAuth: true})
	onStandby := start(t, apiapp.Options{DatabaseURL: standby.URL(), InsecureNoAuth: true})
	window := "from=2026-12-01T01:00:00Z&to=2026-12-01T03:00:00Z"
	paths := []string{
		"/v1/stats", "/v1/pods?limit=1000", "/v1/experiments", "/v1/experiments/day20",
		"/v1/experiments/day20/comparison", "/v1/experiments/day20/comparison.csv", "/v1/experiments/day20/record",
		"/v1/experiments/day20/runs/1/interruptions", "/v1/experiments/day20/runs/2/trace.json",
		"/v1/workloads?" + window, "/v1/workloads/prod/Deployment/infer?" + window,
		"/v1/disruptions?" + window, "/v1/dead-letters", "/v1/unattributed-requests",
		"/v1/pods/" + work[len(work)-1].PodUID() + "/timeline", "/ui/experiments/day20",
	}
	same := func(when string) {
		t.Helper()
		for _, path := range paths {
			pc, pb := do(t, "GET", onPrimary+path, "", "")
			sc, sb := do(t, "GET", onStandby+path, "", "")
			if pc != 200 || sc != pc || sb != pb {
				t.Errorf("%s: GET %s: primary %d (%d bytes), standby %d (%d bytes); want 200 and the same answer\nprimary: %.300s\nstandby: %.300s",
					when, path, pc, len(pb), sc, len(sb), pb, sb)
			}
		}
	}
	same("caught up")
	code, body := do(t, "GET", onStandby+"/readyz", "", "")
	if code != 200 || !strings.Contains(body, "hot standby, replay") {
		t.Errorf("/readyz on the standby: %d %q, want ready and saying it reads a hot standby", code, body)
	}
	if _, body := do(t, "GET", onStandby+"/metrics", "", ""); !strings.Contains(body, "schedlens_api_database_replay_lag_seconds ") {
		t.Errorf("/metrics on the standby has no replay lag")
	}

	code, body = do(t, "PUT", onStandby+"/v1/experiments/day21", "", `{"name":"day21","arms":["control","priority"]}`)
	if code != 500 || !strings.Contains(body, "Database Refused the Write") {
		t.Errorf("PUT on the standby: %d %s, want the 500 problem that says the database may only be read", code, body)
	}

	// More runs of the experiment arrive at the primary after both apis cached the comparison.
	more := eventgen.Default()
	more.Seed, more.FirstRun, more.FirstRequest, more.IDPrefix = 21, 4, 10_000, "more/"
	more.Start = exp.Start.Add(10 * time.Minute)
	if _, err := db.Append(ctx, eventgen.Generate(more), nil); err != nil {
		t.Fatal(err)
	}
	caughtUp(t, primary.URL(), standby.URL())
	same("after more runs")
	if _, body := do(t, "GET", onStandby+"/v1/experiments/day20", "", ""); !strings.Contains(body, `"6"`) {
		t.Errorf("the standby's experiment does not list run 6 after the primary stored it:\n%.500s", body)
	}
}
