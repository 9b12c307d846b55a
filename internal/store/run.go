package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/scope"
	"github.com/schedlens/schedlens/internal/workload"
)

// RunDetail reads a run of an experiment (its pods in namespace; all when empty), with the pods
// of the namespaces s allows that its pods preempted (Outside). ErrNotFound when the run has no
// pods. Whether the caller may read the run itself is the reader's to check first
// (ExperimentNamespaces).
func (db *DB) RunDetail(ctx context.Context, experiment, namespace, run string, s scope.Scope) (report.RunDetail, error) {
	d := report.RunDetail{Experiment: experiment, Namespace: namespace, Run: run,
		FailedScheduling: map[string][]report.SchedulingFailure{}, GPU: map[string][]report.GPUPoint{}}
	cursor := ""
	for {
		page, err := db.ListPods(ctx, PodFilter{Experiment: experiment, Run: run, Namespace: namespace}, MaxPage, cursor)
		if err != nil {
			return d, err
		}
		d.Pods = append(d.Pods, page.Pods...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if len(d.Pods) == 0 {
		return d, ErrNotFound
	}
	uids := make([]string, len(d.Pods))
	for i, p := range d.Pods {
		uids[i] = p.Pod.UID
	}
	rows, err := db.pool.Query(ctx, `SELECT `+summaryColumns+` FROM pod_timeline
		WHERE preempted_by = ANY($1) AND uid <> ALL($1) AND ($2::text[] IS NULL OR namespace = ANY($2))
		ORDER BY first_seen, uid`, uids, s.Namespaces())
	if err != nil {
		return d, fmt.Errorf("read victims of run %s/%s: %w", experiment, run, err)
	}
	for rows.Next() {
		s, _, err := scanSummary(rows)
		if err != nil {
			rows.Close()
			return d, fmt.Errorf("read victims of run %s/%s: %w", experiment, run, err)
		}
		d.Outside = append(d.Outside, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return d, fmt.Errorf("read victims of run %s/%s: %w", experiment, run, err)
	}
	if err := fillMeasures(ctx, db.pool, d.Outside, db.idle); err != nil {
		return d, err
	}
	all := slices.Clone(uids)
	for _, p := range d.Outside {
		all = append(all, p.Pod.UID)
	}
	facts := newPodFacts()
	if err := db.podSeries(ctx, all, &d, facts); err != nil {
		return d, fmt.Errorf("read run %s/%s: %w", experiment, run, err)
	}
	d.From, d.To = span(d.Pods)
	if d.Interruptions, err = db.RunInterruptions(ctx, experiment, namespace, run, align.DefaultMinGap); err != nil {
		return d, err
	}
	// Detection looks back for what a disruption began with (a node cordoned before the run);
	// the run shows the node changes while it lasted.
	nodes, err := db.nodeChanges(ctx, d.From.Add(-Lookback), d.To)
	if err != nil {
		return d, err
	}
	d.NodeChanges = slices.DeleteFunc(slices.Clone(nodes), func(c report.NodeChange) bool { return c.At.Before(d.From) })
	if d.Disruptions, err = db.runDisruptions(ctx, d, nodes, facts); err != nil {
		return d, fmt.Errorf("find the disruptions of run %s/%s: %w", experiment, run, err)
	}
	return d, nil
}

// runDisruptions finds the disruptions of a run's pods and the pods they preempted
// (workload.Detect over the run's span): each pod with its workload and revision and the facts
// podSeries read of its events, the states of their workloads' controllers and the nodes'
// changes.
func (db *DB) runDisruptions(ctx context.Context, d report.RunDetail, nodes []report.NodeChange, facts *podFacts) ([]report.Disruption, error) {
	in := workload.Input{From: d.From, To: d.To, MinGap: align.DefaultMinGap, Nodes: nodes}
	all := append(slices.Clone(d.Pods), d.Outside...)
	uids := make([]string, len(all))
	for i, p := range all {
		uids[i] = p.Pod.UID
	}
	type ref struct {
		w   events.WorkloadRef
		rev string
	}
	refs := map[string]ref{}
	rows, err := db.pool.Query(ctx, `
		SELECT uid, namespace, COALESCE(workload_kind, 'Pod'), COALESCE(workload_name, name), COALESCE(revision, '')
		FROM pods WHERE uid = ANY($1)`, uids)
	if err != nil {
		return nil, fmt.Errorf("read the pods' workloads: %w", err)
	}
	var uid string
	var r ref
	if _, err := pgx.ForEachRow(rows, []any{&uid, &r.w.Namespace, &r.w.Kind, &r.w.Name, &r.rev}, func() error {
		refs[uid] = r
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the pods' workloads: %w", err)
	}
	seen := map[events.WorkloadRef]bool{}
	var ws []events.WorkloadRef
	for _, p := range all {
		r, ok := refs[p.Pod.UID]
		if !ok {
			r.w = events.WorkloadRef{Namespace: p.Pod.Namespace, Kind: "Pod", Name: p.Pod.Name}
		}
		in.Pods = append(in.Pods, workload.Pod{Summary: p, Workload: r.w, Revision: r.rev})
		if !seen[r.w] {
			seen[r.w] = true
			ws = append(ws, r.w)
		}
	}
	facts.fill(in.Pods, d.To)
	if in.States, err = statesOf(ctx, db.pool, ws, d.From.Add(-Lookback), d.To); err != nil {
		return nil, err
	}
	return workload.Detect(in), nil
}

// MaxPage is the largest page ListPods is asked for internally.
const MaxPage = 1000

// span is the time from the pods' first creation to their last observation or end.
func span(pods []align.Summary) (from, to time.Time) {
	for _, p := range pods {
		start := p.Milestones.Created
		if start == nil {
			start = p.Milestones.FirstUnschedulable
		}
		if start == nil {
			start = p.Milestones.Scheduled
		}
		if start != nil && (from.IsZero() || start.Before(from)) {
			from = *start
		}
		for _, u := range []*time.Time{p.ObservedUntil, p.Milestones.Ended} {
			if u != nil && u.After(to) {
				to = *u
			}
		}
	}
	if to.Before(from) {
		to = from
	}
	return from, to
}

// podSeries reads the FailedScheduling occurrences and GPU samples of pods into d, and what
// detection reads of their snapshots into facts: one pass over their events.
func (db *DB) podSeries(ctx context.Context, uids []string, d *report.RunDetail, facts *podFacts) error {
	from, to, err := db.seenSpan(ctx, uids)
	if err != nil || from == nil {
		return err
	}
	rows, err := db.pool.Query(ctx, `
		SELECT e.pod_uid, e.kind, e.occurred_at, d->>'note',
		       (d->'metrics'->>'DCGM_FI_DEV_GPU_UTIL')::float8, `+snapshotColumns+`
		FROM events e `+eventData+`
		WHERE e.pod_uid = ANY($1) AND e.occurred_at BETWEEN $2 AND $3 AND (
		      (e.kind = 'k8s_event' AND d->>'reason' = 'FailedScheduling')
		   OR (e.kind = 'gpu_sample' AND d->'metrics' ? 'DCGM_FI_DEV_GPU_UTIL')
		   OR e.kind = 'pod_status')
		ORDER BY e.occurred_at, e.id COLLATE "C"`, uids, *from, *to)
	if err != nil {
		return err
	}
	var (
		uid, kind string
		at        time.Time
		note      *string
		util      *float64
		s         snapshot
	)
	_, err = pgx.ForEachRow(rows, []any{&uid, &kind, &at, &note, &util, &s.phase, &s.ready, &s.terminating, &s.deleted, &s.target}, func() error {
		at = at.UTC()
		switch kind {
		case string(events.KindK8sEvent):
			f := report.SchedulingFailure{At: at, Note: deref(note)}
			d.FailedScheduling[uid] = append(d.FailedScheduling[uid], f)
			facts.failures[uid] = append(facts.failures[uid], f)
		case string(events.KindGPUSample):
			if util != nil {
				d.GPU[uid] = append(d.GPU[uid], report.GPUPoint{At: at, Util: *util})
			}
		case string(events.KindPodStatus):
			facts.snapshot(uid, at, s)
		}
		return nil
	})
	return err
}

// nodeChanges reads the changes of every node's schedulability and readiness within [from, to],
// each against the node's state before it.
func (db *DB) nodeChanges(ctx context.Context, from, to time.Time) ([]report.NodeChange, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT node, occurred_at, unschedulable, ready, prev_unschedulable, prev_ready FROM (
			SELECT node, occurred_at,
			       COALESCE((envelope->'data'->>'unschedulable')::boolean, false) AS unschedulable,
			       COALESCE((envelope->'data'->>'ready')::boolean, false) AS ready,
			       lag(COALESCE((envelope->'data'->>'unschedulable')::boolean, false)) OVER w AS prev_unschedulable,
			       lag(COALESCE((envelope->'data'->>'ready')::boolean, false)) OVER w AS prev_ready
			FROM events WHERE kind = 'node_status' AND class <> 'samples' AND node IS NOT NULL AND occurred_at <= $2
			WINDOW w AS (PARTITION BY node ORDER BY occurred_at, id COLLATE "C")) n
		WHERE occurred_at >= $1 AND (unschedulable IS DISTINCT FROM prev_unschedulable OR ready IS DISTINCT FROM prev_ready)
		ORDER BY occurred_at, node`, from, to)
	if err != nil {
		return nil, fmt.Errorf("read node changes: %w", err)
	}
	out := []report.NodeChange{}
	var (
		node                 string
		at                   time.Time
		unsch, ready         bool
		prevUnsch, prevReady *bool
	)
	_, err = pgx.ForEachRow(rows, []any{&node, &at, &unsch, &ready, &prevUnsch, &prevReady}, func() error {
		at = at.UTC()
		if prevUnsch == nil { // the node's first report: a state, not a change
			return nil
		}
		if unsch != *prevUnsch {
			c := report.NodeUncordoned
			if unsch {
				c = report.NodeCordoned
			}
			out = append(out, report.NodeChange{At: at, Node: node, Change: c})
		}
		if ready != *prevReady {
			c := report.NodeNotReady
			if ready {
				c = report.NodeReady
			}
			out = append(out, report.NodeChange{At: at, Node: node, Change: c})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read node changes: %w", err)
	}
	return out, nil
}

// seenSpan is the span from the first to the last sighting of the pods uids, nil when none is
// stored. Every event of a pod widens its span (align.FactsOf), so it holds all their events:
// given to a read of them as bounds, it lets Postgres plan and scan only the partitions it
// covers, not every hour of samples kept (the binaries keep raw samples for ever by default).
func (db *DB) seenSpan(ctx context.Context, uids []string) (from, to *time.Time, err error) {
	err = db.pool.QueryRow(ctx, `SELECT min(first_seen), max(last_seen) FROM pods WHERE uid = ANY($1)`, uids).Scan(&from, &to)
	return from, to, err
}

// report.PodSeries reads the requests a pod served and its GPU samples.
func (db *DB) PodSeries(ctx context.Context, uid string) (report.PodSeries, error) {
	s := report.PodSeries{Requests: []report.Request{}, GPU: []report.GPUPoint{}}
	from, to, err := db.seenSpan(ctx, []string{uid})
	if err != nil {
		return report.PodSeries{}, fmt.Errorf("read pod %s series: %w", uid, err)
	}
	if from == nil {
		return s, nil
	}
	rows, err := db.pool.Query(ctx, `
		SELECT kind, occurred_at,
		       COALESCE((envelope->'data'->>'ok')::boolean, false),
		       COALESCE((envelope->'data'->>'status')::int, 0),
		       COALESCE((envelope->'data'->>'latency_ms')::float8, 0),
		       COALESCE(envelope->'data'->>'error', ''),
		       (envelope->'data'->'metrics'->>'DCGM_FI_DEV_GPU_UTIL')::float8
		FROM events WHERE pod_uid = $1 AND kind IN ('request', 'gpu_sample') AND occurred_at BETWEEN $2 AND $3
		ORDER BY occurred_at, id COLLATE "C"`, uid, *from, *to)
	if err != nil {
		return report.PodSeries{}, fmt.Errorf("read pod %s series: %w", uid, err)
	}
	var (
		kind string
		r    report.Request
		util *float64
	)
	_, err = pgx.ForEachRow(rows, []any{&kind, &r.At, &r.OK, &r.Status, &r.LatencyMS, &r.Error, &util}, func() error {
		r.At = r.At.UTC()
		if kind == string(events.KindRequest) {
			s.Requests = append(s.Requests, r)
		} else if util != nil {
			s.GPU = append(s.GPU, report.GPUPoint{At: r.At, Util: *util})
		}
		return nil
	})
	if err != nil {
		return report.PodSeries{}, fmt.Errorf("read pod %s series: %w", uid, err)
	}
	return s, nil
}

// RunVersion is a cheap fingerprint of a run's stored state: it changes whenever an event about
// one of the run's pods is stored. Live views poll it.
func (db *DB) RunVersion(ctx context.Context, experiment, namespace, run string) (string, error) {
	var n int64
	var last *time.Time
	var reqs int64
	err := db.pool.QueryRow(ctx, `
		SELECT count(*), max(last_seen), COALESCE(sum(requests), 0)::bigint FROM pods
		WHERE exp_name = $1 AND exp_run = $2 AND ($3 = '' OR namespace = $3)`, experiment, run, namespace).Scan(&n, &last, &reqs)
	if err != nil {
		return "", fmt.Errorf("read run %s/%s version: %w", experiment, run, err)
	}
	v := fmt.Sprintf("%d-%d", n, reqs)
	if last != nil {
		v += fmt.Sprintf("-%d", last.UnixMicro())
	}
	return v, nil
}

// LastEvents returns, per experiment, when its pods were last heard of.
func (db *DB) LastEvents(ctx context.Context) (map[string]time.Time, error) {
	rows, err := db.pool.Query(ctx, `SELECT exp_name, max(last_seen) FROM pods WHERE exp_name IS NOT NULL GROUP BY 1`)
	if err != nil {
		return nil, fmt.Errorf("read last events: %w", err)
	}
	out := map[string]time.Time{}
	var name string
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&name, &at}, func() error {
		out[name] = at.UTC()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read last events: %w", err)
	}
	return out, nil
}
