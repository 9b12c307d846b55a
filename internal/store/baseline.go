package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/migrations"
)

// The baselines the bench measures the pipeline against, on the very rows Append writes to
// the events table: the fastest way Postgres takes them, and the naive way.

// eventsDDL is the CREATE TABLE statement of the events table as migration 00001 writes it,
// taken from that file so the baselines measure the table Append writes to (its primary key;
// the index and later migrations' indexes are left out).
func eventsDDL() (string, error) {
	b, err := fs.ReadFile(migrations.FS, "00001_events.sql")
	if err != nil {
		return "", err
	}
	const head = "CREATE TABLE events ("
	_, rest, found := strings.Cut(string(b), head)
	columns, _, closed := strings.Cut(rest, "\n);")
	if !found || !closed {
		return "", errors.New("migration 00001 has no CREATE TABLE events statement")
	}
	return head + columns + "\n)", nil
}

// bareEventsDDL is the events table's columns without its primary key or NOT NULL constraints.
func bareEventsDDL() (string, error) {
	ddl, err := eventsDDL()
	return strings.NewReplacer(" PRIMARY KEY", "", " NOT NULL", "").Replace(ddl), err
}

// RawCopy times CopyFrom of envs' event rows into a bare table of the empty database dbURL,
// chunk rows per transaction: the ceiling for the correlator.
func RawCopy(ctx context.Context, dbURL string, envs []*events.Envelope, chunk int) (time.Duration, error) {
	conn, err := baselineTable(ctx, dbURL, bareEventsDDL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	rows := make([][]any, len(envs))
	for i, env := range envs {
		rows[i] = eventRow(env)
	}
	start := time.Now()
	for lo := 0; lo < len(rows); lo += chunk {
		part := rows[lo:min(lo+chunk, len(rows))]
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, eventColumns, pgx.CopyFromRows(part))
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("copy rows %d-%d: %w", lo, lo+len(part)-1, err)
		}
	}
	return time.Since(start), nil
}

// NaiveInsert times one autocommitted INSERT per event (one round trip each; the statement is
// prepared once) into a table with the events primary key in the empty database dbURL: what
// storing without batching costs.
func NaiveInsert(ctx context.Context, dbURL string, envs []*events.Envelope) (time.Duration, error) {
	conn, err := baselineTable(ctx, dbURL, eventsDDL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	const insert = `INSERT INTO events (id, kind, cluster, source, occurred_at, observed_at, pod_uid, node, envelope)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`
	start := time.Now()
	for i, env := range envs {
		if _, err := conn.Exec(ctx, insert, eventRow(env)...); err != nil {
			return 0, fmt.Errorf("insert row %d: %w", i, err)
		}
	}
	return time.Since(start), nil
}

// BareCopyTable is the table PsqlCopy fills: what anyone would try first to keep envelopes,
// issue 27's outside measure of the pipeline.
const BareCopyTable = `CREATE TABLE bare_copy (id text PRIMARY KEY, body jsonb)`

// PsqlCopy times `psql \copy` of envs' envelopes, one line each (id, then the envelope as it
// arrived), into BareCopyTable in the empty database dbURL, measured from outside: the lines
// are written to a temporary file first, and the time is the psql process's, from its start to
// its exit (one connection, one COPY, one transaction). psql is the client's path or name.
func PsqlCopy(ctx context.Context, dbURL, psql string, envs []*events.Envelope) (time.Duration, error) {
	conn, err := baselineTable(ctx, dbURL, func() (string, error) { return BareCopyTable, nil })
	if err != nil {
		return 0, err
	}
	conn.Close(context.Background())
	f, err := os.CreateTemp("", "schedlens-bare-copy-*.tsv")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	w := bufio.NewWriterSize(f, 1<<20)
	for _, env := range envs {
		w.WriteString(copyText.Replace(env.ID))
		w.WriteByte('\t')
		w.WriteString(copyText.Replace(string(env.Raw)))
		w.WriteByte('\n')
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return 0, fmt.Errorf("write the lines: %w", err)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dbURL,
		"-c", `\copy bare_copy (id, body) FROM '`+strings.ReplaceAll(f.Name(), "'", "''")+`'`)
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s \\copy: %w: %s", psql, err, strings.TrimSpace(stderr.String()))
	}
	return time.Since(start), nil
}

// copyText escapes a field of COPY's text format: backslash, tab, newline and carriage
// return written as backslash sequences.
var copyText = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)

func baselineTable(ctx context.Context, dbURL string, table func() (string, error)) (*pgx.Conn, error) {
	ddl, err := table()
	if err != nil {
		return nil, fmt.Errorf("events table definition: %w", err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", redactURL(dbURL), err)
	}
	if _, err := conn.Exec(ctx, ddl); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("create table: %w", err)
	}
	return conn, nil
}
