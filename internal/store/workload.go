package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/summary"
	"github.com/schedlens/schedlens/internal/workload"
)

const mergeWorkloadState = `
INSERT INTO workload_states (id, cluster, kind, namespace, name, occurred_at, status)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`

// queueWorkloads adds the workload controllers' states among envs to b.
func queueWorkloads(b *pgx.Batch, envs []*events.Envelope) {
	for _, env := range envs {
		if w, ok := env.Payload.(*events.WorkloadStatus); ok {
			b.Queue(mergeWorkloadState, env.ID, env.Cluster, w.Kind, w.Namespace, w.Name, env.OccurredAt, string(env.Data))
		}
	}
}

// backfillWorkloads gives the pods stored before their workload was (migration 00012) the
// workload and revision of their first snapshot (events.WorkloadOf), a thousand pods per
// statement. It touches only pods without a workload that have a snapshot: after one pass it
// finds nothing to do.
func (db *DB) backfillWorkloads(ctx context.Context) (int, error) {
	done := 0
	after := ""
	for {
		rows, err := db.pool.Query(ctx, `
			SELECT p.uid, p.namespace, p.name, e.envelope->'data'
			FROM (SELECT uid, namespace, name FROM pods WHERE workload_kind IS NULL AND uid > $1 ORDER BY uid LIMIT 1000) p
			LEFT JOIN LATERAL (SELECT envelope FROM events WHERE pod_uid = p.uid AND kind = 'pod_status' AND class <> 'samples' ORDER BY occurred_at LIMIT 1) e ON true`, after)
		if err != nil {
			return done, fmt.Errorf("read pods without a workload: %w", err)
		}
		var uids, kinds, names, revs []string
		n := 0
		var (
			uid, ns, name string
			data          []byte
		)
		_, err = pgx.ForEachRow(rows, []any{&uid, &ns, &name, &data}, func() error {
			n++
			after = uid
			if data == nil {
				return nil // no snapshot of it (yet): nothing says its owner
			}
			var p events.PodStatus
			if err := json.Unmarshal(data, &p); err != nil {
				return nil // a snapshot the codec stored is valid; skip what is not
			}
			w, rev := events.WorkloadOf(ns, name, &p)
			uids, kinds, names, revs = append(uids, uid), append(kinds, w.Kind), append(names, w.Name), append(revs, rev)
			return nil
		})
		if err != nil {
			return done, fmt.Errorf("read pods without a workload: %w", err)
		}
		if len(uids) > 0 {
			tag, err := db.pool.Exec(ctx, `
				UPDATE pods p SET workload_kind = u.kind, workload_name = u.name, revision = NULLIF(u.rev, '')
				FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(uid, kind, name, rev)
				WHERE p.uid = u.uid AND p.workload_kind IS NULL`, uids, kinds, names, revs)
			if err != nil {
				return done, fmt.Errorf("set the pods' workloads: %w", err)
			}
			done += int(tag.RowsAffected())
		}
		if n < 1000 {
			return done, nil
		}
	}
}

// WorkloadFilter narrows a read of workloads and disruptions (report.WorkloadFilter: the web UI
// names it without importing the store).
type WorkloadFilter = report.WorkloadFilter

// Lookback is how long before a window's start a read looks for what a disruption overlapping
// the window began with: a drain cordoned up to an hour earlier is still found.
const Lookback = time.Hour

// workloadInput gathers what detection reads for the pods of f alive at some time from
// from − Lookback to to: their timeline summaries, workloads and revisions, Ready spans and
// DisruptionTarget conditions, FailedScheduling notes, their controllers' states and every
// node's changes. Requests are not read here (successesAround).
func (db *DB) workloadInput(ctx context.Context, tx pgx.Tx, f WorkloadFilter, from, to time.Time) (workload.Input, error) {
	in := workload.Input{From: from, To: to, MinGap: align.DefaultMinGap}
	since := from.Add(-Lookback)
	rows, err := tx.Query(ctx, `
		SELECT `+summaryColumns+`, COALESCE(workload_kind, 'Pod'), COALESCE(workload_name, name), COALESCE(revision, '')
		FROM pod_timeline
		WHERE uid IN (SELECT uid FROM pods
		              WHERE first_seen <= $2 AND (ended_at IS NULL OR ended_at >= $1)
		                AND ($3 = '' OR namespace = $3)
		                AND ($4 = '' OR COALESCE(workload_kind, 'Pod') = $4)
		                AND ($5 = '' OR COALESCE(workload_name, name) = $5)
		                AND ($6::text[] IS NULL OR namespace = ANY($6)))
		  AND (ended IS NULL OR ended >= $1)
		ORDER BY first_seen, uid`, since, to, f.Namespace, f.Kind, f.Name, f.Scope.Namespaces())
	if err != nil {
		return in, fmt.Errorf("read the window's pods: %w", err)
	}
	for rows.Next() {
		var p workload.Pod
		var kind, name string
		s, _, err := scanSummary(&extraCols{rows: rows, extra: []any{&kind, &name, &p.Revision}})
		if err != nil {
			rows.Close()
			return in, fmt.Errorf("read the window's pods: %w", err)
		}
		p.Summary = s
		p.Workload = events.WorkloadRef{Namespace: s.Pod.Namespace, Kind: kind, Name: name}
		in.Pods = append(in.Pods, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return in, fmt.Errorf("read the window's pods: %w", err)
	}
	if err := db.podConditions(ctx, tx, in.Pods, to); err != nil {
		return in, err
	}
	if in.States, err = workloadStates(ctx, tx, f, since, to); err != nil {
		return in, err
	}
	if in.Nodes, err = db.nodeChanges(ctx, since, to); err != nil {
		return in, err
	}
	return in, nil
}

// extraCols scans a row's summary columns and then extra ones (scanSummary reads the first).
type extraCols struct {
	rows  pgx.Rows
	extra []any
}

func (e *extraCols) Scan(dest ...any) error { return e.rows.Scan(append(dest, e.extra...)...) }

// eventData names an event e's data document d, taken out of the envelope once per row: the
// columns below read d, not e.envelope->'data' each (which copies the document out again for
// every column: five to eight times slower on pod snapshots, measured).
const eventData = `CROSS JOIN LATERAL (SELECT e.envelope->'data') AS x(d)`

// snapshotColumns are what detection reads of a pod_status event's data d (eventData), in SQL
// (decoding whole envelopes dominated the cost of a large read): phase, the Ready condition's
// status, terminating, deleted, and the DisruptionTarget condition's reason when it is True.
const snapshotColumns = `COALESCE(d->>'phase', ''),
		       jsonb_path_query_first(d, '$.conditions[*] ? (@.type == "Ready").status') #>> '{}',
		       d->>'deletion_timestamp' IS NOT NULL,
		       COALESCE((d->>'deleted')::boolean, false),
		       jsonb_path_query_first(d, '$.conditions[*] ? (@.type == "DisruptionTarget" && @.status == "True").reason') #>> '{}'`

// succeeded is true for a request event e that succeeded (#>> reads the one field without
// copying data out first: three times faster than ->'data'->>'ok', measured).
const succeeded = `(e.envelope #>> '{data,ok}')::boolean`

// snapshot is what snapshotColumns read of one pod_status.
type snapshot struct {
	phase                string
	ready, target        *string
	terminating, deleted bool
}

// podFacts gathers, event by event in time order, what detection reads of pods besides their
// timeline summaries: their snapshots, DisruptionTarget conditions and FailedScheduling notes.
type podFacts struct {
	snaps    map[string][]*events.Envelope
	targets  map[string]*workload.Target
	failures map[string][]report.SchedulingFailure
}

func newPodFacts() *podFacts {
	return &podFacts{snaps: map[string][]*events.Envelope{}, targets: map[string]*workload.Target{}, failures: map[string][]report.SchedulingFailure{}}
}

// snapshot adds pod uid's snapshot at at.
func (f *podFacts) snapshot(uid string, at time.Time, s snapshot) {
	f.snaps[uid] = append(f.snaps[uid], readySnapshot(at, s.phase, s.ready, s.terminating, s.deleted))
	if s.target != nil && f.targets[uid] == nil {
		f.targets[uid] = &workload.Target{Reason: *s.target, At: at}
	}
}

// fill sets each pod's Ready spans (align.ReadySpans; a pod not seen to end stays as it was
// last seen until to), its DisruptionTarget condition (the first snapshot showing it True) and
// its FailedScheduling notes.
func (f *podFacts) fill(pods []workload.Pod, to time.Time) {
	for i := range pods {
		p := &pods[i]
		end := to
		if p.Milestones.Ended != nil && p.Milestones.Ended.Before(end) {
			end = *p.Milestones.Ended
		}
		p.Ready = align.ReadySpans(f.snaps[p.Pod.UID], end)
		p.Target = f.targets[p.Pod.UID]
		p.FailedScheduling = f.failures[p.Pod.UID]
	}
}

// podConditions fills in each pod's Ready spans, DisruptionTarget condition and FailedScheduling
// notes (podFacts.fill) from its events.
func (db *DB) podConditions(ctx context.Context, q querier, pods []workload.Pod, to time.Time) error {
	if len(pods) == 0 {
		return nil
	}
	uids := make([]string, len(pods))
	for i := range pods {
		uids[i] = pods[i].Pod.UID
	}
	rows, err := q.Query(ctx, `
		SELECT * FROM (
			SELECT e.pod_uid, e.kind, e.occurred_at, NULL AS note, `+snapshotColumns+`, e.id
			FROM events e `+eventData+`
			WHERE e.pod_uid = ANY($1) AND e.kind = 'pod_status' AND e.class <> 'samples'
			UNION ALL
			SELECT e.pod_uid, e.kind, e.occurred_at, e.envelope->'data'->>'note', '', NULL, false, false, NULL, e.id
			FROM events e
			WHERE e.pod_uid = ANY($1) AND e.kind = 'k8s_event' AND e.class <> 'samples' AND e.envelope->'data'->>'reason' IN ('FailedScheduling', 'Unschedulable')) u
		ORDER BY occurred_at, id COLLATE "C"`, uids)
	if err != nil {
		return fmt.Errorf("read the pods' snapshots: %w", err)
	}
	f := newPodFacts()
	var (
		uid, kind, id string
		at            time.Time
		note          *string
		s             snapshot
	)
	_, err = pgx.ForEachRow(rows, []any{&uid, &kind, &at, &note, &s.phase, &s.ready, &s.terminating, &s.deleted, &s.target, &id}, func() error {
		at = at.UTC()
		if kind == string(events.KindK8sEvent) {
			f.failures[uid] = append(f.failures[uid], report.SchedulingFailure{At: at, Note: deref(note)})
			return nil
		}
		f.snapshot(uid, at, s)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the pods' snapshots: %w", err)
	}
	f.fill(pods, to)
	return nil
}

// workloadStates reads the states of f's controllers observed in [since, to], and each one's
// last state before since (what it wanted when the window began).
func workloadStates(ctx context.Context, q querier, f WorkloadFilter, since, to time.Time) ([]workload.State, error) {
	// A Deployment's ReplicaSets name their revisions: read them with it.
	kinds := []string{}
	if f.Kind != "" {
		kinds = append(kinds, f.Kind)
		if f.Kind == events.WorkloadDeployment {
			kinds = append(kinds, events.WorkloadReplicaSet)
		}
	}
	return readStates(ctx, q, `
		WITH scope AS (
			SELECT * FROM workload_states
			WHERE ($3 = '' OR namespace = $3) AND (cardinality($4::text[]) = 0 OR kind = ANY($4))
			  AND ($5 = '' OR name = $5 OR kind = 'ReplicaSet' AND status->'owner'->>'name' = $5)
			  AND ($6::text[] IS NULL OR namespace = ANY($6)))`,
		since, to, f.Namespace, kinds, f.Name, f.Scope.Namespaces())
}

// statesOf reads the states of the controllers of the workloads ws (a Deployment's with its
// ReplicaSets') observed in [since, to], and each one's last state before since.
func statesOf(ctx context.Context, q querier, ws []events.WorkloadRef, since, to time.Time) ([]workload.State, error) {
	var nss, kinds, names []string
	for _, w := range ws {
		if w.Kind != "Pod" { // a bare pod has no controller
			nss, kinds, names = append(nss, w.Namespace), append(kinds, w.Kind), append(names, w.Name)
		}
	}
	if len(nss) == 0 {
		return nil, nil
	}
	return readStates(ctx, q, `
		WITH refs AS (SELECT * FROM unnest($3::text[], $4::text[], $5::text[]) AS r(namespace, kind, name)),
		scope AS (
			SELECT s.* FROM workload_states s JOIN refs r ON s.namespace = r.namespace
			  AND (s.kind = r.kind AND s.name = r.name
			       OR r.kind = 'Deployment' AND s.kind = 'ReplicaSet' AND s.status->'owner'->>'name' = r.name))`,
		since, to, nss, kinds, names)
}

// readStates reads the states of the controllers in scope (a WITH clause defining it, whose
// arguments follow since and to as $3…) observed in [since, to] ($1, $2), and each one's last
// state before since.
func readStates(ctx context.Context, q querier, scope string, since, to time.Time, args ...any) ([]workload.State, error) {
	rows, err := q.Query(ctx, scope+`
		(SELECT occurred_at, status::text FROM scope WHERE occurred_at BETWEEN $1 AND $2)
		UNION ALL
		(SELECT DISTINCT ON (namespace, kind, name) occurred_at, status::text FROM scope WHERE occurred_at < $1
		 ORDER BY namespace, kind, name, occurred_at DESC)
		ORDER BY 1`, append([]any{since, to}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("read the workloads' states: %w", err)
	}
	var out []workload.State
	var (
		at     time.Time
		status string
	)
	_, err = pgx.ForEachRow(rows, []any{&at, &status}, func() error {
		var w events.WorkloadStatus
		if err := json.Unmarshal([]byte(status), &w); err != nil {
			return fmt.Errorf("a stored workload state: %w", err)
		}
		out = append(out, workload.State{At: at.UTC(), Status: w})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the workloads' states: %w", err)
	}
	return out, nil
}

// readOnly runs f in a read-only transaction over one snapshot of the store.
func (db *DB) readOnly(ctx context.Context, f func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, f)
}

// detect reads f's window and finds its disruptions, with the requests around each that its
// interruption's no-success seconds need: detection runs once without requests to learn where
// they matter, and once more with the successful requests of those workloads there — a window
// of a busy service holds millions of requests, a disruption's surroundings few.
//
// What is read gives the same no-success seconds as reading every request (a test holds it to
// that): per workload, its disruptions' spans (a minute before each start to its end) merged
// where they overlap, each read MinGap past its end (a gap that crosses the end is then either
// seen whole or longer than MinGap anyway), and the workload's first success after its last
// span (whether a gap there ever closed).
func (db *DB) detect(ctx context.Context, tx pgx.Tx, f WorkloadFilter, from, to time.Time) (workload.Input, []report.Disruption, error) {
	in, err := db.workloadInput(ctx, tx, f, from, to)
	if err != nil {
		return in, nil, err
	}
	ds := workload.Detect(in)
	if len(ds) == 0 {
		return in, ds, nil
	}
	spans := map[events.WorkloadRef][]align.Span{}
	for _, d := range ds {
		for _, a := range d.Workloads {
			end := workload.Until(d, a, to).Add(in.MinGap)
			spans[a.Workload] = append(spans[a.Workload], align.Span{From: d.Start.Add(-time.Minute), To: end})
		}
	}
	b := &pgx.Batch{}
	var owners []string // per query: a span's, the pod its runs are read into; "" the first success after the spans
	for w, ss := range spans {
		var all []string
		for _, p := range in.Pods {
			if p.Workload == w {
				all = append(all, p.Pod.UID)
			}
		}
		merged := mergeSpans(ss, 0)
		for _, sp := range merged {
			var uids []string // only the workload's pods that lived then
			for _, p := range in.Pods {
				if p.Workload == w && p.LivedIn(sp.From, sp.To) {
					uids = append(uids, p.Pod.UID)
				}
			}
			if len(uids) == 0 {
				continue
			}
			// The workload's successes in the span, raw and from buckets (a bucket as served
			// from its first success to its last), read as runs below. The raw ones come from
			// the index of successful requests alone (events_request_ok), without their rows.
			b.Queue(`SELECT e.occurred_at, e.occurred_at FROM events e
				WHERE e.pod_uid = ANY($1) AND e.kind = 'request' AND e.occurred_at BETWEEN $2 AND $3 AND `+succeeded+`
				UNION ALL SELECT first_at, last_at FROM (`+bucketSuccesses+`) bs(pod_uid, first_at, last_at)`, uids, sp.From, sp.To)
			owners = append(owners, uids[0])
		}
		b.Queue(`SELECT u.uid, least(n.occurred_at, nb.first_success) AS at, least(n.occurred_at, nb.first_success) FROM unnest($1::text[]) AS u(uid)
			LEFT JOIN LATERAL (SELECT e.occurred_at FROM events e
				WHERE e.pod_uid = u.uid AND e.kind = 'request' AND e.occurred_at > $2 AND `+succeeded+`
				ORDER BY e.occurred_at LIMIT 1) n ON true
			LEFT JOIN LATERAL (SELECT `+bucketFirst+` AS first_success FROM request_buckets b
				WHERE b.pod_uid = u.uid::uuid AND b.start > $2 - interval '`+bucketWidth+`'
				  AND `+bucketLast+` > $2
				ORDER BY b.start LIMIT 1) nb ON true
			WHERE n.occurred_at IS NOT NULL OR nb.first_success IS NOT NULL
			ORDER BY at LIMIT 1`, all, merged[len(merged)-1].To)
		owners = append(owners, "")
	}
	byUID := make(map[string]*workload.Pod, len(in.Pods))
	for i := range in.Pods {
		byUID[in.Pods[i].Pod.UID] = &in.Pods[i]
	}
	results := tx.SendBatch(ctx, b)
	read := 0
	addRuns := func(uid string, runs []align.Span) {
		p := byUID[uid]
		if p == nil {
			return
		}
		// A run of the workload's successes (the first of its pods names it) is served from
		// its start to its end, read as successes MinGap apart, so that no gap inside it counts
		// and the gaps between runs count whole. A workload's spans do not overlap.
		for _, r := range runs {
			for at, step := r.From, max(in.MinGap, time.Millisecond); at.Before(r.To); at = at.Add(step) {
				p.Successes = append(p.Successes, at.UTC())
			}
			p.Successes = append(p.Successes, r.To.UTC())
			read++
		}
	}
	var served []align.Span
	for i := range b.Len() {
		rows, err := results.Query()
		if err != nil {
			results.Close()
			return in, nil, fmt.Errorf("read requests around the disruptions: %w", err)
		}
		var (
			uid       string
			at, until time.Time
		)
		if owners[i] != "" {
			// Successes and buckets of one span, merged into runs: a run ends where no
			// success follows within MinGap (only the union of the workload's pods' successes
			// matters, and only gaps longer than MinGap).
			served = served[:0]
			_, err = pgx.ForEachRow(rows, []any{&at, &until}, func() error {
				served = append(served, align.Span{From: at, To: until})
				return nil
			})
			if err == nil {
				addRuns(owners[i], mergeSpans(served, in.MinGap))
			}
		} else {
			// The first success after a workload's last span.
			_, err = pgx.ForEachRow(rows, []any{&uid, &at, &until}, func() error {
				addRuns(uid, []align.Span{{From: at, To: until}})
				return nil
			})
		}
		if err != nil {
			results.Close()
			return in, nil, fmt.Errorf("read requests around the disruptions: %w", err)
		}
	}
	if err := results.Close(); err != nil {
		return in, nil, fmt.Errorf("read requests around the disruptions: %w", err)
	}
	if read == 0 {
		return in, ds, nil
	}
	return in, workload.Detect(in), nil
}

// bucketFirst and bucketLast are a request bucket b's first and last success as times.
const (
	bucketFirst = `b.start + b.first_success_ms * interval '1 millisecond'`
	bucketLast  = `b.start + b.last_success_ms * interval '1 millisecond'`
)

// bucketWidth is summary.Width as an SQL interval.
var bucketWidth = fmt.Sprintf("%d milliseconds", summary.Width.Milliseconds())

// bucketSuccesses reads, of the request buckets of pods $1 (results no longer kept raw) that
// overlap [$2, $3], each bucket's first and last success, clipped to [$2, $3]. The bucket counts
// as served between them: a gap between successes that crosses buckets is read exactly, one
// inside a bucket (shorter than summary.Width) is not seen (docs/operations.md#summaries).
var bucketSuccesses = `SELECT b.pod_uid::text,
		greatest(` + bucketFirst + `, $2),
		least(` + bucketLast + `, $3)
	FROM request_buckets b
	WHERE b.pod_uid = ANY($1::uuid[]) AND b.start BETWEEN $2::timestamptz - interval '` + bucketWidth + `' AND $3
	  AND ` + bucketLast + ` >= $2 AND ` + bucketFirst + ` <= $3`

// mergeSpans sorts spans by start and merges those less than within apart (0: those that
// overlap or touch).
func mergeSpans(spans []align.Span, within time.Duration) []align.Span {
	slices.SortFunc(spans, func(a, b align.Span) int { return a.From.Compare(b.From) })
	var out []align.Span
	for _, s := range spans {
		if n := len(out); n > 0 && s.From.Sub(out[n-1].To) <= within {
			if s.To.After(out[n-1].To) {
				out[n-1].To = s.To
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// Disruptions lists the disruptions among the pods of f that overlap [from, to], newest first
// (on f.Node only, when set). With f.Scope limited, detection sees only the pods and controllers
// of its namespaces: a drain that also evicted pods elsewhere is listed with these pods alone.
func (db *DB) Disruptions(ctx context.Context, f WorkloadFilter, from, to time.Time) ([]report.Disruption, error) {
	var out []report.Disruption
	err := db.readOnly(ctx, func(tx pgx.Tx) error {
		_, ds, err := db.detect(ctx, tx, WorkloadFilter{Namespace: f.Namespace, Kind: f.Kind, Name: f.Name, Scope: f.Scope}, from, to)
		out = ds
		return err
	})
	if err != nil {
		return nil, err
	}
	if f.Node != "" {
		out = slices.DeleteFunc(out, func(d report.Disruption) bool { return d.Node != f.Node })
	}
	if out == nil {
		out = []report.Disruption{}
	}
	return out, nil
}

// Workloads lists the workloads of f with pods alive in [from, to].
func (db *DB) Workloads(ctx context.Context, f WorkloadFilter, from, to time.Time) ([]report.WorkloadSummary, error) {
	var out []report.WorkloadSummary
	err := db.readOnly(ctx, func(tx pgx.Tx) error {
		in, ds, err := db.detect(ctx, tx, f, from, to)
		out = workload.Summaries(in, ds)
		return err
	})
	return out, err
}

// Workload reads workload w over [from, to]: what it wanted and had Ready, its revisions with
// what their pods served, the disruptions that touched it and its pods. ErrNotFound when none of
// its pods lived in the window.
func (db *DB) Workload(ctx context.Context, w events.WorkloadRef, from, to time.Time) (report.WorkloadWindow, error) {
	var out report.WorkloadWindow
	err := db.readOnly(ctx, func(tx pgx.Tx) error {
		in, ds, err := db.detect(ctx, tx, WorkloadFilter{Namespace: w.Namespace, Kind: w.Kind, Name: w.Name}, from, to)
		if err != nil {
			return err
		}
		var ok bool
		if out, ok = workload.Window(in, w, ds); !ok {
			return ErrNotFound
		}
		return db.revisionMeasures(ctx, tx, &out)
	})
	return out, err
}

// revisionMeasures fills in what each revision's pods served: requests, the served error rate,
// latency quantiles of the successful ones (their histograms merged) and the mean GPU
// utilisation; and each pod's own summaries — from one read of the pods' measures.
func (db *DB) revisionMeasures(ctx context.Context, tx pgx.Tx, w *report.WorkloadWindow) error {
	pods := make([]align.Summary, len(w.Pods))
	uids := make([]string, len(w.Pods))
	for i, p := range w.Pods {
		pods[i], uids[i] = p.Summary, p.Pod.UID
	}
	m, err := readMeasures(ctx, tx, uids)
	if err != nil {
		return err
	}
	m.fill(pods, db.idle)
	latency := map[string]map[int32]int64{}
	util := map[string]map[int32]float64{}
	counts := map[string]*align.Counts{}
	for i, p := range w.Pods {
		w.Pods[i].Summary = pods[i]
		rev := p.Revision
		c := counts[rev]
		if c == nil {
			c, latency[rev], util[rev] = &align.Counts{}, map[int32]int64{}, map[int32]float64{}
			counts[rev] = c
		}
		c.Requests += p.Counts.Requests
		c.RequestErrors += p.Counts.RequestErrors
		c.PreReadyRequests += p.Counts.PreReadyRequests
		c.PreReadyErrors += p.Counts.PreReadyErrors
		for k, n := range m.latency[p.Pod.UID] {
			latency[rev][k] += n
		}
		for k, s := range m.util[p.Pod.UID] {
			util[rev][k] += s
		}
	}
	for i := range w.Revisions {
		r := &w.Revisions[i]
		if c := counts[r.Hash]; c != nil {
			if s := align.SummarizeRequests(*c, latency[r.Hash]); s != nil {
				r.Requests, r.ErrorRate, r.LatencyMS = s.Count, s.ErrorRate, s.LatencyMS
			}
		}
		if g := align.SummarizeGPU(util[r.Hash], 0, 0, db.idle); g != nil {
			m := g.UtilMean
			r.GPUUtilMean = &m
		}
	}
	return nil
}

// WorkloadInput reads what detection reads of every workload over [from, to] (pods alive from
// from − Lookback, their controllers' states, every node's changes) in one snapshot, without the
// requests around the disruptions: what a disruption cost in Ready pods needs none, and the
// exported workload metrics (internal/workloadmetrics) read nothing else.
func (db *DB) WorkloadInput(ctx context.Context, from, to time.Time) (workload.Input, error) {
	var in workload.Input
	err := db.readOnly(ctx, func(tx pgx.Tx) error {
		var err error
		in, err = db.workloadInput(ctx, tx, WorkloadFilter{}, from, to)
		return err
	})
	return in, err
}

// PendingGPUPods reads the pods first seen from since that ask for GPUs (their latest snapshot's
// gpu) and are neither scheduled nor ended, with the scheduler's latest FailedScheduling note of
// each, in namespace and name order.
func (db *DB) PendingGPUPods(ctx context.Context, since time.Time) ([]report.PendingPod, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT t.namespace, COALESCE(t.workload_kind, 'Pod'), COALESCE(t.workload_name, t.name), t.name, t.uid,
		       COALESCE(t.created, t.first_seen), g.gpu::text, f.scheduling::text
		FROM pod_timeline t
		CROSS JOIN LATERAL (SELECT e.envelope->'data'->'gpu' AS gpu FROM events e
		                    WHERE e.pod_uid = t.uid AND e.kind = 'pod_status' AND e.class <> 'samples' ORDER BY e.occurred_at DESC LIMIT 1) g
		LEFT JOIN LATERAL (SELECT e.envelope->'data'->'scheduling' AS scheduling FROM events e
		                   WHERE e.pod_uid = t.uid AND e.kind = 'k8s_event' AND e.class <> 'samples' AND e.envelope->'data'->>'reason' IN ('FailedScheduling', 'Unschedulable')
		                   ORDER BY e.occurred_at DESC LIMIT 1) f ON true
		WHERE t.uid IN (SELECT uid FROM pods WHERE first_seen >= $1 AND ended_at IS NULL
		                  AND scheduled_event_at IS NULL AND scheduled_cond_at IS NULL)
		  AND t.ended IS NULL AND t.scheduled IS NULL AND jsonb_typeof(g.gpu) = 'object'
		ORDER BY t.namespace, t.name, t.uid`, since)
	if err != nil {
		return nil, fmt.Errorf("read the pods waiting for GPUs: %w", err)
	}
	out := []report.PendingPod{}
	var (
		p          report.PendingPod
		gpu        string
		scheduling *string
	)
	_, err = pgx.ForEachRow(rows, []any{&p.Workload.Namespace, &p.Workload.Kind, &p.Workload.Name, &p.Name, &p.UID, &p.Since, &gpu, &scheduling}, func() error {
		q := p
		q.Since = q.Since.UTC()
		q.GPU = &events.GPU{}
		if err := json.Unmarshal([]byte(gpu), q.GPU); err != nil {
			return fmt.Errorf("a stored snapshot's gpu: %w", err)
		}
		if scheduling != nil && *scheduling != "null" {
			q.Scheduling = &events.SchedulingFailure{}
			if err := json.Unmarshal([]byte(*scheduling), q.Scheduling); err != nil {
				return fmt.Errorf("a stored FailedScheduling note: %w", err)
			}
		}
		out = append(out, q)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the pods waiting for GPUs: %w", err)
	}
	return out, nil
}
