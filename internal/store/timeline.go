package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/scope"
)

// summaryColumns are read from the pod_timeline view, in scanSummary's order.
const summaryColumns = `uid, namespace, name, node, exp_name, exp_arm, exp_run,
	created, first_unschedulable, scheduled, running, ready, first_success, ended, ended_reason, preempted_by,
	observed_until, failed_scheduling, restarts, requests, request_errors, pre_ready_requests, pre_ready_errors, first_seen,
	gated, claim_allocated, failed_prepare, gate_held`

func scanSummary(row pgx.Row) (align.Summary, time.Time, error) {
	var (
		s                             align.Summary
		ns, name                      *string
		firstSeen                     time.Time
		requests, requestErrs, failed int64
		preReady, preReadyErrs        int64
		restarts, failedPrepare       int64
		gateHeld                      bool
	)
	m := &s.Milestones
	err := row.Scan(&s.Pod.UID, &ns, &name, &s.Pod.Node, &s.Experiment.Name, &s.Experiment.Arm, &s.Experiment.Run,
		&m.Created, &m.FirstUnschedulable, &m.Scheduled, &m.Running, &m.Ready, &m.FirstSuccess, &m.Ended,
		&s.EndedReason, &s.PreemptedBy, &s.ObservedUntil, &failed, &restarts, &requests, &requestErrs, &preReady, &preReadyErrs, &firstSeen,
		&m.Gated, &m.ClaimAllocated, &failedPrepare, &gateHeld)
	if err != nil {
		return align.Summary{}, time.Time{}, err
	}
	s.Pod.Namespace, s.Pod.Name = deref(ns), deref(name)
	for _, t := range []**time.Time{&m.Created, &m.Gated, &m.ClaimAllocated, &m.FirstUnschedulable, &m.Scheduled, &m.Running, &m.Ready, &m.FirstSuccess, &m.Ended, &s.ObservedUntil} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	s.Counts = align.Counts{FailedScheduling: int(failed), Restarts: int(restarts), Requests: int(requests), RequestErrors: int(requestErrs),
		PreReadyRequests: int(preReady), PreReadyErrors: int(preReadyErrs), FailedPrepare: int(failedPrepare)}
	s.Durations = align.DurationsOf(s.Milestones)
	s.Censored = align.Censored(s.Milestones, gateHeld)
	return s, firstSeen, nil
}

// Timeline returns a pod's timeline with its listed events in time order, or ErrNotFound.
func (db *DB) Timeline(ctx context.Context, uid string) (align.Timeline, error) {
	var tl align.Timeline
	var firstSeen time.Time
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		s, fs, err := scanSummary(tx.QueryRow(ctx, `SELECT `+summaryColumns+` FROM pod_timeline WHERE uid = $1`, uid))
		firstSeen = fs
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("read pod %s: %w", uid, err)
		}
		one := []align.Summary{s}
		if err := fillMeasures(ctx, tx, one, db.idle); err != nil {
			return err
		}
		tl.Summary = one[0]
		rows, err := tx.Query(ctx, `
			SELECT id, kind, occurred_at, source, envelope->'data'
			FROM events WHERE pod_uid = $1 AND kind <> ALL($2) AND class <> 'samples'
			ORDER BY occurred_at, id COLLATE "C"`, uid, unlistedKinds())
		if err != nil {
			return fmt.Errorf("read pod %s events: %w", uid, err)
		}
		tl.Events = []align.Event{}
		var e align.Event
		_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.Kind, &e.OccurredAt, &e.Source, &e.Data}, func() error {
			e.OccurredAt = e.OccurredAt.UTC()
			tl.Events = append(tl.Events, e)
			e = align.Event{}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read pod %s events: %w", uid, err)
		}
		return nil
	})
	if err != nil {
		return tl, err
	}
	tl.Gates = align.GateWaits(tl.Events)
	tl.Interruptions = []align.Window{}
	exp := tl.Experiment
	if exp.Name == nil || exp.Run == nil || tl.ObservedUntil == nil {
		return tl, nil
	}
	arm, err := db.ArmInterruptions(ctx, *exp.Name, *exp.Run, deref(exp.Arm), align.DefaultMinGap)
	switch {
	case errors.Is(err, ErrNotFound):
		return tl, nil
	case err != nil:
		return tl, err
	}
	from := firstSeen
	if c := tl.Milestones.Created; c != nil && c.Before(from) {
		from = *c
	}
	tl.Interruptions = align.Overlapping(arm.Windows, from, *tl.ObservedUntil)
	return tl, nil
}

func unlistedKinds() []string {
	var out []string
	for _, k := range events.Kinds {
		if !align.Listed(k) {
			out = append(out, string(k))
		}
	}
	return out
}

// PodFilter selects pods; empty fields match everything.
type PodFilter struct {
	Experiment, Arm, Run, Namespace, Node string
	// Scope is the namespaces the caller may read (the zero Scope: every one).
	Scope scope.Scope
}

// PodPage is one page of pods and the cursor of the next page ("" when this is the last).
type PodPage struct {
	Pods       []align.Summary
	NextCursor string
}

// ErrBadCursor is returned for a cursor this store did not produce.
var ErrBadCursor = errors.New("malformed cursor")

type cursor struct {
	FirstSeen time.Time `json:"t"`
	UID       string    `json:"u"`
}

// ListPods returns pods matching f ordered by when they were first seen, then UID, limit at a
// time. The cursor is opaque; it stays valid while events keep arriving.
func (db *DB) ListPods(ctx context.Context, f PodFilter, limit int, after string) (PodPage, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	for _, c := range []struct{ col, v string }{
		{"exp_name", f.Experiment}, {"exp_arm", f.Arm}, {"exp_run", f.Run}, {"namespace", f.Namespace}, {"node", f.Node},
	} {
		if c.v != "" {
			add(c.col+" = $%d", c.v)
		}
	}
	if f.Scope.Limited() {
		add("namespace = ANY($%d)", f.Scope.Namespaces())
	}
	if after != "" {
		c, err := decodeCursor(after)
		if err != nil {
			return PodPage{}, err
		}
		args = append(args, c.FirstSeen, c.UID)
		where = append(where, fmt.Sprintf("(first_seen, uid) > ($%d, $%d)", len(args)-1, len(args)))
	}
	q := `SELECT ` + summaryColumns + ` FROM pod_timeline`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, limit+1)
	q += fmt.Sprintf(` ORDER BY first_seen, uid LIMIT $%d`, len(args))

	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return PodPage{}, fmt.Errorf("list pods: %w", err)
	}
	defer rows.Close()
	page := PodPage{Pods: []align.Summary{}}
	var last cursor
	for rows.Next() {
		if len(page.Pods) == limit {
			page.NextCursor = encodeToken(last)
			break
		}
		s, firstSeen, err := scanSummary(rows)
		if err != nil {
			return PodPage{}, fmt.Errorf("list pods: %w", err)
		}
		page.Pods = append(page.Pods, s)
		last = cursor{FirstSeen: firstSeen, UID: s.Pod.UID}
	}
	if err := rows.Err(); err != nil {
		return PodPage{}, fmt.Errorf("list pods: %w", err)
	}
	rows.Close()
	if err := fillMeasures(ctx, db.pool, page.Pods, db.idle); err != nil {
		return PodPage{}, err
	}
	return page, nil
}

// decodeCursor reads a cursor of ListPods. Its UID must be one (the database compares it as
// text, and a NUL or invalid UTF-8 would be an error there rather than a bad cursor).
func decodeCursor(s string) (cursor, error) {
	var c cursor
	if !decodeToken(s, &c) || !events.ValidUID(c.UID) || c.FirstSeen.IsZero() {
		return cursor{}, ErrBadCursor
	}
	c.UID = strings.ToLower(c.UID)
	return c, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// fillMeasures adds the request and GPU summaries to pod summaries, read from the pods'
// latency and utilisation histograms (align.SummarizeRequests, align.SummarizeGPU).
func fillMeasures(ctx context.Context, q querier, pods []align.Summary, idle float64) error {
	if len(pods) == 0 {
		return nil
	}
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = p.Pod.UID
	}
	m, err := readMeasures(ctx, q, uids)
	if err != nil {
		return err
	}
	m.fill(pods, idle)
	return nil
}

// measures are pods' latency and utilisation histograms and GPU memory figures, by pod UID.
type measures struct {
	latency map[string]map[int32]int64
	util    map[string]map[int32]float64
	fb      map[string][2]float64 // framebuffer seconds, maximum
}

// readMeasures reads the measures of the pods uids.
func readMeasures(ctx context.Context, q querier, uids []string) (measures, error) {
	m := measures{latency: map[string]map[int32]int64{}, util: map[string]map[int32]float64{}, fb: map[string][2]float64{}}
	rows, err := q.Query(ctx, `
		SELECT pod_uid, 'l', bucket, count::float8 FROM pod_latency WHERE pod_uid = ANY($1)
		UNION ALL
		SELECT pod_uid, 'g', util, seconds FROM pod_gpu_util WHERE pod_uid = ANY($1)
		UNION ALL
		SELECT uid, 'f', 0, gpu_fb_seconds FROM pods WHERE uid = ANY($1)
		UNION ALL
		SELECT uid, 'm', 0, gpu_fb_max FROM pods WHERE uid = ANY($1)`, uids)
	if err != nil {
		return m, fmt.Errorf("read pod measures: %w", err)
	}
	var (
		uid, what string
		key       int32
		v         float64
	)
	_, err = pgx.ForEachRow(rows, []any{&uid, &what, &key, &v}, func() error {
		switch what {
		case "l":
			if m.latency[uid] == nil {
				m.latency[uid] = map[int32]int64{}
			}
			m.latency[uid][key] = int64(v)
		case "g":
			if m.util[uid] == nil {
				m.util[uid] = map[int32]float64{}
			}
			m.util[uid][key] = v
		case "f":
			x := m.fb[uid]
			x[0] = v
			m.fb[uid] = x
		case "m":
			x := m.fb[uid]
			x[1] = v
			m.fb[uid] = x
		}
		return nil
	})
	if err != nil {
		return m, fmt.Errorf("read pod measures: %w", err)
	}
	return m, nil
}

// fill sets each pod's request and GPU summaries.
func (m measures) fill(pods []align.Summary, idle float64) {
	for i := range pods {
		p := &pods[i]
		p.Requests = align.SummarizeRequests(p.Counts, m.latency[p.Pod.UID])
		p.GPU = align.SummarizeGPU(m.util[p.Pod.UID], m.fb[p.Pod.UID][0], m.fb[p.Pod.UID][1], idle)
	}
}
