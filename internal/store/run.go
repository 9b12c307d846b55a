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
)

// report.RunDetail reads a run of an experiment (its pods in namespace; all when empty). ErrNotFound
// when the run has no pods.
func (db *DB) RunDetail(ctx context.Context, experiment, namespace, run string) (report.RunDetail, error) {
	d := report.RunDetail{Experiment: experiment, Namespace: namespace, Run: run,
		FailedScheduling: map[string][]report.SchedulingFailure{}, GPU: map[string][]report.GPUPoint{}, Scenarios: map[string]string{}}
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
		WHERE preempted_by = ANY($1) AND uid <> ALL($1) ORDER BY first_seen, uid`, uids)
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
	if err := db.podSeries(ctx, all, &d); err != nil {
		return d, fmt.Errorf("read run %s/%s: %w", experiment, run, err)
	}
	d.From, d.To = span(d.Pods)
	if d.Interruptions, err = db.RunInterruptions(ctx, experiment, namespace, run, align.DefaultMinGap); err != nil {
		return d, err
	}
	if d.NodeChanges, err = db.nodeChanges(ctx, d.From, d.To); err != nil {
		return d, err
	}
	return d, nil
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

// podSeries reads the FailedScheduling occurrences, GPU samples and scenario labels of pods.
func (db *DB) podSeries(ctx context.Context, uids []string, d *report.RunDetail) error {
	arm := map[string]string{}
	for _, p := range d.Pods {
		arm[p.Pod.UID] = deref(p.Experiment.Arm)
	}
	rows, err := db.pool.Query(ctx, `
		SELECT pod_uid, kind, occurred_at,
		       CASE kind WHEN 'k8s_event' THEN envelope->'data'->>'note'
		                 WHEN 'pod_status' THEN envelope->'data'->'labels'->>$2 END,
		       (envelope->'data'->'metrics'->>'DCGM_FI_DEV_GPU_UTIL')::float8
		FROM events
		WHERE pod_uid = ANY($1) AND (
		      (kind = 'k8s_event' AND envelope->'data'->>'reason' = 'FailedScheduling')
		   OR (kind = 'gpu_sample' AND envelope->'data'->'metrics' ? 'DCGM_FI_DEV_GPU_UTIL')
		   OR (kind = 'pod_status' AND envelope->'data'->'labels' ? $2))
		ORDER BY occurred_at, id COLLATE "C"`, uids, events.LabelScenario)
	if err != nil {
		return err
	}
	var (
		uid, kind string
		at        time.Time
		text      *string
		util      *float64
	)
	_, err = pgx.ForEachRow(rows, []any{&uid, &kind, &at, &text, &util}, func() error {
		at = at.UTC()
		switch kind {
		case string(events.KindK8sEvent):
			d.FailedScheduling[uid] = append(d.FailedScheduling[uid], report.SchedulingFailure{At: at, Note: deref(text)})
		case string(events.KindGPUSample):
			if util != nil {
				d.GPU[uid] = append(d.GPU[uid], report.GPUPoint{At: at, Util: *util})
			}
		case string(events.KindPodStatus):
			if a, ok := arm[uid]; ok && text != nil && *text != "" {
				d.Scenarios[a] = *text
			}
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
			FROM events WHERE kind = 'node_status' AND node IS NOT NULL AND occurred_at <= $2
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

// report.PodSeries reads the requests a pod served and its GPU samples.
func (db *DB) PodSeries(ctx context.Context, uid string) (report.PodSeries, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT kind, occurred_at,
		       COALESCE((envelope->'data'->>'ok')::boolean, false),
		       COALESCE((envelope->'data'->>'status')::int, 0),
		       COALESCE((envelope->'data'->>'latency_ms')::float8, 0),
		       COALESCE(envelope->'data'->>'error', ''),
		       (envelope->'data'->'metrics'->>'DCGM_FI_DEV_GPU_UTIL')::float8
		FROM events WHERE pod_uid = $1 AND kind IN ('request', 'gpu_sample')
		ORDER BY occurred_at, id COLLATE "C"`, uid)
	if err != nil {
		return report.PodSeries{}, fmt.Errorf("read pod %s series: %w", uid, err)
	}
	s := report.PodSeries{Requests: []report.Request{}, GPU: []report.GPUPoint{}}
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
