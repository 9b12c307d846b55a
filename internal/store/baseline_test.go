package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

// The baselines create the events table from migration 00001: the bare one without its key
// (every copy is a row), the naive one with it (a copy of a stored id is ignored).
func TestBaselinesUseTheEventsTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	envs := eventgen.Generate(eventgen.Default())[:300]
	twice := append(slices.Clone(envs), envs...)
	count := func(url string) int {
		t.Helper()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	bare := pgtest.EmptyURL(t)
	if _, err := store.RawCopy(ctx, bare, twice, 500); err != nil {
		t.Fatalf("raw copy: %v", err)
	}
	if got := count(bare); got != len(twice) {
		t.Errorf("raw copy stored %d rows, want %d (no key)", got, len(twice))
	}
	keyed := pgtest.EmptyURL(t)
	if _, err := store.NaiveInsert(ctx, keyed, twice); err != nil {
		t.Fatalf("naive insert: %v", err)
	}
	if got := count(keyed); got != len(envs) {
		t.Errorf("naive insert stored %d rows, want %d (one per id)", got, len(envs))
	}
}
