package store_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
)

// The SQL reads the end causes from align's list, written at every migration: the two cannot
// drift apart (align is the reference the SQL is tested against).
func TestEndReasonsComeFromAlign(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db := pgtest.Open(t, url)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A stale list (as an older version would have left it) is replaced on the next migration.
	if _, err := conn.Exec(ctx, `UPDATE end_reasons SET reason = 'stale'; INSERT INTO end_reasons VALUES (99, 'gone')`); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rows, _ := conn.Query(ctx, `SELECT reason FROM end_reasons ORDER BY rank`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(align.EndReasons[1:], got); diff != "" {
		t.Errorf("end_reasons (-align +sql):\n%s", diff)
	}
}

// Every migration's Down section works with the views kept out of the migrations, and
// migrating again from nothing gives the view back as it was: the timelines agree with align.
func TestMigrationsGoDownAndUpAgain(t *testing.T) {
	ctx := context.Background()
	db := pgtest.DB(t)
	if err := db.DownTo(ctx, 0); err != nil {
		t.Fatalf("down to 0: %v", err)
	}
	if current, err := db.SchemaCurrent(ctx); err != nil || current {
		t.Fatalf("schema current after down to 0: %v, %v", current, err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	envs := eventgen.Generate(eventgen.Default())
	ingestInBatches(t, db, envs, 500)
	checkAgainstAlign(t, "after migrating again", db, envs, podUIDs(envs))
}
