package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/scope"
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

// Experiments lists every experiment that has a definition or pods and that s allows: every
// namespace it lives in (experimentNamespaces). The rule is over all of an experiment's
// namespaces at once, not one column, so the list is read whole and filtered here: experiments
// are few.
func (db *DB) Experiments(ctx context.Context, s scope.Scope) ([]report.ExperimentInfo, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT n.name, e.definition::text, e.event_id,
		       COALESCE(array_agg(DISTINCT p.exp_arm) FILTER (WHERE p.exp_arm IS NOT NULL), '{}'),
		       COALESCE(array_agg(DISTINCT p.exp_run) FILTER (WHERE p.exp_run IS NOT NULL), '{}'),
		       COALESCE(array_agg(DISTINCT COALESCE(p.namespace, '')) FILTER (WHERE p.uid IS NOT NULL), '{}'),
		       count(p.uid)
		FROM (SELECT name FROM experiments UNION SELECT DISTINCT exp_name FROM pods WHERE exp_name IS NOT NULL) n
		LEFT JOIN experiments e ON e.name = n.name
		LEFT JOIN pods p ON p.exp_name = n.name
		GROUP BY n.name, e.definition::text, e.event_id ORDER BY n.name`)
	if err != nil {
		return nil, fmt.Errorf("list experiments: %w", err)
	}
	out := []report.ExperimentInfo{}
	var (
		info         report.ExperimentInfo
		def, eventID *string
		namespaces   []string
	)
	var all []string // every experiment here, readable or not
	_, err = pgx.ForEachRow(rows, []any{&info.Name, &def, &eventID, &info.Arms, &info.Runs, &namespaces, &info.Pods}, func() error {
		all = append(all, info.Name)
		if !s.AllowsEvery(experimentNamespaces(eventID, namespaces)) {
			return nil
		}
		e := info
		e.DefinitionProblems = []string{}
		if def != nil {
			var d events.Experiment
			if err := json.Unmarshal([]byte(*def), &d); err == nil {
				e.Definition = &d
				e.DefinitionProblems = append(e.DefinitionProblems, d.Problems()...)
			} else {
				e.DefinitionProblems = append(e.DefinitionProblems, "the stored definition does not read: "+err.Error())
			}
		}
		slices.Sort(e.Arms)
		slices.SortFunc(e.Runs, compare.CompareRuns)
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list experiments: %w", err)
	}
	local := map[string]bool{}
	for _, e := range all {
		local[e] = true
	}
	imported, err := db.importedExperiments(ctx, local)
	if err != nil {
		return nil, err
	}
	for _, e := range imported {
		// An imported record's namespace is the one it was read for; one read for every
		// namespace is for callers who may read every one.
		if ns := e.Imported.Namespace; ns != "" && s.Allows(ns) || ns == "" && !s.Limited() {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b report.ExperimentInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Experiment returns one experiment, or ErrNotFound. Whether the caller may read it is the
// reader's to check first (ExperimentNamespaces).
func (db *DB) Experiment(ctx context.Context, name string) (report.ExperimentInfo, error) {
	all, err := db.Experiments(ctx, scope.All)
	if err != nil {
		return report.ExperimentInfo{}, err
	}
	for _, e := range all {
		if e.Name == name {
			return e, nil
		}
	}
	return report.ExperimentInfo{}, ErrNotFound
}

// ComparisonInput gathers what a comparison of experiment name reads, for its pods in
// namespace (all when empty): the definition, per arm and run the pods with their latency
// histograms and the preemptions they caused, the run's interruption seconds, the placement
// per arm and the nodes the pods ran on. ErrNotFound for an unknown experiment or one without
// pods there. What it reads of a run is kept and read again only when the run changed
// (comparison.go); the result is the one reading everything gives (comparisonInputDirect). The
// pods' summaries (their pointers and maps) are shared with that cache: read them, do not
// change them.
func (db *DB) ComparisonInput(ctx context.Context, name, namespace string) (compare.Input, error) {
	if db.direct {
		in, err := db.comparisonInputDirect(ctx, name, namespace)
		in.NoMemo = true
		return in, err
	}
	in, _, err := db.comparisonInput(ctx, name, namespace)
	return in, err
}

// comparisonInput is ComparisonInput with the fingerprint of the state it read: the runs'
// fingerprints, the definition and the nodes (comparisonKey).
func (db *DB) comparisonInput(ctx context.Context, name, namespace string) (compare.Input, string, error) {
	in, def, err := db.comparisonDefinitionRaw(ctx, name, namespace)
	if err != nil {
		return compare.Input{}, "", err
	}
	runs, err := db.comparisonRuns(ctx, name, namespace)
	if err != nil {
		return compare.Input{}, "", err
	}
	if len(runs) == 0 {
		return compare.Input{}, "", ErrNotFound
	}
	comparisonArms(&in, runs)
	if err := db.comparisonNodes(ctx, &in); err != nil {
		return compare.Input{}, "", err
	}
	fp, err := comparisonKey(in, def, runs)
	return in, fp, err
}

// comparisonDefinition starts a comparison's input with the experiment's definition.
func (db *DB) comparisonDefinition(ctx context.Context, name, namespace string) (compare.Input, error) {
	in, _, err := db.comparisonDefinitionRaw(ctx, name, namespace)
	return in, err
}

// comparisonDefinitionRaw is comparisonDefinition also returning the definition as stored.
func (db *DB) comparisonDefinitionRaw(ctx context.Context, name, namespace string) (compare.Input, []byte, error) {
	in := compare.Input{Experiment: name, Namespace: namespace, Arms: map[string]map[string]compare.RunData{}}
	var def []byte
	switch err := db.pool.QueryRow(ctx, `SELECT definition, defined_at FROM experiments WHERE name = $1`, name).Scan(&def, &in.DefinedAt); {
	case err == nil:
		var d events.Experiment
		if json.Unmarshal(def, &d) == nil {
			in.Definition = &d
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return compare.Input{}, nil, fmt.Errorf("read definition of %s: %w", name, err)
	}
	return in, def, nil
}

// comparisonNodes adds the nodes the placement names.
func (db *DB) comparisonNodes(ctx context.Context, in *compare.Input) error {
	nodes := map[string]bool{}
	for _, p := range in.Placement {
		for n := range p.Nodes {
			nodes[n] = true
		}
	}
	var err error
	in.Nodes, err = db.nodeInfos(ctx, slices.Sorted(maps.Keys(nodes)))
	return err
}

// comparisonInputDirect is ComparisonInput reading every pod, snapshot and request of the
// experiment: the reference the per-run slices are tested against.
func (db *DB) comparisonInputDirect(ctx context.Context, name, namespace string) (compare.Input, error) {
	in, err := db.comparisonDefinition(ctx, name, namespace)
	if err != nil {
		return compare.Input{}, err
	}
	var pods []align.Summary
	cursor := ""
	for {
		page, err := db.ListPods(ctx, PodFilter{Experiment: name, Namespace: namespace}, 1000, cursor)
		if err != nil {
			return compare.Input{}, err
		}
		pods = append(pods, page.Pods...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if len(pods) == 0 {
		return compare.Input{}, ErrNotFound
	}
	latency, err := db.podLatencies(ctx, name, namespace)
	if err != nil {
		return compare.Input{}, err
	}
	caused := map[string]int{}
	for _, p := range pods {
		if p.PreemptedBy != nil {
			caused[*p.PreemptedBy]++
		}
	}
	runs := map[string]bool{}
	for _, p := range pods {
		arm, run := deref(p.Experiment.Arm), deref(p.Experiment.Run)
		if in.Arms[arm] == nil {
			in.Arms[arm] = map[string]compare.RunData{}
		}
		rd := in.Arms[arm][run]
		rd.Pods = append(rd.Pods, compare.PodData{Summary: p, Latency: latency[p.Pod.UID], PreemptionsCaused: caused[p.Pod.UID]})
		in.Arms[arm][run] = rd
		runs[run] = true
	}
	for run := range runs {
		arms, err := db.RunInterruptions(ctx, name, namespace, run, align.DefaultMinGap)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return compare.Input{}, err
		}
		for _, a := range arms {
			if rd, ok := in.Arms[a.Arm][run]; ok {
				for _, w := range a.Windows {
					if w.Kind == align.ReadyBelowDesired || w.Kind == align.NoSuccess {
						rd.InterruptionS += w.Seconds
					}
				}
				in.Arms[a.Arm][run] = rd
			}
		}
	}
	if in.Placement, err = db.Placement(ctx, name, namespace); err != nil {
		return compare.Input{}, err
	}
	if err := db.comparisonNodes(ctx, &in); err != nil {
		return compare.Input{}, err
	}
	return in, nil
}

// podLatencies reads the latency histogram of every pod of an experiment.
func (db *DB) podLatencies(ctx context.Context, name, namespace string) (map[string]map[int32]int64, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT l.pod_uid, l.bucket, l.count
		FROM pod_latency l JOIN pods p ON p.uid = l.pod_uid
		WHERE p.exp_name = $1 AND ($2 = '' OR p.namespace = $2)`, name, namespace)
	return scanLatencies(rows, err)
}

// scanLatencies collects (pod, bucket, count) rows into each pod's latency histogram.
func scanLatencies(rows pgx.Rows, err error) (map[string]map[int32]int64, error) {
	if err != nil {
		return nil, fmt.Errorf("read latencies: %w", err)
	}
	out := map[string]map[int32]int64{}
	var (
		uid    string
		bucket int32
		n      int64
	)
	_, err = pgx.ForEachRow(rows, []any{&uid, &bucket, &n}, func() error {
		if out[uid] == nil {
			out[uid] = map[int32]int64{}
		}
		out[uid][bucket] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read latencies: %w", err)
	}
	return out, nil
}

// nodeInfos reads the latest snapshot of each named node.
func (db *DB) nodeInfos(ctx context.Context, names []string) (map[string]compare.NodeInfo, error) {
	out := map[string]compare.NodeInfo{}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := db.pool.Query(ctx, `
		SELECT DISTINCT ON (node) node, envelope->'data'
		FROM events WHERE kind = 'node_status' AND class <> 'samples' AND node = ANY($1)
		ORDER BY node, occurred_at DESC`, names)
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	var node string
	var data []byte
	_, err = pgx.ForEachRow(rows, []any{&node, &data}, func() error {
		var ns events.NodeStatus
		if err := json.Unmarshal(data, &ns); err != nil {
			return nil // a stored snapshot that no longer reads says nothing of the node
		}
		out[node] = compare.NodeInfo{Labels: ns.Labels, KubeletVersion: ns.KubeletVersion}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
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
	_, err = db.Append(ctx, []*events.Envelope{decoded}, nil)
	return err
}

// ArmPlacement is where an arm's pods ran and why some waited (compare.ArmPlacement).
type ArmPlacement = compare.ArmPlacement

// lastGPUJoin joins to each pod t of pod_timeline, as g, the GPU (model, sharing) of its latest
// pod_status event that reported one whose sharing is not "unknown"; nulls when none did. The
// comparison's run slices and Placement read placement through it.
const lastGPUJoin = `LEFT JOIN LATERAL (
			SELECT e.envelope->'data'->'gpu'->>'model' AS model, e.envelope->'data'->'gpu'->>'sharing' AS sharing
			FROM events e
			WHERE e.pod_uid = t.uid AND e.kind = 'pod_status' AND e.class <> 'samples' AND e.envelope->'data'->'gpu'->>'sharing' IS DISTINCT FROM 'unknown'
			  AND e.envelope->'data'->'gpu' IS NOT NULL
			ORDER BY e.occurred_at DESC LIMIT 1) g ON true`

// Placement reads the placement of every arm of an experiment (its pods in namespace; all
// when empty).
func (db *DB) Placement(ctx context.Context, name, namespace string) (map[string]*ArmPlacement, error) {
	out := map[string]*ArmPlacement{}
	get := func(arm string) *ArmPlacement {
		p := out[arm]
		if p == nil {
			p = compare.NewArmPlacement()
			out[arm] = p
		}
		return p
	}
	rows, err := db.pool.Query(ctx, `
		SELECT COALESCE(t.exp_arm, ''), t.node, g.model, g.sharing
		FROM pod_timeline t
		`+lastGPUJoin+`
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
		  AND e.kind = 'k8s_event' AND e.class <> 'samples' AND e.envelope->'data'->>'reason' IN ('FailedScheduling', 'Unschedulable')
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
