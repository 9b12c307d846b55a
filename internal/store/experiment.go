package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
)

const mergeExperiment = `
INSERT INTO experiments (name, definition, defined_at, event_id) VALUES ($1, $2, $3, $4)
ON CONFLICT (name) DO UPDATE SET definition = excluded.definition, defined_at = excluded.defined_at, event_id = excluded.event_id
WHERE (excluded.defined_at, excluded.event_id) > (experiments.defined_at, experiments.event_id)`

// queueExperiments adds the definitions among envs to b.
func queueExperiments(b *pgx.Batch, envs []*events.Envelope) {
	for _, env := range envs {
		if p, ok := env.Payload.(*events.Experiment); ok {
			b.Queue(mergeExperiment, p.Name, string(env.Data), env.ObservedAt, env.ID)
		}
	}
}

// ExperimentInfo is an experiment as the API lists it.
type ExperimentInfo struct {
	Name       string             `json:"name"`
	Definition *events.Experiment `json:"definition"` // nil when no definition was received
	Arms       []string           `json:"arms"`
	Runs       []string           `json:"runs"`
	Pods       int                `json:"pods"`
}

// Experiments lists every experiment that has a definition or pods.
func (db *DB) Experiments(ctx context.Context) ([]ExperimentInfo, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT n.name, e.definition::text,
		       COALESCE(array_agg(DISTINCT p.exp_arm) FILTER (WHERE p.exp_arm IS NOT NULL), '{}'),
		       COALESCE(array_agg(DISTINCT p.exp_run) FILTER (WHERE p.exp_run IS NOT NULL), '{}'),
		       count(p.uid)
		FROM (SELECT name FROM experiments UNION SELECT DISTINCT exp_name FROM pods WHERE exp_name IS NOT NULL) n
		LEFT JOIN experiments e ON e.name = n.name
		LEFT JOIN pods p ON p.exp_name = n.name
		GROUP BY n.name, e.definition::text ORDER BY n.name`)
	if err != nil {
		return nil, fmt.Errorf("list experiments: %w", err)
	}
	out := []ExperimentInfo{}
	var (
		info ExperimentInfo
		def  *string
	)
	_, err = pgx.ForEachRow(rows, []any{&info.Name, &def, &info.Arms, &info.Runs, &info.Pods}, func() error {
		e := info
		if def != nil {
			var d events.Experiment
			if err := json.Unmarshal([]byte(*def), &d); err == nil {
				e.Definition = &d
			}
		}
		slices.Sort(e.Arms)
		slices.SortFunc(e.Runs, CompareRuns)
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list experiments: %w", err)
	}
	return out, nil
}

// Experiment returns one experiment, or ErrNotFound.
func (db *DB) Experiment(ctx context.Context, name string) (ExperimentInfo, error) {
	all, err := db.Experiments(ctx)
	if err != nil {
		return ExperimentInfo{}, err
	}
	for _, e := range all {
		if e.Name == name {
			return e, nil
		}
	}
	return ExperimentInfo{}, ErrNotFound
}

// CompareRuns orders run names numerically when they are numbers.
func CompareRuns(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// ComparisonInput gathers, per arm and run, what compare.RunMetrics needs, for the pods of
// namespace (all when empty).
func (db *DB) ComparisonInput(ctx context.Context, name, namespace string) (map[string]map[string]compare.RunData, error) {
	var pods []align.Summary
	cursor := ""
	for {
		page, err := db.ListPods(ctx, PodFilter{Experiment: name, Namespace: namespace}, 1000, cursor)
		if err != nil {
			return nil, err
		}
		pods = append(pods, page.Pods...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if len(pods) == 0 {
		return nil, ErrNotFound
	}
	out := map[string]map[string]compare.RunData{}
	owner := map[string][2]string{}
	for _, p := range pods {
		arm, run := deref(p.Experiment.Arm), deref(p.Experiment.Run)
		if out[arm] == nil {
			out[arm] = map[string]compare.RunData{}
		}
		rd := out[arm][run]
		rd.Pods = append(rd.Pods, p)
		out[arm][run] = rd
		owner[p.Pod.UID] = [2]string{arm, run}
	}
	for _, p := range pods {
		if p.PreemptedBy == nil {
			continue
		}
		if o, ok := owner[*p.PreemptedBy]; ok {
			rd := out[o[0]][o[1]]
			rd.PreemptionsCaused++
			out[o[0]][o[1]] = rd
		}
	}
	rows, err := db.pool.Query(ctx, `
		SELECT COALESCE(p.exp_arm, ''), COALESCE(p.exp_run, ''), l.bucket, sum(l.count)::bigint
		FROM pod_latency l JOIN pods p ON p.uid = l.pod_uid
		WHERE p.exp_name = $1 AND ($2 = '' OR p.namespace = $2) GROUP BY 1, 2, 3`, name, namespace)
	if err != nil {
		return nil, fmt.Errorf("read latencies of %s: %w", name, err)
	}
	var arm, run string
	var bucket int32
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&arm, &run, &bucket, &n}, func() error {
		rd := out[arm][run]
		if rd.Latency == nil {
			rd.Latency = map[int32]int64{}
		}
		rd.Latency[bucket] = n
		if out[arm] != nil {
			out[arm][run] = rd
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read latencies of %s: %w", name, err)
	}
	runs := map[string]bool{}
	for _, byRun := range out {
		for run := range byRun {
			runs[run] = true
		}
	}
	for run := range runs {
		arms, err := db.RunInterruptions(ctx, name, namespace, run, align.DefaultMinGap)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, a := range arms {
			if rd, ok := out[a.Arm][run]; ok {
				for _, w := range a.Windows {
					if w.Kind == align.ReadyBelowDesired || w.Kind == align.NoSuccess {
						rd.InterruptionS += w.Seconds
					}
				}
				out[a.Arm][run] = rd
			}
		}
	}
	return out, nil
}

// DefineExperiment stores a definition given through the API as an experiment event, so that
// it is kept, replayed and rebuilt like one from a ConfigMap.
func (db *DB) DefineExperiment(ctx context.Context, def events.Experiment, now time.Time) error {
	env := &events.Envelope{V: events.Version, Kind: events.KindExperiment, Cluster: "api", Source: "api",
		OccurredAt: now, ObservedAt: now, Experiment: &events.ExperimentRef{Name: def.Name}, Payload: &def}
	data, err := json.Marshal(def)
	if err != nil {
		return err
	}
	env.ID = fmt.Sprintf("experiment/api/%s/%d/%x", def.Name, now.UnixNano(), len(data))
	b, err := events.Encode(env)
	if err != nil {
		return err
	}
	decoded, err := events.Decode(b)
	if err != nil {
		return err
	}
	_, err = db.Ingest(ctx, []*events.Envelope{decoded}, nil)
	return err
}

// ArmPlacement is where an arm's pods ran and why some waited: pods by node, GPU model and GPU
// sharing mode (each pod counted once, from its latest snapshot that knew its GPU), and the
// FailedScheduling reasons, as node counts summed over the scheduler's notes.
type ArmPlacement struct {
	Nodes            map[string]int `json:"nodes"`
	GPUModels        map[string]int `json:"gpu_models"`
	Sharing          map[string]int `json:"sharing"`
	FailedScheduling map[string]int `json:"failed_scheduling_reasons"`
}

// Placement reads the placement of every arm of an experiment (its pods in namespace; all
// when empty).
func (db *DB) Placement(ctx context.Context, name, namespace string) (map[string]*ArmPlacement, error) {
	out := map[string]*ArmPlacement{}
	get := func(arm string) *ArmPlacement {
		p := out[arm]
		if p == nil {
			p = &ArmPlacement{Nodes: map[string]int{}, GPUModels: map[string]int{}, Sharing: map[string]int{}, FailedScheduling: map[string]int{}}
			out[arm] = p
		}
		return p
	}
	rows, err := db.pool.Query(ctx, `
		SELECT COALESCE(t.exp_arm, ''), t.node, g.model, g.sharing
		FROM pod_timeline t
		LEFT JOIN LATERAL (
			SELECT e.envelope->'data'->'gpu'->>'model' AS model, e.envelope->'data'->'gpu'->>'sharing' AS sharing
			FROM events e
			WHERE e.pod_uid = t.uid AND e.kind = 'pod_status' AND e.envelope->'data'->'gpu'->>'sharing' IS DISTINCT FROM 'unknown'
			  AND e.envelope->'data'->'gpu' IS NOT NULL
			ORDER BY e.occurred_at DESC LIMIT 1) g ON true
		WHERE t.exp_name = $1 AND ($2 = '' OR t.namespace = $2)`, name, namespace)
	if err != nil {
		return nil, fmt.Errorf("read placement of %s: %w", name, err)
	}
	var arm string
	var node, model, sharing *string
	_, err = pgx.ForEachRow(rows, []any{&arm, &node, &model, &sharing}, func() error {
		p := get(arm)
		if node != nil {
			p.Nodes[*node]++
		}
		if model != nil && *model != "" {
			p.GPUModels[*model]++
		}
		if sharing != nil && *sharing != "" {
			p.Sharing[*sharing]++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read placement of %s: %w", name, err)
	}
	rows, err = db.pool.Query(ctx, `
		SELECT COALESCE(p.exp_arm, ''), r->>'reason', sum((r->>'nodes')::int)::int
		FROM events e JOIN pods p ON p.uid = e.pod_uid
		CROSS JOIN LATERAL jsonb_array_elements(COALESCE(e.envelope->'data'->'scheduling'->'reasons', '[]'::jsonb)) r
		WHERE p.exp_name = $1 AND ($2 = '' OR p.namespace = $2)
		  AND e.kind = 'k8s_event' AND e.envelope->'data'->>'reason' = 'FailedScheduling'
		GROUP BY 1, 2`, name, namespace)
	if err != nil {
		return nil, fmt.Errorf("read scheduling failures of %s: %w", name, err)
	}
	var reason string
	var nodes int
	_, err = pgx.ForEachRow(rows, []any{&arm, &reason, &nodes}, func() error {
		get(arm).FailedScheduling[reason] += nodes
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read scheduling failures of %s: %w", name, err)
	}
	return out, nil
}
