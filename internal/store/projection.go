package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
)

var podColumns = []string{
	"uid", "cluster", "namespace", "name", "exp_name", "exp_arm", "exp_run", "first_seen", "last_seen",
	"created_at", "first_unschedulable_at", "scheduled_event_at", "scheduled_event_node", "scheduled_cond_at",
	"status_node", "running_started_at", "running_observed_at", "ready_cond_at", "ready_observed_at",
	"first_success_at", "ended_at", "end_rank", "preempted_by", "restarts", "requests", "request_errors",
	"scope_key", "alive_at", "gpu_fb_seconds", "gpu_fb_max",
	"created_observed_at", "scheduled_observed_at", "pre_ready_requests", "pre_ready_errors",
	"workload_kind", "workload_name", "revision",
	"gated_seen_at", "ungated_observed_at", "claims_allocated_at", "claims_allocated_observed_at",
}

var podColumnList = strings.Join(podColumns, ", ")

// mergePods folds the staged facts into pods with the same rules as align.Facts.Merge: earliest
// time, smallest non-empty string, largest rank and restart count, summed request counts.
var mergePods = `
INSERT INTO pods (` + podColumnList + `) SELECT ` + podColumnList + ` FROM stage_pods ORDER BY uid
ON CONFLICT (uid) DO UPDATE SET
    cluster                = LEAST(pods.cluster, excluded.cluster),
    namespace              = LEAST(pods.namespace, excluded.namespace),
    name                   = LEAST(pods.name, excluded.name),
    exp_name               = LEAST(pods.exp_name, excluded.exp_name),
    exp_arm                = LEAST(pods.exp_arm, excluded.exp_arm),
    exp_run                = LEAST(pods.exp_run, excluded.exp_run),
    first_seen             = LEAST(pods.first_seen, excluded.first_seen),
    last_seen              = GREATEST(pods.last_seen, excluded.last_seen),
    created_at             = LEAST(pods.created_at, excluded.created_at),
    first_unschedulable_at = LEAST(pods.first_unschedulable_at, excluded.first_unschedulable_at),
    scheduled_event_node   = CASE WHEN excluded.scheduled_event_at IS NOT NULL AND (pods.scheduled_event_at IS NULL
                                   OR (excluded.scheduled_event_at, excluded.scheduled_event_node) < (pods.scheduled_event_at, pods.scheduled_event_node))
                                  THEN excluded.scheduled_event_node ELSE pods.scheduled_event_node END,
    scheduled_event_at     = LEAST(pods.scheduled_event_at, excluded.scheduled_event_at),
    scheduled_cond_at      = LEAST(pods.scheduled_cond_at, excluded.scheduled_cond_at),
    status_node            = LEAST(pods.status_node, excluded.status_node),
    running_started_at     = LEAST(pods.running_started_at, excluded.running_started_at),
    running_observed_at    = LEAST(pods.running_observed_at, excluded.running_observed_at),
    ready_cond_at          = LEAST(pods.ready_cond_at, excluded.ready_cond_at),
    ready_observed_at      = LEAST(pods.ready_observed_at, excluded.ready_observed_at),
    first_success_at       = LEAST(pods.first_success_at, excluded.first_success_at),
    ended_at               = LEAST(pods.ended_at, excluded.ended_at),
    end_rank               = GREATEST(pods.end_rank, excluded.end_rank),
    preempted_by           = LEAST(pods.preempted_by, excluded.preempted_by),
    restarts               = GREATEST(pods.restarts, excluded.restarts),
    requests               = pods.requests + excluded.requests,
    request_errors         = pods.request_errors + excluded.request_errors,
    scope_key              = LEAST(pods.scope_key, excluded.scope_key),
    alive_at               = GREATEST(pods.alive_at, excluded.alive_at),
    gpu_fb_seconds         = pods.gpu_fb_seconds + excluded.gpu_fb_seconds,
    gpu_fb_max             = GREATEST(pods.gpu_fb_max, excluded.gpu_fb_max),
    created_observed_at    = LEAST(pods.created_observed_at, excluded.created_observed_at),
    scheduled_observed_at  = LEAST(pods.scheduled_observed_at, excluded.scheduled_observed_at),
    pre_ready_requests     = pods.pre_ready_requests + excluded.pre_ready_requests,
    pre_ready_errors       = pods.pre_ready_errors + excluded.pre_ready_errors,
    workload_kind          = CASE WHEN pods.workload_kind IS NULL OR (excluded.workload_kind, excluded.workload_name) < (pods.workload_kind, pods.workload_name)
                                  THEN COALESCE(excluded.workload_kind, pods.workload_kind) ELSE pods.workload_kind END,
    workload_name          = CASE WHEN pods.workload_kind IS NULL OR (excluded.workload_kind, excluded.workload_name) < (pods.workload_kind, pods.workload_name)
                                  THEN COALESCE(excluded.workload_name, pods.workload_name) ELSE pods.workload_name END,
    revision               = LEAST(pods.revision, excluded.revision),
    gated_seen_at          = GREATEST(pods.gated_seen_at, excluded.gated_seen_at),
    ungated_observed_at    = LEAST(pods.ungated_observed_at, excluded.ungated_observed_at),
    claims_allocated_at    = LEAST(pods.claims_allocated_at, excluded.claims_allocated_at),
    claims_allocated_observed_at = LEAST(pods.claims_allocated_observed_at, excluded.claims_allocated_observed_at)`

const mergeLatency = `
INSERT INTO pod_latency (pod_uid, bucket, count)
SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[]) ORDER BY 1, 2
ON CONFLICT (pod_uid, bucket) DO UPDATE SET count = pod_latency.count + excluded.count`

const mergeGPUUtil = `
INSERT INTO pod_gpu_util (pod_uid, util, seconds)
SELECT * FROM unnest($1::text[], $2::smallint[], $3::float8[]) ORDER BY 1, 2
ON CONFLICT (pod_uid, util) DO UPDATE SET seconds = pod_gpu_util.seconds + excluded.seconds`

// An inventory is stored as one row and one listing per pod it lists; it updates no pod: what
// it proves (align.Facts.ApplyInventories) is looked up when a pod is read (pod_timeline), so
// its cost is its size, whatever the history, and arrival order cannot matter.
var (
	inventoryColumns    = []string{"id", "cluster", "scope_key", "listed_at", "pod_uids"}
	inventoryPodColumns = []string{"uid", "cluster", "scope_key", "listed_at"}
)

// mergeWatches keeps, per scope and watch start, the latest heartbeat (align.Watch).
const mergeWatches = `
INSERT INTO scope_watches (cluster, scope_key, since, live_until)
SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[]) ORDER BY 1, 2, 3
ON CONFLICT (cluster, scope_key, since) DO UPDATE SET live_until = GREATEST(scope_watches.live_until, excluded.live_until)`

const mergeSeries = `
INSERT INTO pod_event_series (pod_uid, reason, series_key, max_count)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) ORDER BY 1, 2, 3
ON CONFLICT (pod_uid, reason, series_key) DO UPDATE SET max_count = GREATEST(pod_event_series.max_count, excluded.max_count)`

const mergeKindCounts = `
INSERT INTO kind_counts (kind, events, last_occurred_at)
SELECT * FROM unnest($1::text[], $2::bigint[], $3::timestamptz[]) ORDER BY 1
ON CONFLICT (kind) DO UPDATE SET events = kind_counts.events + excluded.events,
    last_occurred_at = GREATEST(kind_counts.last_occurred_at, excluded.last_occurred_at)`

// applyFacts updates every projection from envs, which must be events not applied before (newly
// inserted, or the whole table during a rebuild). Rows are written in key order so concurrent
// correlators lock them in the same order and cannot deadlock.
func (db *DB) applyFacts(ctx context.Context, tx pgx.Tx, envs []*events.Envelope) error {
	if err := db.project(ctx, tx, envs, true); err != nil {
		return err
	}
	return db.attributeByIP(ctx, tx, envs)
}

// project merges envs' facts into the projections; counted says whether they are new events
// (kind_counts) rather than results attributed to a pod after they were stored.
func (db *DB) project(ctx context.Context, tx pgx.Tx, envs []*events.Envelope, counted bool) error {
	if len(envs) == 0 {
		return nil
	}
	pods := map[string]*align.Facts{}
	type kindCount struct {
		n    int64
		last time.Time
	}
	kinds := map[events.Kind]*kindCount{}
	var invRows, invPodRows [][]any
	parts := map[string]map[int]partOf{} // chunked inventories' parts, by align.Inventory.PartsKey
	watches := map[[3]string]align.Watch{}
	for _, env := range envs {
		if counted {
			kc := kinds[env.Kind]
			if kc == nil {
				kc = &kindCount{}
				kinds[env.Kind] = kc
			}
			kc.n++
			if env.OccurredAt.After(kc.last) {
				kc.last = env.OccurredAt
			}
		}
		if inv, ok := align.InventoryOf(env); ok && inv.Parts > 0 {
			k := inv.PartsKey()
			if parts[k] == nil {
				parts[k] = map[int]partOf{}
			}
			parts[k][inv.Part] = partOf{id: env.ID, inv: inv}
			continue
		} else if ok {
			uids := slices.Sorted(maps.Keys(inv.UIDs))
			if uids == nil {
				uids = []string{} // an empty scope: every pod of it is gone
			}
			invRows = append(invRows, []any{env.ID, inv.Cluster, inv.ScopeKey, inv.ListedAt, uids})
			for _, uid := range uids {
				invPodRows = append(invPodRows, []any{uid, inv.Cluster, inv.ScopeKey, inv.ListedAt})
			}
			continue
		}
		if w, ok := align.WatchOf(env); ok {
			k := [3]string{w.Cluster, w.ScopeKey, w.Since.Format(time.RFC3339Nano)}
			if old, seen := watches[k]; !seen || w.Until.After(old.Until) {
				watches[k] = w
			}
			continue
		}
		f, ok := align.FactsOf(env, db.keys)
		if !ok {
			continue
		}
		if p := pods[f.UID]; p != nil {
			p.Merge(f)
		} else {
			pods[f.UID] = &f
		}
	}

	podRows := make([][]any, 0, len(pods))
	var sUID, sReason, sKey []string
	var sCount []int64
	var lUID, gUID []string
	var lBucket []int32
	var lCount []int64
	var gUtil []int16
	var gSeconds []float64
	for _, f := range pods {
		podRows = append(podRows, podRow(f))
		for b, n := range f.Latency {
			lUID, lBucket, lCount = append(lUID, f.UID), append(lBucket, b), append(lCount, n)
		}
		for u, sec := range f.GPUUtil {
			gUID, gUtil, gSeconds = append(gUID, f.UID), append(gUtil, int16(u)), append(gSeconds, sec)
		}
		for k, n := range f.Series {
			sUID, sReason, sKey, sCount = append(sUID, f.UID), append(sReason, k.Reason), append(sKey, k.Key), append(sCount, int64(n))
		}
	}
	if len(podRows) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"stage_pods"}, podColumns, pgx.CopyFromRows(podRows)); err != nil {
			return fmt.Errorf("copy pod facts to staging: %w", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		whole, ok, err := storeParts(ctx, tx, parts[k])
		if err != nil {
			return err
		}
		if ok {
			// Complete: the union is one inventory, stored (and so read by pod_timeline) as a
			// whole one is; until then its parts prove nothing.
			uids := slices.Sorted(maps.Keys(whole.inv.UIDs))
			if uids == nil {
				uids = []string{}
			}
			invRows = append(invRows, []any{whole.id, whole.inv.Cluster, whole.inv.ScopeKey, whole.inv.ListedAt, uids})
			for _, uid := range uids {
				invPodRows = append(invPodRows, []any{uid, whole.inv.Cluster, whole.inv.ScopeKey, whole.inv.ListedAt})
			}
		}
	}
	if len(invRows) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"inventories"}, inventoryColumns, pgx.CopyFromRows(invRows)); err != nil {
			return fmt.Errorf("copy inventories: %w", err)
		}
	}
	if len(invPodRows) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"inventory_pods"}, inventoryPodColumns, pgx.CopyFromRows(invPodRows)); err != nil {
			return fmt.Errorf("copy inventory listings: %w", err)
		}
	}
	var kName []string
	var kN []int64
	var kLast []time.Time
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		kName, kN, kLast = append(kName, string(k)), append(kN, kinds[k].n), append(kLast, kinds[k].last)
	}

	b := &pgx.Batch{}
	if len(podRows) > 0 {
		b.Queue(mergePods)
	}
	if len(sUID) > 0 {
		b.Queue(mergeSeries, sUID, sReason, sKey, sCount)
	}
	if len(lUID) > 0 {
		b.Queue(mergeLatency, lUID, lBucket, lCount)
	}
	if len(gUID) > 0 {
		b.Queue(mergeGPUUtil, gUID, gUtil, gSeconds)
	}
	if len(kName) > 0 {
		b.Queue(mergeKindCounts, kName, kN, kLast)
	}
	if len(watches) > 0 {
		var wc, wk []string
		var ws, wu []time.Time
		for _, k := range slices.SortedFunc(maps.Keys(watches), func(a, b [3]string) int {
			return strings.Compare(a[0]+"\x00"+a[1]+"\x00"+a[2], b[0]+"\x00"+b[1]+"\x00"+b[2])
		}) {
			w := watches[k]
			wc, wk, ws, wu = append(wc, w.Cluster), append(wk, w.ScopeKey), append(ws, w.Since), append(wu, w.Until)
		}
		b.Queue(mergeWatches, wc, wk, ws, wu)
	}
	queueExperiments(b, envs)
	queueLabelRegistries(b, envs)
	queueWorkloads(b, envs)
	if len(podRows) > 0 {
		// Staging empties at commit; a second projection in the same transaction (results
		// attributed by IP, the next rebuild chunk) needs it empty now. DELETE, not TRUNCATE:
		// truncating a table made in an earlier transaction gives it new files (a catalog
		// update, files created now and unlinked at commit), for the few rows of a batch.
		b.Queue(`DELETE FROM stage_pods`)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("merge projections: %w", err)
	}
	return nil
}

// partOf is one part of a chunked inventory and its envelope id.
type partOf struct {
	id  string
	inv align.Inventory
}

// storeParts keeps new parts of one chunked inventory (by part number) in inventory_parts and,
// when they complete it — every part 1..Parts stored and at least one of them new here —,
// returns the union as a whole inventory to store and apply. Correlators completing the same
// inventory at once take turns (a transaction-scoped advisory lock on its key), so exactly one
// of them sees it complete.
func storeParts(ctx context.Context, tx pgx.Tx, batch map[int]partOf) (partOf, bool, error) {
	var first align.Inventory
	for _, p := range batch {
		first = p.inv
		break
	}
	key := first.PartsKey()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 20))`, key); err != nil {
		return partOf{}, false, fmt.Errorf("lock inventory parts: %w", err)
	}
	added := false
	for _, n := range slices.Sorted(maps.Keys(batch)) {
		p := batch[n]
		tag, err := tx.Exec(ctx, `INSERT INTO inventory_parts (cluster, scope_key, listed_at, parts, part, id, pod_uids)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
			p.inv.Cluster, p.inv.ScopeKey, p.inv.ListedAt, p.inv.Parts, p.inv.Part, p.id, slices.Sorted(maps.Keys(p.inv.UIDs)))
		if err != nil {
			return partOf{}, false, fmt.Errorf("store inventory part: %w", err)
		}
		added = added || tag.RowsAffected() > 0
	}
	if !added {
		return partOf{}, false, nil
	}
	rows, err := tx.Query(ctx, `SELECT part, pod_uids FROM inventory_parts
WHERE cluster = $1 AND scope_key = $2 AND listed_at = $3 AND parts = $4`, first.Cluster, first.ScopeKey, first.ListedAt, first.Parts)
	if err != nil {
		return partOf{}, false, fmt.Errorf("read inventory parts: %w", err)
	}
	stored := map[int]align.Inventory{}
	var part int
	var uids []string
	if _, err := pgx.ForEachRow(rows, []any{&part, &uids}, func() error {
		inv := align.Inventory{Cluster: first.Cluster, ScopeKey: first.ScopeKey, ListedAt: first.ListedAt, Part: part, Parts: first.Parts, UIDs: map[string]bool{}}
		for _, u := range uids {
			inv.UIDs[u] = true
		}
		stored[part] = inv
		return nil
	}); err != nil {
		return partOf{}, false, fmt.Errorf("read inventory parts: %w", err)
	}
	whole, ok := align.Union(stored)
	if !ok {
		return partOf{}, false, nil
	}
	id := fmt.Sprintf("parts/%s/%s/%s/%d", first.Cluster, first.ScopeKey, first.ListedAt.UTC().Format(time.RFC3339Nano), first.Parts)
	return partOf{id: id, inv: whole}, true, nil
}

func podRow(f *align.Facts) []any {
	return []any{
		f.UID, nullString(f.Cluster), nullString(f.Namespace), nullString(f.Name),
		nullString(f.Experiment.Name), nullString(f.Experiment.Arm), nullString(f.Experiment.Run),
		f.FirstSeen, f.LastSeen,
		nullTime(f.Created), nullTime(f.FirstUnschedulable), nullTime(f.ScheduledEvent), nullString(f.ScheduledEventNode),
		nullTime(f.ScheduledCond), nullString(f.StatusNode), nullTime(f.RunningStarted), nullTime(f.RunningObserved),
		nullTime(f.ReadyCond), nullTime(f.ReadyObserved), nullTime(f.FirstSuccess), nullTime(f.EndedAt),
		int32(f.EndRank), nullString(f.PreemptedBy), int64(f.Restarts), int64(f.Requests), int64(f.RequestErrors),
		nullString(f.ScopeKey), nullTime(f.AliveAt), f.GPUFBSeconds, f.GPUFBMax,
		nullTime(f.CreatedObserved), nullTime(f.ScheduledObserved), int64(f.PreReadyRequests), int64(f.PreReadyErrors),
		nullString(f.Workload.Kind), nullString(f.Workload.Name), nullString(f.Revision),
		nullTime(f.GatedSeen), nullTime(f.UngatedObserved), nullTime(f.ClaimsAllocated), nullTime(f.ClaimsAllocatedObserved),
	}
}

// nullTime maps the zero time to SQL NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// RebuildResult says what a rebuild read.
type RebuildResult struct {
	Events   int // events applied
	Rejected int // stored events that no longer decode (left out of the projections, logged)
}

// Rebuild recomputes every projection from the events table in one transaction, through the
// same code the live path uses, reading chunk events at a time.
func (db *DB) Rebuild(ctx context.Context, chunk int) (RebuildResult, error) {
	var res RebuildResult
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE events IN SHARE MODE;
			TRUNCATE pods, pod_event_series, kind_counts, inventories, inventory_parts, inventory_pods, pod_latency, pod_gpu_util, pod_ips, unattributed_requests, experiments, label_registries, scope_watches, workload_states;`+stageDDL); err != nil {
			return fmt.Errorf("reset projections: %w", err)
		}
		if _, err := tx.Exec(ctx, `DECLARE rebuild NO SCROLL CURSOR FOR SELECT envelope::text FROM events`); err != nil {
			return fmt.Errorf("open events cursor: %w", err)
		}
		for {
			rows, err := tx.Query(ctx, fmt.Sprintf("FETCH FORWARD %d FROM rebuild", chunk))
			if err != nil {
				return fmt.Errorf("read events: %w", err)
			}
			var envs []*events.Envelope
			var raw []byte
			_, err = pgx.ForEachRow(rows, []any{&raw}, func() error {
				env, err := events.Decode(raw)
				if err != nil {
					res.Rejected++
					db.logger.Warn("stored event no longer decodes; left out of projections", "error", err)
					return nil
				}
				envs = append(envs, env)
				return nil
			})
			if err != nil {
				return fmt.Errorf("read events: %w", err)
			}
			if len(envs) == 0 && rows.CommandTag().RowsAffected() == 0 {
				return nil
			}
			// The inventories' days were emptied, not dropped; a day whose table was dropped
			// with no rows when the store was partitioned (migrations/00013) is created here.
			if _, _, _, err := createMissing(ctx, tx, partitionsOf(envs)); err != nil {
				return fmt.Errorf("create partitions: %w", err)
			}
			if err := db.applyFacts(ctx, tx, envs); err != nil {
				return err
			}
			// stage_pods is emptied only at commit: clear it between chunks.
			if _, err := tx.Exec(ctx, `TRUNCATE stage_pods`); err != nil {
				return fmt.Errorf("clear staging: %w", err)
			}
			res.Events += len(envs)
		}
	})
	db.parts.reset()
	if err != nil {
		return RebuildResult{}, fmt.Errorf("rebuild projections: %w", err)
	}
	return res, nil
}
