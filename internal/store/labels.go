package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/labels"
	"github.com/schedlens/schedlens/internal/scope"
)

// mergeLabelRegistry keeps each label registry ConfigMap's latest state.
const mergeLabelRegistry = `
INSERT INTO label_registries (namespace, name, registry, deleted, observed_at, event_id) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (namespace, name) DO UPDATE SET registry = excluded.registry, deleted = excluded.deleted,
	observed_at = excluded.observed_at, event_id = excluded.event_id
WHERE (excluded.observed_at, excluded.event_id) > (label_registries.observed_at, label_registries.event_id)`

// queueLabelRegistries adds the label registries among envs to b.
func queueLabelRegistries(b *pgx.Batch, envs []*events.Envelope) {
	for _, env := range envs {
		if p, ok := env.Payload.(*events.LabelRegistry); ok {
			b.Queue(mergeLabelRegistry, p.Namespace, p.Name, string(env.Data), p.Deleted, env.ObservedAt, env.ID)
		}
	}
}

// LabelRegistries are the label registries in force (not deleted), by namespace and name.
func (db *DB) LabelRegistries(ctx context.Context) ([]events.LabelRegistry, error) {
	rows, err := db.pool.Query(ctx, `SELECT registry::text FROM label_registries WHERE NOT deleted ORDER BY namespace, name`)
	if err != nil {
		return nil, fmt.Errorf("read label registries: %w", err)
	}
	var out []events.LabelRegistry
	var raw string
	_, err = pgx.ForEachRow(rows, []any{&raw}, func() error {
		var r events.LabelRegistry
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return fmt.Errorf("a stored label registry: %w", err)
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read label registries: %w", err)
	}
	return out, nil
}

// Labels answers GET /v1/labels over [from, to] (internal/labels): the placement and DRA claims of the pods of
// the namespaces s allows that lived in the window (each pod's latest snapshot up to to), every
// node's latest labels up to to and the values each label took in the window, and the label
// registries in force.
func (db *DB) Labels(ctx context.Context, s scope.Scope, from, to time.Time) (labels.Answer, error) {
	var pods []labels.Pod
	var nodes []labels.Node
	err := db.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT DISTINCT ON (p.uid) COALESCE(p.namespace, ''), COALESCE(p.workload_kind, 'Pod'), COALESCE(p.workload_name, p.name, ''),
			       COALESCE(p.exp_name, ''), COALESCE(p.exp_arm, ''), (e.envelope->'data'->'placement')::text,
			       (e.envelope->'data'->'claims')::text
			FROM pods p JOIN events e ON e.pod_uid = p.uid AND e.kind = 'pod_status' AND e.class <> 'samples' AND e.occurred_at <= $2
			WHERE p.first_seen <= $2 AND p.last_seen >= $1 AND ($3::text[] IS NULL OR p.namespace = ANY($3))
			ORDER BY p.uid, e.occurred_at DESC, e.id COLLATE "C" DESC`, from, to, s.Namespaces())
		if err != nil {
			return fmt.Errorf("read the pods' placement: %w", err)
		}
		var p labels.Pod
		var placement, claims *string
		if _, err := pgx.ForEachRow(rows, []any{&p.Namespace, &p.WorkloadKind, &p.WorkloadName, &p.Experiment, &p.Arm, &placement, &claims}, func() error {
			q := p
			q.Placement, q.Claims = nil, nil
			if placement != nil {
				var pl events.Placement
				if json.Unmarshal([]byte(*placement), &pl) == nil {
					q.Placement = &pl
				}
			}
			if claims != nil {
				_ = json.Unmarshal([]byte(*claims), &q.Claims) // a snapshot's claims as the collector wrote them
			}
			pods = append(pods, q)
			return nil
		}); err != nil {
			return fmt.Errorf("read the pods' placement: %w", err)
		}
		// Each node's state when the window began, then its states in it.
		rows, err = tx.Query(ctx, `
			SELECT node, labels, deleted FROM (
				(SELECT DISTINCT ON (node) node, occurred_at, id, (envelope->'data'->'labels')::text AS labels,
				        COALESCE((envelope->'data'->>'deleted')::boolean, false) AS deleted
				 FROM events WHERE kind = 'node_status' AND class <> 'samples' AND node IS NOT NULL AND occurred_at < $1
				 ORDER BY node, occurred_at DESC, id COLLATE "C" DESC)
				UNION ALL
				SELECT node, occurred_at, id, (envelope->'data'->'labels')::text, COALESCE((envelope->'data'->>'deleted')::boolean, false)
				FROM events WHERE kind = 'node_status' AND class <> 'samples' AND node IS NOT NULL AND occurred_at BETWEEN $1 AND $2) n
			ORDER BY node, occurred_at, id COLLATE "C"`, from, to)
		if err != nil {
			return fmt.Errorf("read the nodes: %w", err)
		}
		var (
			node    string
			raw     *string
			deleted bool
		)
		byName := map[string]*labels.Node{}
		var order []string
		if _, err := pgx.ForEachRow(rows, []any{&node, &raw, &deleted}, func() error {
			n := byName[node]
			if n == nil {
				n = &labels.Node{Name: node, History: map[string][]string{}}
				byName[node] = n
				order = append(order, node)
			}
			if deleted {
				n.Labels = nil
				return nil
			}
			ls := map[string]string{}
			if raw != nil {
				_ = json.Unmarshal([]byte(*raw), &ls)
			}
			n.Labels = ls
			for k, v := range ls {
				if h := n.History[k]; len(h) == 0 || h[len(h)-1] != v {
					n.History[k] = append(h, v)
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("read the nodes: %w", err)
		}
		for _, name := range order {
			if n := byName[name]; n.Labels != nil { // a node deleted by the window's end is gone
				nodes = append(nodes, *n)
			}
		}
		return nil
	})
	if err != nil {
		return labels.Answer{}, err
	}
	regs, err := db.LabelRegistries(ctx)
	if err != nil {
		return labels.Answer{}, err
	}
	return labels.Build(pods, nodes, regs), nil
}
