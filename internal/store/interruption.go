package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
)

// RunInterruptions computes, per arm of an experiment run, the windows in which fewer pods than
// the steady count were Ready or no request succeeded for longer than minGap (align.Interruptions),
// from the pods' snapshots and successful requests, for the pods of namespace (all when empty).
// ErrNotFound when the run has no pods. They are computed again only when one of the run's
// pods changed (comparison.go).
func (db *DB) RunInterruptions(ctx context.Context, experiment, namespace, run string, minGap time.Duration) ([]report.ArmInterruptions, error) {
	var out []report.ArmInterruptions
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var err error
		if db.direct {
			out, err = runInterruptions(ctx, tx, experiment, namespace, run, minGap)
		} else {
			out, err = db.cachedInterruptions(ctx, tx, experiment, namespace, run, minGap)
		}
		return err
	})
	return out, err
}

// runInterruptions is RunInterruptions inside tx.
func runInterruptions(ctx context.Context, tx pgx.Tx, experiment, namespace, run string, minGap time.Duration) ([]report.ArmInterruptions, error) {
	type podData struct {
		arm   string
		snaps []*events.Envelope
		end   time.Time
	}
	pods := map[string]*podData{}
	successes := map[string][]time.Time{}
	err := func() error {
		// Only what ReadySpans reads of each snapshot (snapshotColumns) is read, in SQL:
		// decoding whole envelopes dominated the cost of a large run.
		rows, err := tx.Query(ctx, `
			SELECT p.uid, COALESCE(p.exp_arm, ''), COALESCE(p.ended, p.last_seen), e.occurred_at,
			       `+snapshotColumns+`
			FROM pod_timeline p JOIN events e ON e.pod_uid = p.uid AND e.kind = 'pod_status' AND e.class <> 'samples' `+eventData+`
			WHERE p.exp_name = $1 AND p.exp_run = $2 AND ($3 = '' OR p.namespace = $3)`, experiment, run, namespace)
		if err != nil {
			return err
		}
		var uid, arm string
		var end, at time.Time
		var sn snapshot
		_, err = pgx.ForEachRow(rows, []any{&uid, &arm, &end, &at, &sn.phase, &sn.ready, &sn.terminating, &sn.deleted, &sn.target}, func() error {
			pd := pods[uid]
			if pd == nil {
				pd = &podData{arm: arm, end: end}
				pods[uid] = pd
			}
			pd.snaps = append(pd.snaps, readySnapshot(at, sn.phase, sn.ready, sn.terminating, sn.deleted))
			return nil
		})
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `
			SELECT COALESCE(p.exp_arm, ''), e.occurred_at
			FROM pods p JOIN events e ON e.pod_uid = p.uid AND e.kind = 'request'
			WHERE p.exp_name = $1 AND p.exp_run = $2 AND ($3 = '' OR p.namespace = $3)
			  AND `+succeeded, experiment, run, namespace)
		if err != nil {
			return err
		}
		_, err = pgx.ForEachRow(rows, []any{&arm, &at}, func() error {
			successes[arm] = append(successes[arm], at)
			return nil
		})
		return err
	}()
	if err != nil {
		return nil, fmt.Errorf("read run %s/%s: %w", experiment, run, err)
	}
	if len(pods) == 0 {
		return nil, ErrNotFound
	}
	byArm := map[string][][]align.Span{}
	count := map[string]int{}
	for _, pd := range pods {
		byArm[pd.arm] = append(byArm[pd.arm], align.ReadySpans(pd.snaps, pd.end))
		count[pd.arm]++
	}
	var out []report.ArmInterruptions
	for arm, spans := range byArm {
		ws := align.Interruptions(spans, successes[arm], minGap)
		if ws == nil {
			ws = []align.Window{}
		}
		out = append(out, report.ArmInterruptions{Arm: arm, Pods: count[arm], Windows: ws})
	}
	slices.SortFunc(out, func(a, b report.ArmInterruptions) int { return strings.Compare(a.Arm, b.Arm) })
	return out, nil
}

// readySnapshot is a pod snapshot reduced to what align.ReadySpans reads of it — phase, the
// Ready condition's status (nil: none), terminating, deleted — as the readers of Ready spans
// select it in SQL: decoding whole envelopes dominated the cost of a large run.
func readySnapshot(at time.Time, phase string, ready *string, terminating, deleted bool) *events.Envelope {
	ps := &events.PodStatus{Phase: phase, Deleted: deleted}
	if ready != nil {
		ps.Conditions = []events.Condition{{Type: "Ready", Status: *ready}}
	}
	if terminating {
		t := at
		ps.DeletionTimestamp = &t
	}
	return &events.Envelope{Kind: events.KindPodStatus, OccurredAt: at, Payload: ps}
}
