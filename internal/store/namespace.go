package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/scope"
)

// Namespaces lists the namespaces the store holds anything of — pods, workload controllers,
// experiment ConfigMaps —, sorted: what a caller's namespaces are resolved against
// (scope.Resolve), and what is counted as hidden of them. Each table is walked along its index on
// namespace one value at a time (a loose index scan), so the cost grows with the namespaces, not
// the pods.
func (db *DB) Namespaces(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, `
		WITH RECURSIVE p(ns) AS (
			(SELECT namespace FROM pods WHERE namespace IS NOT NULL ORDER BY namespace LIMIT 1)
			UNION ALL
			SELECT (SELECT namespace FROM pods WHERE namespace > p.ns ORDER BY namespace LIMIT 1) FROM p WHERE p.ns IS NOT NULL
		), w(ns) AS (
			(SELECT namespace FROM workload_states ORDER BY namespace LIMIT 1)
			UNION ALL
			SELECT (SELECT namespace FROM workload_states WHERE namespace > w.ns ORDER BY namespace LIMIT 1) FROM w WHERE w.ns IS NOT NULL
		)
		SELECT ns FROM p WHERE ns IS NOT NULL UNION SELECT ns FROM w WHERE ns IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	rows, err = db.pool.Query(ctx, `SELECT event_id FROM experiments`)
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	for _, id := range ids {
		if ns, ok := definitionNamespace(id); ok && ns != "" {
			out = append(out, ns)
		}
	}
	out = slices.DeleteFunc(out, func(ns string) bool { return ns == "" })
	slices.Sort(out)
	return slices.Compact(out), nil
}

// definitionNamespace is the namespace of the ConfigMap an experiment definition came from, by
// its event id (docs/contracts.md, Ids): "experiment/<namespace>/<configmap>/<resourceVersion>".
// A definition given through the API ("experiment/api/<name>/<unix ns>/<length>") belongs to no
// namespace: "", true. An id that says neither (one hashed for its length) is not known: "",
// false — the experiment is then for callers of every namespace only.
func definitionNamespace(eventID string) (string, bool) {
	parts := strings.Split(eventID, "/")
	switch {
	case len(parts) == 4 && parts[0] == "experiment" && parts[1] != "":
		return parts[1], true
	case len(parts) >= 5 && parts[0] == "experiment" && parts[1] == "api":
		return "", true
	}
	return "", false
}

// experimentNamespaces are the namespaces an experiment lives in: those of its pods ("" for a
// pod without one) and of its definition's ConfigMap ("" for one not known); an experiment is
// visible to a caller allowed every one of them (scope.Scope.AllowsEvery), so none whose pods
// or definition live in a hidden namespace is. eventID is nil without a definition.
func experimentNamespaces(eventID *string, pods []string) []string {
	out := slices.Clone(pods)
	if eventID != nil {
		if ns, ok := definitionNamespace(*eventID); !ok || ns != "" {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ExperimentNamespaces returns the namespaces experiment name lives in (its pods' and its
// definition's ConfigMap's; "" for one not known), or ErrNotFound when it has neither pods nor a
// definition. An experiment defined through the API without pods lives in none: only a caller
// of every namespace reads it. One known only from an imported record lives in the namespace
// the record was read for (none when it was read for all).
func (db *DB) ExperimentNamespaces(ctx context.Context, name string) ([]string, error) {
	var eventID, imported *string
	var pods []string
	err := db.pool.QueryRow(ctx, `
		SELECT (SELECT event_id FROM experiments WHERE name = $1),
		       COALESCE((SELECT array_agg(DISTINCT COALESCE(namespace, '')) FROM pods WHERE exp_name = $1), '{}'),
		       (SELECT namespace FROM imported_records WHERE experiment = $1 ORDER BY imported_at DESC, digest LIMIT 1)`, name).
		Scan(&eventID, &pods, &imported)
	if err != nil {
		return nil, fmt.Errorf("read the namespaces of experiment %s: %w", name, err)
	}
	if eventID == nil && len(pods) == 0 {
		if imported != nil && *imported != "" { // known from an imported record read for one namespace
			return []string{*imported}, nil
		}
		return nil, ErrNotFound
	}
	return experimentNamespaces(eventID, pods), nil
}

// PodCount counts the pods of the namespaces s allows (/v1/stats of a caller limited to some).
func (db *DB) PodCount(ctx context.Context, s scope.Scope) (int64, error) {
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM pods WHERE $1::text[] IS NULL OR namespace = ANY($1)`, s.Namespaces()).Scan(&n)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("count pods: %w", err)
	}
	return n, nil
}
