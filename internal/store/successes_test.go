package store_test

import (
	"context"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

// The successful requests of pods in a span are read from the index kept for them
// (events_request_ok) alone: the planner uses a partial index only where the query's condition
// is its predicate, so a change to store.Succeeded or to the index's predicate that parted them
// would, silently, make the workload reads scan requests again.
func TestSuccessesReadFromTheirIndex(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db := pgtest.Open(t, url)
	cfg := eventgen.Default()
	cfg.Runs = 2
	envs := eventgen.Generate(cfg)
	if _, err := db.Append(ctx, envs, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	var uids []string
	for _, e := range envs {
		if uid := e.PodUID(); uid != "" && !slices.Contains(uids, uid) {
			uids = append(uids, uid)
		}
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// events_request_ok and its partitions' indexes
	rows, _ := pool.Query(ctx, `SELECT relid::regclass::text FROM pg_partition_tree('events_request_ok')`)
	indexes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Only the choice between the indexes is looked at: a table this small is otherwise
		// read whole.
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off`); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `EXPLAIN SELECT e.occurred_at FROM events e
			WHERE e.pod_uid = ANY($1) AND e.kind = 'request' AND e.occurred_at BETWEEN $2 AND $3 AND `+store.Succeeded,
			uids, cfg.Start, cfg.Start.Add(time.Hour))
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	scan := regexp.MustCompile(`(Index Only Scan|Index Scan|Seq Scan|Bitmap Heap Scan) (?:using (\S+) )?on (\S+)`)
	read := 0
	for _, line := range plan {
		m := scan.FindStringSubmatch(line)
		if m == nil || m[3] == "events_kept" { // kept events hold no request
			continue
		}
		read++
		if m[1] != "Index Only Scan" || !slices.Contains(indexes, m[2]) {
			t.Errorf("successful requests read by %s %s on %s; want an Index Only Scan of events_request_ok\n%s", m[1], m[2], m[3], plan)
		}
	}
	if read == 0 {
		t.Fatalf("no scan of a partition holding requests in the plan:\n%s", plan)
	}
}
