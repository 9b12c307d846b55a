package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/buildinfo"
	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/scope"
)

// The run slices and built comparisons of comparison.go are kept in Postgres as well (tables
// run_slices and stored_comparisons, migration 00018), so that a process that has not read an
// experiment yet — an api replica just started, or one the load balancer never sent it to —
// does not read every pod, snapshot and request of it. Each row is keyed by what it was
// computed from, as the in-process caches are (a run slice by its run's fingerprint, a
// comparison by comparisonKey), and by storedFormat: the form of what is stored, the build that
// computed it and the GPU idle threshold summaries are read with (WithIdleThreshold). A row that
// does not match is computed again and replaced; rows are never trusted beyond their key.
//
// Who writes: any process that computed one (the api on its first read, best effort — an api on
// a read-only role or a standby computes and serves without storing) and the correlator, which
// keeps every experiment's default comparison stored after each maintenance (WarmComparisons),
// so the first comparison any api replica serves reads one row.

// storedFormatVersion is bumped when the form of a stored run slice or comparison changes.
const storedFormatVersion = "1"

// storedFormat is what a stored row must have been computed under to be used by this process.
func (db *DB) storedFormat() string {
	return storedFormatVersion + " " + buildinfo.Version() + " idle=" + strconv.FormatFloat(db.idle, 'g', -1, 64)
}

// storedJSON is how stored bodies are written and read: encoding/json's form and semantics
// (nil and empty slices apart, as the API writes them), through json/v2's faster implementation.
var storedJSON = jsonv1.DefaultOptionsV1()

// storedStats counts where comparisons and run slices came from (tests and the read bench).
type storedStats struct {
	slicesComputed, slicesLoaded        atomic.Int64
	comparisonsBuilt, comparisonsLoaded atomic.Int64
	comparisonsKept, storeWritesRefused atomic.Int64
}

// runSliceBody is a runSlice as stored.
type runSliceBody struct {
	Pods         []align.Summary            `json:"pods"`
	Latency      map[string]map[int32]int64 `json:"latency"`
	Interruption map[string]float64         `json:"interruption"`
	Placement    []placementBody            `json:"placement"`
	Failed       []failedBody               `json:"failed"`
}

type placementBody struct {
	Arm     string  `json:"arm"`
	Node    *string `json:"node"`
	Model   *string `json:"model"`
	Sharing *string `json:"sharing"`
}

type failedBody struct {
	Arm    string `json:"arm"`
	Reason string `json:"reason"`
	Nodes  int    `json:"nodes"`
}

func encodeRunSlice(s *runSlice) ([]byte, error) {
	b := runSliceBody{Pods: s.pods, Latency: s.latency, Interruption: s.interruption}
	for _, p := range s.placement {
		b.Placement = append(b.Placement, placementBody{p.arm, p.node, p.model, p.sharing})
	}
	for _, f := range s.failed {
		b.Failed = append(b.Failed, failedBody{f.arm, f.reason, f.nodes})
	}
	return jsonv2.Marshal(b, storedJSON)
}

func decodeRunSlice(data []byte) (*runSlice, error) {
	var b runSliceBody
	if err := jsonv2.Unmarshal(data, &b, storedJSON); err != nil {
		return nil, err
	}
	s := &runSlice{pods: b.Pods, latency: b.Latency, interruption: b.Interruption}
	if s.latency == nil {
		s.latency = map[string]map[int32]int64{}
	}
	for _, p := range b.Placement {
		s.placement = append(s.placement, placementRow{p.Arm, p.Node, p.Model, p.Sharing})
	}
	for _, f := range b.Failed {
		s.failed = append(s.failed, failedRow{f.Arm, f.Reason, f.Nodes})
	}
	return s, nil
}

// storedRunSlices reads inside tx the stored slices of runs whose fingerprint (fps) and format
// match; the others are left out.
func (db *DB) storedRunSlices(ctx context.Context, tx pgx.Tx, name, namespace string, runs []string, fps map[string]string) (map[string]*runSlice, error) {
	want := make([]string, len(runs))
	for i, r := range runs {
		want[i] = fps[r]
	}
	rows, err := tx.Query(ctx, `
		SELECT s.run, s.body FROM run_slices s JOIN unnest($3::text[], $4::text[]) w(run, fingerprint) USING (run, fingerprint)
		WHERE s.experiment = $1 AND s.namespace = $2 AND s.format = $5`, name, namespace, runs, want, db.storedFormat())
	if err != nil {
		return nil, fmt.Errorf("read stored runs of %s: %w", name, err)
	}
	out := map[string]*runSlice{}
	var run string
	var body []byte
	if _, err := pgx.ForEachRow(rows, []any{&run, &body}, func() error {
		s, err := decodeRunSlice(body)
		if err != nil {
			db.logger.Warn("stored run slice unreadable: computing it again", "experiment", name, "run", run, "error", err)
			return nil
		}
		s.fingerprint = fps[run]
		out[run] = s
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read stored runs of %s: %w", name, err)
	}
	db.stats.slicesLoaded.Add(int64(len(out)))
	return out, nil
}

// storeRunSlices stores the slices computed (best effort: see storeRefused).
func (db *DB) storeRunSlices(ctx context.Context, name, namespace string, computed map[string]*runSlice) {
	if len(computed) == 0 {
		return
	}
	runs := slices.Sorted(maps.Keys(computed))
	fps, bodies := make([]string, len(runs)), make([][]byte, len(runs))
	for i, r := range runs {
		b, err := encodeRunSlice(computed[r])
		if err != nil {
			db.logger.Warn("encode run slice", "experiment", name, "run", r, "error", err)
			return
		}
		fps[i], bodies[i] = computed[r].fingerprint, b
	}
	_, err := db.pool.Exec(ctx, `
		INSERT INTO run_slices (experiment, namespace, run, fingerprint, format, body)
		SELECT $1, $2, r, f, $6, b FROM unnest($3::text[], $4::text[], $5::bytea[]) AS u(r, f, b)
		ON CONFLICT (experiment, namespace, run) DO UPDATE
		SET fingerprint = excluded.fingerprint, format = excluded.format, body = excluded.body, computed_at = now()`,
		name, namespace, runs, fps, bodies, db.storedFormat())
	db.storeRefused(err, "run slices", name)
}

// storeRefused logs a failed store write: quietly when the role or server refuses writes (an
// api on a read-only role or a standby serves what it computed without keeping it), as a
// warning otherwise. Either way the answer stands.
func (db *DB) storeRefused(err error, what, experiment string) {
	switch {
	case err == nil:
	case IsPermissionDenied(err):
		if db.stats.storeWritesRefused.Add(1) == 1 {
			db.logger.Info("cannot store computed "+what+" (read-only database role or standby): every replica computes its own", "experiment", experiment, "error", err)
		}
	default:
		db.logger.Warn("store computed "+what, "experiment", experiment, "error", err)
	}
}

// storedComparisonKey is the key a comparison is stored under: format and comparisonKey, hashed.
func (db *DB) storedComparisonKey(key string) []byte {
	h := sha256.New()
	h.Write([]byte(db.storedFormat()))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return h.Sum(nil)
}

// storedComparisonKeyNow reads which nodes the comparison stored for (experiment, namespace,
// baseline) named — the same run fingerprints give the same placement, so the same nodes — and
// returns the comparisonKey of the state stored now: the runs' fingerprints fps, the definition
// def and those nodes as they are now (in.Nodes is set). match says the stored comparison was
// built from exactly that state; key is "" when none is stored.
func (db *DB) storedComparisonKeyNow(ctx context.Context, in compare.Input, def []byte, fps map[string]string, baseline string) (key string, match bool, err error) {
	var stored []byte
	var nodes []string
	err = db.pool.QueryRow(ctx, `SELECT key, nodes FROM stored_comparisons WHERE experiment = $1 AND namespace = $2 AND baseline = $3`,
		in.Experiment, in.Namespace, baseline).Scan(&stored, &nodes)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read stored comparison of %s: %w", in.Experiment, err)
	}
	if in.Nodes, err = db.nodeInfos(ctx, nodes); err != nil {
		return "", false, err
	}
	if key, err = comparisonKeyOf(fps, def, in); err != nil {
		return "", false, err
	}
	return key, bytes.Equal(db.storedComparisonKey(key), stored), nil
}

// loadStoredComparison reads the comparison stored for (experiment, namespace, baseline) under
// key; ok false when it was replaced since, or cannot be read (it is built again).
func (db *DB) loadStoredComparison(ctx context.Context, in compare.Input, baseline, key string) (c compare.Comparison, ok bool, err error) {
	var body []byte
	err = db.pool.QueryRow(ctx, `SELECT body FROM stored_comparisons WHERE experiment = $1 AND namespace = $2 AND baseline = $3 AND key = $4`,
		in.Experiment, in.Namespace, baseline, db.storedComparisonKey(key)).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("read stored comparison of %s: %w", in.Experiment, err)
	}
	if err := jsonv2.Unmarshal(body, &c, storedJSON); err != nil {
		db.logger.Warn("stored comparison unreadable: building it again", "experiment", in.Experiment, "error", err)
		return compare.Comparison{}, false, nil
	}
	db.stats.comparisonsLoaded.Add(1)
	return c, true, nil
}

// storeComparison stores a comparison built (best effort: storeRefused) with the nodes its input
// read.
func (db *DB) storeComparison(ctx context.Context, in compare.Input, baseline, key string, c compare.Comparison) {
	body, err := jsonv2.Marshal(c, storedJSON)
	if err != nil {
		db.logger.Warn("encode comparison", "experiment", in.Experiment, "error", err)
		return
	}
	_, err = db.pool.Exec(ctx, `
		INSERT INTO stored_comparisons (experiment, namespace, baseline, key, nodes, body) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (experiment, namespace, baseline) DO UPDATE
		SET key = excluded.key, nodes = excluded.nodes, body = excluded.body, computed_at = now()`,
		in.Experiment, in.Namespace, baseline, db.storedComparisonKey(key), append([]string{}, slices.Sorted(maps.Keys(in.Nodes))...), body)
	db.storeRefused(err, "comparison", in.Experiment)
}

// WarmComparisons keeps the default comparison (every namespace, the definition's baseline) of
// every experiment with pods stored, building those whose stored state changed since: the
// correlator runs it every -comparison-warm-interval, so that an api replica's first comparison
// reads one row. With onlyQuiet, an experiment is built only when its runs' fingerprints are
// those the previous call saw — it held still for a whole interval — so that a run being stored
// is not compared again and again while the correlator has events to store (a comparison of
// 300 runs takes seconds of CPU). It returns how many were built; an experiment that cannot be
// compared is skipped.
func (db *DB) WarmComparisons(ctx context.Context, onlyQuiet bool) (int, error) {
	list, err := db.Experiments(ctx, scope.Scope{})
	if err != nil {
		return 0, err
	}
	before := db.stats.comparisonsBuilt.Load()
	seen := map[string]string{}
	for _, e := range list {
		if e.Imported != nil || e.Pods == 0 {
			continue
		}
		if onlyQuiet {
			var fps map[string]string
			if err := db.readOnly(ctx, func(tx pgx.Tx) error {
				fps, err = readFingerprints(ctx, tx, e.Name, "")
				return err
			}); err != nil {
				return int(db.stats.comparisonsBuilt.Load() - before), err
			}
			fp, err := comparisonKeyOf(fps, nil, compare.Input{})
			if err != nil {
				return int(db.stats.comparisonsBuilt.Load() - before), err
			}
			seen[e.Name] = fp
			if db.warmSeen[e.Name] != fp {
				continue
			}
		}
		_, err := db.Comparison(ctx, e.Name, "", "")
		var bad *compare.BadBaselineError
		switch {
		case err == nil, errors.Is(err, ErrNotFound), errors.As(err, &bad):
		case ctx.Err() != nil:
			return int(db.stats.comparisonsBuilt.Load() - before), ctx.Err()
		default:
			db.logger.Warn("warm comparison", "experiment", e.Name, "error", err)
		}
	}
	if onlyQuiet {
		db.warmSeen = seen
	}
	return int(db.stats.comparisonsBuilt.Load() - before), nil
}
