package store_test

import (
	"context"
	"testing"

	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

// A store opened for reads (WithCustomPlans, as the api opens it) plans every execution of a
// prepared statement for its parameters. One opened without keeps Postgres' default, which —
// the tables empty when the statement first ran, as in a young database — settles on a generic
// plan after five executions and keeps it for the connection's life: the pathology the option
// is for, shown here so that the test would notice if Postgres stopped doing it.
func TestCustomPlansKeepPlanningForTheParameters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const q = `SELECT uid FROM pods WHERE uid = ANY($1)`
	for _, custom := range []bool{false, true} {
		var opts []store.Option
		if custom {
			opts = append(opts, store.WithCustomPlans())
		}
		conn, err := pgtest.DB(t, opts...).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			rows, err := conn.Query(ctx, q, []string{"0601506d-9411-f0fa-1517-2f497ad8e2f5"})
			if err != nil {
				t.Fatal(err)
			}
			rows.Close()
		}
		var generic, customPlans int64
		err = conn.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`, q).Scan(&generic, &customPlans)
		conn.Release()
		if err != nil {
			t.Fatalf("custom plans %v: the statement's plans: %v", custom, err)
		}
		switch {
		case custom && (generic != 0 || customPlans != 10):
			t.Errorf("WithCustomPlans: %d generic and %d custom plans of 10 executions; want 0 and 10", generic, customPlans)
		case !custom && generic == 0:
			t.Errorf("without WithCustomPlans: %d generic and %d custom plans of 10 executions; want Postgres' default to have settled on a generic plan", generic, customPlans)
		}
	}
}
