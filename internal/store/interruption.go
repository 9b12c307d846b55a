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
	return db.interruptionsOf(ctx, runArms{experiment: experiment, namespace: namespace, run: run}, minGap)
}

// ArmInterruptions is RunInterruptions for one arm of the run, in every namespace: what a pod's
// timeline shows. An arm's windows read only its own pods and requests, so it reads only
// those, and is computed again only when one of them changed: while a run is stored, each
// timeline read would otherwise compute every arm's. ErrNotFound when the arm has no pods.
func (db *DB) ArmInterruptions(ctx context.Context, experiment, run, arm string, minGap time.Duration) (report.ArmInterruptions, error) {
	arms, err := db.interruptionsOf(ctx, runArms{experiment: experiment, run: run, arm: arm, oneArm: true}, minGap)
	if err != nil {
		return report.ArmInterruptions{}, err
	}
	return arms[0], nil
}

// runArms names the pods whose interruptions are read: a run's in namespace (all when empty),
// of every arm or, with oneArm, of arm ("" for pods with no arm).
type runArms struct {
	experiment, namespace, run string
	arm                        string
	oneArm                     bool
}

// args are runArmsWhere's arguments.
func (q runArms) args() []any {
	var arm *string
	if q.oneArm {
		arm = &q.arm
	}
	return []any{q.experiment, q.run, q.namespace, arm}
}

// runArmsWhere selects runArms' pods p: $1 experiment, $2 run, $3 namespace, $4 arm (NULL: all).
const runArmsWhere = `p.exp_name = $1 AND p.exp_run = $2 AND ($3 = '' OR p.namespace = $3) AND ($4::text IS NULL OR COALESCE(p.exp_arm, '') = $4)`

func (db *DB) interruptionsOf(ctx context.Context, q runArms, minGap time.Duration) ([]report.ArmInterruptions, error) {
	var out []report.ArmInterruptions
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var err error
		if db.direct {
			out, err = runInterruptions(ctx, tx, q, minGap)
		} else {
			out, err = db.cachedInterruptions(ctx, tx, q, minGap)
		}
		return err
	})
	return out, err
}

// runInterruptions is RunInterruptions of q's pods inside tx.
func runInterruptions(ctx context.Context, tx pgx.Tx, q runArms, minGap time.Duration) ([]report.ArmInterruptions, error) {
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
			WHERE `+runArmsWhere, q.args()...)
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
		// The pods' requests lie within their first and last sightings (seenSpan): as
		// bounds, that span keeps the read to the hours of samples it covers.
		var from, to *time.Time
		if err := tx.QueryRow(ctx, `SELECT min(p.first_seen), max(p.last_seen) FROM pods p WHERE `+runArmsWhere, q.args()...).Scan(&from, &to); err != nil {
			return err
		}
		if from == nil {
			return nil
		}
		rows, err = tx.Query(ctx, `
			SELECT COALESCE(p.exp_arm, ''), e.occurred_at
			FROM pods p JOIN events e ON e.pod_uid = p.uid AND e.kind = 'request'
			WHERE `+runArmsWhere+` AND e.occurred_at BETWEEN $5 AND $6 AND `+succeeded, append(q.args(), *from, *to)...)
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
		return nil, fmt.Errorf("read run %s/%s: %w", q.experiment, q.run, err)
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
