package store_test

import (
	"context"
	"os/exec"
	"path/filepath"
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

// The outside measure: psql \copy of the envelope lines, each stored as it arrived, escapes and
// all (COPY's text format reads a backslash as the start of one: an unescaped line would lose
// its backslashes, or fail).
func TestPsqlCopyStoresEveryEnvelopeAsItArrived(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("the psql client is part of this machine's Postgres: %v", err)
	}
	envs := eventgen.Generate(eventgen.Default())[:300]
	odd := *envs[0]
	odd.ID = `odd\id`
	odd.Raw = []byte(`{"id":"odd\\id","note":"a\tb\\c\r\nd \"q\" \u0026 é"}`)
	envs = append(envs, &odd)
	url := pgtest.EmptyURL(t)
	if _, err := store.PsqlCopy(ctx, url, psql, envs); err != nil {
		t.Fatalf("psql copy: %v", err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ids, raws := make([]string, len(envs)), make([]string, len(envs))
	for i, env := range envs {
		ids[i], raws[i] = env.ID, string(env.Raw)
	}
	var rows, same int
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM bare_copy),
		(SELECT count(*) FROM bare_copy b JOIN unnest($1::text[], $2::text[]) AS e(id, raw) ON e.id = b.id AND b.body = e.raw::jsonb)`,
		ids, raws).Scan(&rows, &same)
	if err != nil {
		t.Fatal(err)
	}
	if rows != len(envs) || same != len(envs) {
		t.Errorf("bare_copy holds %d rows, %d of them the envelope as sent under its id; want %d and %d", rows, same, len(envs), len(envs))
	}
	if _, err := store.PsqlCopy(ctx, pgtest.EmptyURL(t), filepath.Join(t.TempDir(), "no-psql"), envs); err == nil {
		t.Error("PsqlCopy with a psql that does not exist: no error")
	}
}
