package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/record"
	"github.com/schedlens/schedlens/internal/report"
)

// Record builds experiment name's record (internal/record) over its pods in namespace (all
// when empty), with the record of the experiment its definition names as previous linked by
// digest. ErrNotFound as Comparison.
func (db *DB) Record(ctx context.Context, name, namespace string) (record.Record, error) {
	return db.record(ctx, name, namespace, map[string]bool{})
}

// record is Record following the chain; seen holds the experiments on the way, so that a
// cycle of previous keys ends (the record closing it links with no digest).
func (db *DB) record(ctx context.Context, name, namespace string, seen map[string]bool) (record.Record, error) {
	seen[name] = true
	c, err := db.Comparison(ctx, name, namespace, "")
	if err != nil {
		return record.Record{}, err
	}
	d, err := db.recordData(ctx, name, namespace)
	if err != nil {
		return record.Record{}, err
	}
	if n := len(d.Definitions); n > 0 {
		if prev := record.PreviousOf(d.Definitions[n-1].Data); prev != "" {
			d.Previous = &record.Link{Experiment: prev}
			if !seen[prev] {
				switch r, err := db.previous(ctx, prev, seen); {
				case err == nil:
					d.Previous.Digest = r.Digest
				case !errors.Is(err, ErrNotFound):
					return record.Record{}, fmt.Errorf("previous experiment %s: %w", prev, err)
				}
			}
		}
	}
	return record.Build(d, c, record.Options{GPUIdleThreshold: db.idle, MinGap: align.DefaultMinGap})
}

// previous is the record a chain links to: the previous experiment's own record, over every
// namespace as GET /v1/experiments/{name}/record reads it by default (whatever namespace the
// linking record is read in: the two experiments need not share one), or its latest imported
// record when none of its events is here.
func (db *DB) previous(ctx context.Context, name string, seen map[string]bool) (record.Record, error) {
	r, err := db.record(ctx, name, "", seen)
	if errors.Is(err, ErrNotFound) {
		return db.ImportedRecord(ctx, name, "")
	}
	return r, err
}

// recordData reads what a record holds besides the comparison: every definition received, the
// pods with their latest snapshot, every node's latest snapshot up to the experiment's end, and
// the count and digest of the events behind it.
func (db *DB) recordData(ctx context.Context, name, namespace string) (record.Data, error) {
	d := record.Data{Experiment: name, Namespace: namespace, Nodes: map[string]events.NodeStatus{}}
	err := db.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT occurred_at, envelope->'data' FROM events
			WHERE kind = 'experiment' AND envelope->'data'->>'name' = $1
			ORDER BY occurred_at, id COLLATE "C"`, name)
		if err != nil {
			return fmt.Errorf("read definitions: %w", err)
		}
		var (
			at  time.Time
			raw []byte
		)
		if _, err := pgx.ForEachRow(rows, []any{&at, &raw}, func() error {
			d.Definitions = append(d.Definitions, record.Definitioned{At: at, Data: append(json.RawMessage(nil), raw...)})
			return nil
		}); err != nil {
			return fmt.Errorf("read definitions: %w", err)
		}

		rows, err = tx.Query(ctx, `
			SELECT DISTINCT ON (p.uid) p.uid, COALESCE(p.exp_arm, ''), COALESCE(p.exp_run, ''), e.envelope->'data'
			FROM pods p JOIN events e ON e.pod_uid = p.uid AND e.kind = 'pod_status' AND e.class <> 'samples'
			WHERE p.exp_name = $1 AND ($2 = '' OR p.namespace = $2)
			ORDER BY p.uid, COALESCE((e.envelope->'data'->>'deleted')::boolean, false), e.occurred_at DESC, e.id COLLATE "C" DESC`, name, namespace)
		if err != nil {
			return fmt.Errorf("read the experiment's pods: %w", err)
		}
		var uid, arm, run string
		var uids []string
		if _, err := pgx.ForEachRow(rows, []any{&uid, &arm, &run, &raw}, func() error {
			var s events.PodStatus
			if err := json.Unmarshal(raw, &s); err != nil {
				return fmt.Errorf("pod %s: a stored snapshot: %w", uid, err)
			}
			d.Pods = append(d.Pods, record.Pod{Arm: arm, Run: run, Node: s.NodeName, Status: s})
			uids = append(uids, uid)
			return nil
		}); err != nil {
			return fmt.Errorf("read the experiment's pods: %w", err)
		}
		if len(uids) == 0 {
			return ErrNotFound
		}

		// The events behind the record: its pods' and its definitions, by id.
		var end *time.Time
		if err := tx.QueryRow(ctx, `
			WITH ids AS (
				SELECT id, occurred_at FROM events WHERE pod_uid = ANY($1)
				UNION ALL
				SELECT id, occurred_at FROM events WHERE kind = 'experiment' AND envelope->'data'->>'name' = $2)
			SELECT count(*), COALESCE(encode(sha256(convert_to(string_agg(id, E'\n' ORDER BY id COLLATE "C"), 'UTF8')), 'hex'), ''),
			       max(occurred_at) FILTER (WHERE id IS NOT NULL)
			FROM ids`, uids, name).Scan(&d.EventCount, &d.EventIDsDigest, &end); err != nil {
			return fmt.Errorf("digest the events: %w", err)
		}
		if d.EventIDsDigest != "" {
			d.EventIDsDigest = "sha256:" + d.EventIDsDigest
		}
		if end != nil {
			t := end.UTC()
			d.End = &t
		}

		rows, err = tx.Query(ctx, `
			SELECT DISTINCT ON (node) node, envelope->'data'
			FROM events WHERE kind = 'node_status' AND class <> 'samples' AND node IS NOT NULL AND ($1::timestamptz IS NULL OR occurred_at <= $1)
			ORDER BY node, occurred_at DESC, id COLLATE "C" DESC`, d.End)
		if err != nil {
			return fmt.Errorf("read the nodes: %w", err)
		}
		var node string
		if _, err := pgx.ForEachRow(rows, []any{&node, &raw}, func() error {
			var s events.NodeStatus
			if json.Unmarshal(raw, &s) == nil {
				d.Nodes[node] = s
			}
			return nil
		}); err != nil {
			return fmt.Errorf("read the nodes: %w", err)
		}
		return nil
	})
	return d, err
}

// ImportRecord stores a record from another schedlens, verified by the caller, in its canonical
// bytes; created is false when a record of that digest was stored already (nothing changes).
func (db *DB) ImportRecord(ctx context.Context, r record.Record) (created bool, err error) {
	b, err := record.Marshal(r)
	if err != nil {
		return false, err
	}
	tag, err := db.pool.Exec(ctx, `
		INSERT INTO imported_records (digest, experiment, namespace, record) VALUES ($1, $2, $3, $4)
		ON CONFLICT (digest) DO NOTHING`, r.Digest, r.Experiment, r.Namespace, string(b))
	if err != nil {
		return false, fmt.Errorf("import record %s: %w", r.Digest, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ImportedRecord is the latest record of experiment name imported (in namespace, when not
// empty); ErrNotFound when none was.
func (db *DB) ImportedRecord(ctx context.Context, name, namespace string) (record.Record, error) {
	var raw string
	err := db.pool.QueryRow(ctx, `
		SELECT record FROM imported_records WHERE experiment = $1 AND ($2 = '' OR namespace = $2)
		ORDER BY imported_at DESC, digest LIMIT 1`, name, namespace).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return record.Record{}, ErrNotFound
	}
	if err != nil {
		return record.Record{}, fmt.Errorf("read imported record of %s: %w", name, err)
	}
	var r record.Record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return record.Record{}, fmt.Errorf("an imported record of %s: %w", name, err)
	}
	return r, nil
}

// RecordOrImported is the experiment's own record, else (no pods here) the latest one imported
// with imported true.
func (db *DB) RecordOrImported(ctx context.Context, name, namespace string) (r record.Record, imported bool, err error) {
	r, err = db.Record(ctx, name, namespace)
	if !errors.Is(err, ErrNotFound) {
		return r, false, err
	}
	r, err = db.ImportedRecord(ctx, name, namespace)
	return r, err == nil, err
}

// importedExperiments lists the latest imported record of every experiment that has none here
// (no pods, no definition), as the experiment list shows them: marked imported, their arms, runs
// and pods as recorded.
func (db *DB) importedExperiments(ctx context.Context, local map[string]bool) ([]report.ExperimentInfo, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT DISTINCT ON (experiment) experiment, namespace, record FROM imported_records
		ORDER BY experiment, imported_at DESC, digest`)
	if err != nil {
		return nil, fmt.Errorf("list imported records: %w", err)
	}
	var out []report.ExperimentInfo
	var name, namespace, raw string
	_, err = pgx.ForEachRow(rows, []any{&name, &namespace, &raw}, func() error {
		if local[name] {
			return nil
		}
		var r record.Record
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return fmt.Errorf("an imported record of %s: %w", name, err)
		}
		out = append(out, importedInfo(r))
		return nil
	})
	return out, err
}

// importedInfo is an imported record as the experiment list shows it.
func importedInfo(r record.Record) report.ExperimentInfo {
	e := report.ExperimentInfo{Name: r.Experiment, DefinitionProblems: []string{}, Arms: []string{}, Runs: []string{},
		Imported: &report.Imported{Digest: r.Digest, Namespace: r.Namespace}}
	keys := map[string]json.RawMessage{}
	for k, v := range r.Definition.Keys {
		if string(v.Value) != "null" {
			keys[k] = v.Value
		}
	}
	if b, err := json.Marshal(keys); err == nil {
		var d events.Experiment
		if json.Unmarshal(b, &d) == nil {
			e.Definition = &d
			e.DefinitionProblems = append(e.DefinitionProblems, d.Problems()...)
		}
	}
	runs := map[string]bool{}
	for _, a := range r.Arms {
		e.Arms = append(e.Arms, a.Name)
		e.Pods += a.Pods
		for _, run := range a.Runs {
			runs[run.Run] = true
		}
	}
	e.Runs = slices.SortedFunc(maps.Keys(runs), compare.CompareRuns)
	return e
}

// Successors are the experiments whose definition in force names name as previous, by name.
func (db *DB) Successors(ctx context.Context, name string) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT name FROM experiments WHERE definition->>'previous' = $1 ORDER BY name`, name)
	if err != nil {
		return nil, fmt.Errorf("read the successors of %s: %w", name, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the successors of %s: %w", name, err)
	}
	return out, nil
}
