package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/report"
)

// The comparison reads every pod, snapshot and request of an experiment; at 300 runs and a
// million requests that is seconds, nearly all of it for runs that did not change since the
// last comparison. So what a comparison reads of a run — its pods with their measures and
// latency histograms, its arms' interruption seconds and placement — is kept per run (a
// runSlice), with the run's fingerprint, and read again only when the fingerprint changed.
//
// The fingerprint is the set of the run's pod rows with their row versions (xmin): every
// stored event of a pod and every result attributed to it by IP rewrites its row in the
// transaction that stores it (mergePods upserts the pod of every
// event with ON CONFLICT DO UPDATE, which writes a new row version even when no value
// changes), and every table a run slice reads besides the events is written in that same
// transaction (pod_latency, pod_gpu_util, pod_event_series). The pod_timeline view also reads
// end_reasons, and for pods not ended scope_watches and the inventories, which belong to no pod:
// they are part of the fingerprint of every run that reads them (sharedFingerprint). A run slice is therefore reused only for exactly the stored state it was
// read from, and the comparison it gives is the one reading everything gives
// (TestComparisonInputCachedEqualsDirect).

// runCacheMaxPods bounds the run slices by the pods they hold (a pod's summary and histogram
// take one to two kB): when full, the cache starts over. runSliceMax bounds the interruptions
// kept.
const (
	runCacheMaxPods = 50000
	runSliceMax     = 5000
)

// runSliceKey names one run of an experiment as a comparison over namespace reads it. Run ""
// is the pods without a run label (and those whose label is empty), as the comparison pools
// them.
type runSliceKey struct{ experiment, namespace, run string }

// runSlice is what ComparisonInput read of one run.
type runSlice struct {
	fingerprint string
	pods        []align.Summary // in (first_seen, uid) order, with measures
	latency     map[string]map[int32]int64
	// interruption is per arm the seconds of its ReadyBelowDesired and NoSuccess windows
	// (align.DefaultMinGap), summed in window order; nil when the run has no interruptions to
	// read (RunInterruptions: ErrNotFound).
	interruption map[string]float64
	placement    []placementRow
	failed       []failedRow
}

type placementRow struct {
	arm                  string
	node, model, sharing *string
}

type failedRow struct {
	arm, reason string
	nodes       int
}

type runCache struct {
	mu     sync.Mutex
	slices map[runSliceKey]*runSlice
	pods   int // in slices
}

func (c *runCache) get(k runSliceKey) *runSlice {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slices[k]
}

func (c *runCache) put(k runSliceKey, s *runSlice) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.slices[k]; old != nil {
		c.pods -= len(old.pods)
	}
	if c.slices == nil || c.pods+len(s.pods) > runCacheMaxPods {
		c.slices, c.pods = map[runSliceKey]*runSlice{}, 0
	}
	c.slices[k] = s
	c.pods += len(s.pods)
}

// sharedFingerprint is the part of a run's fingerprint that belongs to no pod, in two columns.
// The first is what pod_timeline reads only for a pod not ended by an observed event that has a
// scope (ended_at IS NULL AND scope_key IS NOT NULL): the scope watches (their row versions: a
// collector's heartbeat rewrites its watch's row every few seconds) and the inventories — what
// an inventory proves is read through pod_timeline, not written into the pods it lists or ends
// (migration 00011), so it changes no pod row; inventories (and their inventory_pods, stored in
// the same transaction) are only ever inserted, or truncated with every projection by a
// rebuild: their count changes with each one stored. The second, the end causes' row versions,
// every pod's end reason reads. So a run whose pods have all ended — a finished run — keeps its
// fingerprint through heartbeats and inventories, and its stored slice and comparison with it.
const sharedFingerprint = `
SELECT md5(COALESCE((SELECT string_agg(cluster || '/' || scope_key || '/' || since::text || ':' || xmin::text, ',' ORDER BY cluster, scope_key, since)
                     FROM scope_watches), '')
           || '|' || (SELECT count(*) FROM inventories)::text),
       md5(COALESCE((SELECT string_agg(rank::text || ':' || xmin::text, ',' ORDER BY rank) FROM end_reasons), ''))`

// runFingerprints is each run's pod rows with their row versions, and whether any of its pods
// reads the scope watches and inventories (sharedFingerprint).
const runFingerprints = `
SELECT COALESCE(exp_run, ''), md5(string_agg(uid || ':' || xmin::text, ',' ORDER BY uid)),
       bool_or(ended_at IS NULL AND scope_key IS NOT NULL)
FROM pods WHERE exp_name = $1 AND ($2 = '' OR namespace = $2)
GROUP BY 1`

// readFingerprints is each run's fingerprint (runFingerprints with the parts of
// sharedFingerprint its pods read) inside tx.
func readFingerprints(ctx context.Context, tx pgx.Tx, name, namespace string) (map[string]string, error) {
	var open, ends string
	if err := tx.QueryRow(ctx, sharedFingerprint).Scan(&open, &ends); err != nil {
		return nil, fmt.Errorf("read fingerprints of %s: %w", name, err)
	}
	rows, err := tx.Query(ctx, runFingerprints, name, namespace)
	if err != nil {
		return nil, fmt.Errorf("read fingerprints of %s: %w", name, err)
	}
	fps := map[string]string{}
	var run, fp string
	var reads bool
	if _, err := pgx.ForEachRow(rows, []any{&run, &fp, &reads}, func() error {
		fps[run] = sharedPart(open, ends, reads) + fp
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read fingerprints of %s: %w", name, err)
	}
	return fps, nil
}

// sharedPart is the part of sharedFingerprint a run's (or pod set's) fingerprint holds: the end
// causes always, the scope watches and inventories when one of its pods reads them.
func sharedPart(open, ends string, readsOpen bool) string {
	if readsOpen {
		return "open " + open + " " + ends + " "
	}
	return "ended " + ends + " "
}

// comparisonRuns returns the run slices of an experiment's pods in namespace, all in one
// snapshot: from this process's cache, else from those stored (stored.go), else read — and
// then stored — for the runs whose fingerprint changed.
func (db *DB) comparisonRuns(ctx context.Context, name, namespace string) (map[string]*runSlice, error) {
	out := map[string]*runSlice{}
	var computed map[string]*runSlice
	err := db.readOnly(ctx, func(tx pgx.Tx) error {
		fps, err := readFingerprints(ctx, tx, name, namespace)
		if err != nil {
			return err
		}
		var stale []string
		for run, fp := range fps {
			if s := db.runs.get(runSliceKey{name, namespace, run}); s != nil && s.fingerprint == fp {
				out[run] = s
			} else {
				stale = append(stale, run)
			}
		}
		if len(stale) == 0 {
			return nil
		}
		slices.SortFunc(stale, compare.CompareRuns)
		stored, err := db.storedRunSlices(ctx, tx, name, namespace, stale, fps)
		if err != nil {
			return err
		}
		stale = slices.DeleteFunc(stale, func(run string) bool { return stored[run] != nil })
		computed, err = db.readRunSlices(ctx, tx, name, namespace, stale)
		if err != nil {
			return err
		}
		db.stats.slicesComputed.Add(int64(len(computed)))
		for _, read := range []map[string]*runSlice{stored, computed} {
			for run, s := range read {
				s.fingerprint = fps[run]
				db.runs.put(runSliceKey{name, namespace, run}, s)
				out[run] = s
			}
		}
		return nil
	})
	if err == nil {
		db.storeRunSlices(ctx, name, namespace, computed)
	}
	return out, err
}

// readRunSlices reads the slices of runs (names as runFingerprints gives them) inside tx.
func (db *DB) readRunSlices(ctx context.Context, tx pgx.Tx, name, namespace string, runs []string) (map[string]*runSlice, error) {
	out := make(map[string]*runSlice, len(runs))
	if len(runs) == 0 {
		return out, nil
	}
	for _, r := range runs {
		out[r] = &runSlice{latency: map[string]map[int32]int64{}}
	}
	rows, err := tx.Query(ctx, `SELECT `+summaryColumns+` FROM pod_timeline
		WHERE exp_name = $1 AND ($2 = '' OR namespace = $2) AND COALESCE(exp_run, '') = ANY($3)
		ORDER BY first_seen, uid`, name, namespace, runs)
	if err != nil {
		return nil, fmt.Errorf("read pods of %s: %w", name, err)
	}
	var pods []align.Summary
	for rows.Next() {
		s, _, err := scanSummary(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("read pods of %s: %w", name, err)
		}
		pods = append(pods, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read pods of %s: %w", name, err)
	}
	if err := fillMeasures(ctx, tx, pods, db.idle); err != nil {
		return nil, err
	}
	runOf := make(map[string]string, len(pods))
	uids := make([]string, len(pods))
	for i, p := range pods {
		run := deref(p.Experiment.Run)
		out[run].pods = append(out[run].pods, p)
		runOf[p.Pod.UID] = run
		uids[i] = p.Pod.UID
	}

	rows, err = tx.Query(ctx, `SELECT pod_uid, bucket, count FROM pod_latency WHERE pod_uid = ANY($1)`, uids)
	if err != nil {
		return nil, fmt.Errorf("read latencies of %s: %w", name, err)
	}
	var uid string
	var bucket int32
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&uid, &bucket, &n}, func() error {
		l := out[runOf[uid]].latency
		if l[uid] == nil {
			l[uid] = map[int32]int64{}
		}
		l[uid][bucket] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read latencies of %s: %w", name, err)
	}

	for _, run := range runs {
		arms, err := runInterruptions(ctx, tx, runArms{experiment: name, namespace: namespace, run: run}, align.DefaultMinGap)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s := out[run]
		s.interruption = map[string]float64{}
		for _, a := range arms {
			var sec float64
			for _, w := range a.Windows {
				if w.Kind == align.ReadyBelowDesired || w.Kind == align.NoSuccess {
					sec += w.Seconds
				}
			}
			s.interruption[a.Arm] = sec
		}
	}

	rows, err = tx.Query(ctx, `
		SELECT COALESCE(t.exp_run, ''), COALESCE(t.exp_arm, ''), t.node, g.model, g.sharing
		FROM pod_timeline t
		`+lastGPUJoin+`
		WHERE t.exp_name = $1 AND ($2 = '' OR t.namespace = $2) AND COALESCE(t.exp_run, '') = ANY($3)`, name, namespace, runs)
	if err != nil {
		return nil, fmt.Errorf("read placement of %s: %w", name, err)
	}
	var run string
	var pr placementRow
	if _, err := pgx.ForEachRow(rows, []any{&run, &pr.arm, &pr.node, &pr.model, &pr.sharing}, func() error {
		out[run].placement = append(out[run].placement, pr)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read placement of %s: %w", name, err)
	}
	rows, err = tx.Query(ctx, `
		SELECT COALESCE(p.exp_run, ''), COALESCE(p.exp_arm, ''), r->>'reason', sum((r->>'nodes')::int)::int
		FROM events e JOIN pods p ON p.uid = e.pod_uid
		CROSS JOIN LATERAL jsonb_array_elements(COALESCE(e.envelope->'data'->'scheduling'->'reasons', '[]'::jsonb)) r
		WHERE p.exp_name = $1 AND ($2 = '' OR p.namespace = $2) AND COALESCE(p.exp_run, '') = ANY($3)
		  AND e.kind = 'k8s_event' AND e.class <> 'samples' AND e.envelope->'data'->>'reason' IN ('FailedScheduling', 'Unschedulable')
		GROUP BY 1, 2, 3`, name, namespace, runs)
	if err != nil {
		return nil, fmt.Errorf("read scheduling failures of %s: %w", name, err)
	}
	var fr failedRow
	if _, err := pgx.ForEachRow(rows, []any{&run, &fr.arm, &fr.reason, &fr.nodes}, func() error {
		out[run].failed = append(out[run].failed, fr)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read scheduling failures of %s: %w", name, err)
	}
	return out, nil
}

// comparisonArms assembles the comparison's arms and placement from run slices as reading
// every pod would (comparisonInputDirect): pods in (first_seen, uid) order within each arm's
// run, preemptions caused counted over the whole experiment.
func comparisonArms(in *compare.Input, runs map[string]*runSlice) {
	caused := map[string]int{}
	for _, s := range runs {
		for _, p := range s.pods {
			if p.PreemptedBy != nil {
				caused[*p.PreemptedBy]++
			}
		}
	}
	for _, run := range slices.SortedFunc(maps.Keys(runs), compare.CompareRuns) {
		s := runs[run]
		for _, p := range s.pods {
			arm, r := deref(p.Experiment.Arm), deref(p.Experiment.Run)
			if in.Arms[arm] == nil {
				in.Arms[arm] = map[string]compare.RunData{}
			}
			rd := in.Arms[arm][r]
			rd.Pods = append(rd.Pods, compare.PodData{Summary: p, Latency: s.latency[p.Pod.UID], PreemptionsCaused: caused[p.Pod.UID]})
			in.Arms[arm][r] = rd
		}
		for arm, sec := range s.interruption {
			if rd, ok := in.Arms[arm][run]; ok {
				rd.InterruptionS += sec
				in.Arms[arm][run] = rd
			}
		}
	}
	in.Placement = map[string]*ArmPlacement{}
	get := func(arm string) *ArmPlacement {
		p := in.Placement[arm]
		if p == nil {
			p = compare.NewArmPlacement()
			in.Placement[arm] = p
		}
		return p
	}
	for _, s := range runs {
		for _, r := range s.placement {
			p := get(r.arm)
			if r.node != nil {
				p.Nodes[*r.node]++
			}
			if r.model != nil && *r.model != "" {
				p.GPUModels[*r.model]++
			}
			if r.sharing != nil && *r.sharing != "" {
				p.Sharing[*r.sharing]++
			}
		}
		for _, r := range s.failed {
			get(r.arm).FailedScheduling[r.reason] += r.nodes
		}
	}
}

// A run's service interruptions (RunInterruptions: every timeline reads its run's) are kept the
// same way, by the fingerprint of the run's pod rows, which is all they read.

type interruptionKey struct {
	runArms
	minGap time.Duration
}

type interruptionEntry struct {
	fingerprint string
	arms        []report.ArmInterruptions // nil: ErrNotFound
}

// cachedInterruptions is runInterruptions inside tx, from the cache when the run's pod rows
// did not change since it was computed.
func (db *DB) cachedInterruptions(ctx context.Context, tx pgx.Tx, q runArms, minGap time.Duration) ([]report.ArmInterruptions, error) {
	var fp *string
	var reads *bool
	if err := tx.QueryRow(ctx, `
		SELECT md5(string_agg(p.uid || ':' || p.xmin::text, ',' ORDER BY p.uid)), bool_or(p.ended_at IS NULL AND p.scope_key IS NOT NULL)
		FROM pods p WHERE `+runArmsWhere, q.args()...).Scan(&fp, &reads); err != nil {
		return nil, fmt.Errorf("read run %s/%s: %w", q.experiment, q.run, err)
	}
	// The run's interruptions read pod_timeline, which also reads the end causes and, for pods
	// not ended, the scope watches and the inventories: their part of the fingerprint too.
	var open, ends string
	if err := tx.QueryRow(ctx, sharedFingerprint).Scan(&open, &ends); err != nil {
		return nil, fmt.Errorf("read run %s/%s: %w", q.experiment, q.run, err)
	}
	if fp != nil {
		*fp = sharedPart(open, ends, reads != nil && *reads) + *fp
	}
	k := interruptionKey{q, minGap}
	if e, ok := db.interruptions.get(k); ok && e.fingerprint == deref(fp) {
		if e.arms == nil {
			return nil, ErrNotFound
		}
		return slices.Clone(e.arms), nil
	}
	arms, err := runInterruptions(ctx, tx, q, minGap)
	switch {
	case errors.Is(err, ErrNotFound):
		db.interruptions.put(k, interruptionEntry{fingerprint: deref(fp)})
		return nil, err
	case err != nil:
		return nil, err
	}
	db.interruptions.put(k, interruptionEntry{fingerprint: deref(fp), arms: slices.Clone(arms)})
	return arms, nil
}

// Comparison builds the comparison of experiment name's pods in namespace with baseline
// (compare.Build over ComparisonInput). A comparison built from the same stored state — the same
// run fingerprints, definition and nodes — with the same baseline is the same, so the last few
// are kept and handed out again, and the last one of each (experiment, namespace, baseline) is
// stored for every process (stored.go): the result is shared, read it and do not change it.
// ErrNotFound and *compare.BadBaselineError as ComparisonInput and compare.Build.
func (db *DB) Comparison(ctx context.Context, name, namespace, baseline string) (compare.Comparison, error) {
	if db.direct {
		in, err := db.ComparisonInput(ctx, name, namespace)
		if err != nil {
			return compare.Comparison{}, err
		}
		return compare.Build(in, baseline)
	}
	memKey := func(key string) string { return name + "\x00" + namespace + "\x00" + baseline + "\x00" + key }
	// The stored comparison names the nodes it read: with the runs' fingerprints and the
	// definition that is its whole key, read without a run slice.
	in, def, err := db.comparisonDefinitionRaw(ctx, name, namespace)
	if err != nil {
		return compare.Comparison{}, err
	}
	var fps map[string]string
	if err := db.readOnly(ctx, func(tx pgx.Tx) error {
		fps, err = readFingerprints(ctx, tx, name, namespace)
		return err
	}); err != nil {
		return compare.Comparison{}, err
	}
	if len(fps) == 0 {
		return compare.Comparison{}, ErrNotFound
	}
	key, match, err := db.storedComparisonKeyNow(ctx, in, def, fps, baseline)
	if err != nil {
		return compare.Comparison{}, err
	}
	if key != "" {
		if c, ok := db.comparisons.get(memKey(key)); ok {
			db.stats.comparisonsKept.Add(1)
			return c, nil
		}
		if match {
			c, ok, err := db.loadStoredComparison(ctx, in, baseline, key)
			if err != nil {
				return compare.Comparison{}, err
			}
			if ok {
				db.comparisons.put(memKey(key), c)
				return c, nil
			}
		}
	}

	in, key, err = db.comparisonInput(ctx, name, namespace)
	if err != nil {
		return compare.Comparison{}, err
	}
	if c, ok := db.comparisons.get(memKey(key)); ok {
		db.stats.comparisonsKept.Add(1)
		return c, nil
	}
	c, err := compare.Build(in, baseline)
	if err != nil {
		return c, err
	}
	db.stats.comparisonsBuilt.Add(1)
	db.comparisons.put(memKey(key), c)
	db.storeComparison(ctx, in, baseline, key, c)
	return c, nil
}

// comparisonKey is everything a comparison's input was read from, as text: each run's
// fingerprint (its pod rows' versions, scope_watches and end_reasons), the definition as stored
// with when it was received, and the nodes' labels and versions.
func comparisonKey(in compare.Input, def []byte, runs map[string]*runSlice) (string, error) {
	fps := make(map[string]string, len(runs))
	for run, s := range runs {
		fps[run] = s.fingerprint
	}
	return comparisonKeyOf(fps, def, in)
}

// comparisonKeyOf is comparisonKey from the runs' fingerprints and in's DefinedAt and Nodes.
func comparisonKeyOf(fps map[string]string, def []byte, in compare.Input) (string, error) {
	var b strings.Builder
	for _, run := range slices.SortedFunc(maps.Keys(fps), compare.CompareRuns) {
		b.WriteString(run)
		b.WriteByte(0)
		b.WriteString(fps[run])
		b.WriteByte(0)
	}
	b.WriteString(strconv.Quote(string(def)))
	b.WriteString(in.DefinedAt.UTC().Format(time.RFC3339Nano))
	nodes, err := json.Marshal(in.Nodes) // map keys sorted
	if err != nil {
		return "", err
	}
	b.Write(nodes)
	return b.String(), nil
}

// comparisonsMax is how many built comparisons are kept (each a few hundred kB at 300 runs).
const comparisonsMax = 16

// capped is a map for concurrent use that starts over when it holds max entries: the bound of
// the interruption and comparison caches.
type capped[K comparable, V any] struct {
	max     int
	mu      sync.Mutex
	entries map[K]V
}

func (c *capped[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	return e, ok
}

func (c *capped[K, V]) put(k K, e V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= c.max {
		c.entries = map[K]V{}
	}
	c.entries[k] = e
}
