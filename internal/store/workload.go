package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/events"
)

const mergeWorkloadState = `
INSERT INTO workload_states (id, cluster, kind, namespace, name, observed_at, status)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`

// queueWorkloads adds the workload controllers' states among envs to b.
func queueWorkloads(b *pgx.Batch, envs []*events.Envelope) {
	for _, env := range envs {
		if w, ok := env.Payload.(*events.WorkloadStatus); ok {
			b.Queue(mergeWorkloadState, env.ID, env.Cluster, w.Kind, w.Namespace, w.Name, env.ObservedAt, string(env.Data))
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
			LEFT JOIN LATERAL (SELECT envelope FROM events WHERE pod_uid = p.uid AND kind = 'pod_status' ORDER BY occurred_at LIMIT 1) e ON true`, after)
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
