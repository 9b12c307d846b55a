package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Retention says how long each class is kept; zero keeps it for ever (Samples: as long as
// Events). Experiment runs (the events of pods with an experiment, the definitions, the
// snapshots of the nodes they ran on) are kept until their experiment is deleted
// (DeleteExperiment), whatever the settings.
type Retention struct {
	Events      time.Duration // raw events but request results and GPU samples; the inventories
	Samples     time.Duration // raw request results and GPU samples; past it they are summarised
	Summaries   time.Duration // request buckets
	GPUSamples  time.Duration // GPU samples in typed columns
	DeadLetters time.Duration
	// Ahead is how many days of partitions to create beyond the current one (zero: 2), so
	// that the first batch of a day does not wait for its partition.
	Ahead int
}

// horizons are r's horizons as of now: the start of the partition period holding now − the
// class's retention.
func (r Retention) horizons(now time.Time) horizons {
	h := horizons{}
	set := func(class string, d, width time.Duration) {
		if d > 0 {
			h[class] = now.Add(-d).UTC().Truncate(width)
		}
	}
	samples := r.Samples
	if samples == 0 {
		samples = r.Events
	}
	set(ClassEvents, r.Events, rawEvents.width)
	set(ClassSamples, samples, rawSamples.width)
	set(ClassSummaries, r.Summaries, requestBuckets.width)
	set(ClassGPUSamples, r.GPUSamples, gpuSamples.width)
	return h
}

// MaintainResult says what one maintenance did.
type MaintainResult struct {
	Skipped     bool      // another process held the maintenance lock: it maintains
	Created     []string  // partitions created ahead
	Dropped     []string  // partitions dropped, oldest first
	Kept        int64     // events of experiment runs moved out of the dropped days
	Pods        int64     // pods whose projections were dropped (ended before the horizon)
	Pinned      int64     // kept pods whose inventory proof was pinned on the pod
	Buckets     int64     // request buckets made of the raw results of dropped hours
	GPUSamples  int64     // typed GPU samples made of the raw samples of dropped hours
	DeadLetters int64     // dead letters deleted
	Horizon     time.Time // the raw events' horizon (zero: none)
}

// maintainLock is held (session-scoped, try-only) by the one process maintaining at a time.
const maintainLock = `hashtext('schedlens maintenance')`

// Maintain creates the coming days' partitions and drops what retention no longer keeps, as of
// now. Of N processes maintaining one store at once, one does it; the others return Skipped.
// A partition past its horizon is detached concurrently (its table's readers and writers do not
// wait), then in one transaction what retention keeps of it is copied to the kept class, a
// raw-samples hour is summarised, and the table is dropped — never a DELETE over its rows.
func (db *DB) Maintain(ctx context.Context, r Retention, now time.Time) (MaintainResult, error) {
	var res MaintainResult
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("maintain: %w", err)
	}
	defer conn.Release()
	var leader bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+maintainLock+`)`).Scan(&leader); err != nil {
		return res, fmt.Errorf("maintenance lock: %w", err)
	}
	if !leader {
		res.Skipped = true
		return res, nil
	}
	defer func() {
		// A released connection may be reused: let the lock go with the work, not the session.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+maintainLock+`)`); err != nil {
			conn.Conn().Close(context.Background())
		}
	}()
	if r.Ahead <= 0 {
		r.Ahead = 2
	}
	n := need{}
	for _, p := range partitionedAll {
		until := now.Add(time.Duration(r.Ahead) * 24 * time.Hour)
		if p.width < 24*time.Hour {
			until = now.Add(3 * p.width)
		}
		for t := p.period(now); !t.After(until); t = t.Add(p.width) {
			n.add(p, t)
		}
	}
	_, created, err := db.createPartitions(ctx, n)
	if err != nil {
		return res, err
	}
	res.Created = created
	h := r.horizons(now)
	res.Horizon = h[ClassEvents]
	if len(h) > 0 {
		if err := db.dropBefore(ctx, conn.Conn(), h, &res); err != nil {
			return res, err
		}
	}
	if r.DeadLetters > 0 {
		tag, err := db.pool.Exec(ctx, `DELETE FROM dead_letters WHERE received_at < $1`, now.Add(-r.DeadLetters))
		if err != nil {
			return res, fmt.Errorf("drop dead letters: %w", err)
		}
		res.DeadLetters = tag.RowsAffected()
	}
	// Stored run slices and comparisons (stored.go) of runs and experiments whose pods retention
	// dropped.
	if _, err := db.pool.Exec(ctx, `
		DELETE FROM run_slices s WHERE NOT EXISTS (SELECT 1 FROM pods p WHERE p.exp_name = s.experiment AND COALESCE(p.exp_run, '') = s.run);
		DELETE FROM stored_comparisons s WHERE NOT EXISTS (SELECT 1 FROM pods p WHERE p.exp_name = s.experiment)`); err != nil {
		return res, fmt.Errorf("drop stored comparisons: %w", err)
	}
	_, err = db.pool.Exec(ctx, `INSERT INTO retention (class, maintained_at) SELECT unnest($1::text[]), $2
		ON CONFLICT (class) DO UPDATE SET maintained_at = excluded.maintained_at`,
		[]string{ClassEvents, ClassSamples, ClassSummaries, ClassGPUSamples, ClassDeadLetters}, now)
	if err != nil {
		return res, fmt.Errorf("record maintenance: %w", err)
	}
	return res, nil
}

// keptEvents selects, among the raw events of a detached day, those retention keeps: the events
// of experiment runs (of experimentPods, the definitions, whatever names an experiment, the
// snapshots of the nodes experiment pods ran on until their last event: the conditions of their
// arms), and the
// snapshots and Kubernetes events of every pod still kept (not ended before the horizon),
// which its timeline and the workload reads are derived from — its requests and GPU samples go
// with their hours. Such a pod's kept events go when it ends before a later horizon
// (dropEnded).
const keptEvents = `pod_uid IN (` + experimentPods + `)
       OR (kind IN ('pod_status', 'k8s_event') AND pod_uid IN (SELECT uid FROM pods))
       OR kind = 'experiment' OR envelope ? 'experiment'
       OR (kind = 'node_status' AND EXISTS (SELECT 1 FROM pods p WHERE p.exp_name IS NOT NULL
                                            AND COALESCE(p.scheduled_event_node, p.status_node) = node AND occurred_at <= p.last_seen))`

// keptSamples selects, among the request results and GPU samples of a detached hour, those of
// experiment runs: the comparison reads them raw.
const keptSamples = `pod_uid IN (` + experimentPods + `)`

// keep copies the rows of the detached table that rule selects into the kept class.
func keep(table, rule string) string {
	return `INSERT INTO events (id, kind, cluster, source, occurred_at, observed_at, pod_uid, node, envelope, ingested_at, class)
		SELECT id, kind, cluster, source, occurred_at, observed_at, pod_uid, node, envelope, ingested_at, 'kept' FROM ` + table + `
		WHERE ` + rule + ` ON CONFLICT DO NOTHING`
}

// detach detaches the partition name from its parent without making the parent's readers and
// writers wait (DETACH … CONCURRENTLY: it waits for them instead), finishing a detach an
// interrupted maintenance left pending; a table already detached is left as it is. It holds
// the partitions' lock meanwhile, at the session level (DETACH CONCURRENTLY cannot run in a
// transaction), so that no partition is attached to the parent at the same time.
func detach(ctx context.Context, conn *pgx.Conn, p partitioned, name string) error {
	var pending *bool
	err := conn.QueryRow(ctx, `SELECT (SELECT i.inhdetachpending FROM pg_inherits i WHERE i.inhrelid = c.oid)
		FROM pg_class c WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`, name).Scan(&pending)
	if err != nil {
		return err
	}
	if pending == nil {
		return nil // no longer a partition: an earlier maintenance detached it
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('schedlens partitions'))`); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext('schedlens partitions'))`) //nolint:errcheck // released with the session otherwise
	how := "CONCURRENTLY"
	if *pending {
		how = "FINALIZE"
	}
	_, err = conn.Exec(ctx, `ALTER TABLE `+pgx.Identifier{p.parent}.Sanitize()+` DETACH PARTITION `+pgx.Identifier{name}.Sanitize()+` `+how)
	return err
}

// experimentPods is the pods of experiment runs: those attributed to an experiment and those an
// experiment pod preempted (the victims a run's details list).
const experimentPods = `SELECT uid FROM pods WHERE exp_name IS NOT NULL
    OR preempted_by IN (SELECT uid FROM pods WHERE exp_name IS NOT NULL)`

// endedPods is the pods no experiment keeps whose timeline ends before $1: ended, or last
// observed, then (pod_timeline's observed_until).
const endedPods = `SELECT uid FROM pod_timeline WHERE observed_until < $1 AND uid NOT IN (` + experimentPods + `)`

// pinProofs writes on each pod its timeline reads from an inventory older than $1 what that
// inventory proved — the latest listing of the pod, and the first inventory of its scope after
// it that left the pod out — so that dropping the inventories changes no kept timeline.
const pinProofs = `
WITH proof AS (
    SELECT p.uid, a.alive_at,
           (SELECT min(i.listed_at) FROM inventories i
            WHERE i.cluster = p.cluster AND i.scope_key = p.scope_key AND i.listed_at > a.alive_at) AS unobserved_end
    FROM pods p
    CROSS JOIN LATERAL (SELECT GREATEST(p.alive_at, (SELECT max(ip.listed_at) FROM inventory_pods ip
                                                     WHERE ip.uid = lower(p.uid) AND ip.cluster = p.cluster AND ip.scope_key = p.scope_key)) AS alive_at) a
    WHERE p.ended_at IS NULL AND p.scope_key IS NOT NULL AND p.unobserved_end_at IS NULL
)
UPDATE pods p SET alive_at = proof.alive_at, unobserved_end_at = proof.unobserved_end
FROM proof
WHERE p.uid = proof.uid AND proof.alive_at < $1`

// dropBefore drops every partition wholly before its class's horizon, and, past the raw events'
// horizon, the projections of the pods that ended before it and the heartbeats and workload
// states no kept timeline reads.
func (db *DB) dropBefore(ctx context.Context, conn *pgx.Conn, h horizons, res *MaintainResult) error {
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, partitionLock); err != nil {
			return err
		}
		for class, at := range h {
			_, err := tx.Exec(ctx, `INSERT INTO retention (class, horizon) VALUES ($1, $2)
				ON CONFLICT (class) DO UPDATE SET horizon = GREATEST(retention.horizon, excluded.horizon)`, class, at)
			if err != nil {
				return fmt.Errorf("set the horizon: %w", err)
			}
		}
		horizon, ok := h[ClassEvents]
		if !ok {
			return nil
		}
		return dropEnded(ctx, tx, horizon, res)
	})
	if err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	rows, err := db.pool.Query(ctx, `SELECT parent, name, lower, upper FROM partitions ORDER BY upper, name`)
	if err != nil {
		return fmt.Errorf("list partitions: %w", err)
	}
	type expiredPart struct {
		table        partitioned
		name         string
		lower, upper time.Time
	}
	var parts []expiredPart
	var parent, name string
	var lower, upper pgtype.Timestamptz
	_, err = pgx.ForEachRow(rows, []any{&parent, &name, &lower, &upper}, func() error {
		p, known := partitionedNamed(parent)
		if at, ok := h[p.class]; known && ok && !spanTime(upper).After(at) {
			parts = append(parts, expiredPart{p, name, spanTime(lower), spanTime(upper)})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list partitions: %w", err)
	}
	for _, p := range parts {
		if err := detach(ctx, conn, p.table, p.name); err != nil {
			return fmt.Errorf("detach %s: %w", p.name, err)
		}
		err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			name := pgx.Identifier{p.name}.Sanitize()
			switch p.table {
			case rawEvents:
				tag, err := tx.Exec(ctx, keep(name, keptEvents))
				if err != nil {
					return fmt.Errorf("keep experiment events: %w", err)
				}
				res.Kept += tag.RowsAffected()
			case rawSamples:
				tag, err := tx.Exec(ctx, keep(name, keptSamples))
				if err != nil {
					return fmt.Errorf("keep experiment samples: %w", err)
				}
				res.Kept += tag.RowsAffected()
				if err := summarise(ctx, tx, name, h, res); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `DROP TABLE `+name); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `DELETE FROM partitions WHERE name = $1`, p.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("drop %s: %w", p.name, err)
		}
		res.Dropped = append(res.Dropped, p.name)
	}
	db.parts.reset()
	return nil
}

// dropEnded drops the projections of the pods that ended before horizon and what only they
// read, after pinning on the kept pods what the inventories about to go proved.
func dropEnded(ctx context.Context, tx pgx.Tx, horizon time.Time, res *MaintainResult) error {
	tag, err := tx.Exec(ctx, pinProofs, horizon)
	if err != nil {
		return fmt.Errorf("pin inventory proofs: %w", err)
	}
	res.Pinned = tag.RowsAffected()
	rows, err := tx.Query(ctx, endedPods, horizon)
	if err != nil {
		return fmt.Errorf("find ended pods: %w", err)
	}
	uids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("find ended pods: %w", err)
	}
	if err := deletePods(ctx, tx, uids, "kept"); err != nil {
		return fmt.Errorf("drop ended pods: %w", err)
	}
	res.Pods = int64(len(uids))
	if _, err := tx.Exec(ctx, `DELETE FROM unattributed_requests WHERE occurred_at < $1`, horizon); err != nil {
		return fmt.Errorf("drop unattributed requests: %w", err)
	}
	// A heartbeat is read by the pods alive when it began; one that ended before the horizon
	// extends no kept pod past it.
	if _, err := tx.Exec(ctx, `DELETE FROM scope_watches WHERE live_until < $1`, horizon); err != nil {
		return fmt.Errorf("drop heartbeats: %w", err)
	}
	// "Desired" at a moment is the latest state before it: keep each workload's latest state
	// before the horizon, drop the older ones.
	_, err = tx.Exec(ctx, `DELETE FROM workload_states w WHERE w.occurred_at < $1 AND EXISTS (
		SELECT 1 FROM workload_states l WHERE l.namespace = w.namespace AND l.kind = w.kind AND l.name = w.name
		  AND l.cluster = w.cluster AND l.occurred_at > w.occurred_at AND l.occurred_at < $1)`, horizon)
	if err != nil {
		return fmt.Errorf("drop workload states: %w", err)
	}
	return nil
}

// StorageState is what the store holds, for the maintenance metrics.
type StorageState struct {
	Bytes        map[string]int64 // on disk (tables, indexes, TOAST) by class: StorageClasses
	Oldest       time.Time        // the lower bound of the oldest day of raw events kept (zero: unbounded, an adopted table)
	Horizon      time.Time        // nothing older is stored (zero: retention has dropped nothing)
	MaintainedAt time.Time        // when maintenance last ran, by any process (zero: never)
}

// StorageClasses are the classes StorageState.Bytes reports: raw events, raw request results
// and GPU samples, the events retention keeps (experiment runs, kept pods' snapshots), the
// inventories, the request buckets, the typed GPU samples, the other projections and the dead
// letters.
var StorageClasses = []string{"events", "samples", "kept_events", "inventories", "summaries", "gpu_samples", "projections", "dead_letters"}

// partitionBytes is the size of every leaf partition of the named tables.
func partitionBytes(tables ...string) string {
	var parts []string
	for _, t := range tables {
		parts = append(parts, "SELECT relid FROM pg_partition_tree('"+t+"') WHERE isleaf")
	}
	return `(SELECT COALESCE(sum(pg_total_relation_size(relid)), 0)::bigint FROM (` + strings.Join(parts, " UNION ALL ") + `) t)`
}

var storageBytes = `
SELECT 'events', ` + partitionBytes("events_raw") + `
UNION ALL SELECT 'samples', ` + partitionBytes("events_samples") + `
UNION ALL SELECT 'kept_events', pg_total_relation_size('events_kept')
UNION ALL SELECT 'inventories', ` + partitionBytes("inventories", "inventory_pods") + `
UNION ALL SELECT 'summaries', ` + partitionBytes("request_buckets") + `
UNION ALL SELECT 'gpu_samples', ` + partitionBytes("gpu_samples") + `
UNION ALL SELECT 'projections', (SELECT sum(pg_total_relation_size(c))::bigint FROM unnest(ARRAY[
          'pods', 'pod_event_series', 'pod_latency', 'pod_gpu_util', 'pod_ips', 'unattributed_requests', 'scope_watches',
          'workload_states', 'experiments', 'inventory_parts', 'kind_counts', 'partitions', 'retention']::regclass[]) c)
UNION ALL SELECT 'dead_letters', pg_total_relation_size('dead_letters')`

// Storage reads the StorageState.
func (db *DB) Storage(ctx context.Context) (StorageState, error) {
	st := StorageState{Bytes: map[string]int64{}}
	rows, err := db.pool.Query(ctx, storageBytes)
	if err != nil {
		return st, fmt.Errorf("read storage: %w", err)
	}
	var class string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&class, &n}, func() error { st.Bytes[class] = n; return nil }); err != nil {
		return st, fmt.Errorf("read storage: %w", err)
	}
	var oldest, horizon, maintained pgtype.Timestamptz
	err = db.pool.QueryRow(ctx, `SELECT (SELECT min(lower) FROM partitions WHERE parent = $1),
		(SELECT horizon FROM retention WHERE class = $2), (SELECT max(maintained_at) FROM retention)`, rawEvents.parent, ClassEvents).
		Scan(&oldest, &horizon, &maintained)
	if err != nil {
		return st, fmt.Errorf("read storage: %w", err)
	}
	if oldest.Valid {
		st.Oldest = spanTime(oldest)
	}
	st.Horizon, st.MaintainedAt = horizon.Time, maintained.Time
	return st, nil
}

// deletePods deletes the pods uids with every projection of them and their events of class
// (every class when "").
func deletePods(ctx context.Context, tx pgx.Tx, uids []string, class string) error {
	for _, q := range []string{
		`DELETE FROM events WHERE pod_uid = ANY($1) AND ($2 = '' OR class = $2)`,
		`DELETE FROM pod_event_series WHERE pod_uid = ANY($1)`,
		`DELETE FROM pod_latency WHERE pod_uid = ANY($1)`,
		`DELETE FROM pod_gpu_util WHERE pod_uid = ANY($1)`,
		`DELETE FROM pod_ips WHERE uid = ANY($1)`,
		`DELETE FROM pods WHERE uid = ANY($1)`,
	} {
		args := []any{uids}
		if strings.Contains(q, "$2") {
			args = append(args, class)
		}
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// DeleteExperiment deletes an experiment: its definition, its pods (those attributed to it and
// the victims they preempted) with every projection of them, and their events, kept or raw, and
// the records of it imported from elsewhere. It reports ErrNotFound when the store knows no
// experiment by that name. A definition still in a
// ConfigMap comes back when the collector next lists it.
func (db *DB) DeleteExperiment(ctx context.Context, name string) error {
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT uid FROM pods WHERE exp_name = $1
			UNION SELECT v.uid FROM pods v JOIN pods p ON v.preempted_by = p.uid AND p.exp_name = $1 WHERE v.exp_name IS NULL`, name)
		if err != nil {
			return fmt.Errorf("find the experiment's pods: %w", err)
		}
		uids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("find the experiment's pods: %w", err)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM experiments WHERE name = $1`, name)
		if err != nil {
			return fmt.Errorf("delete the definition: %w", err)
		}
		imported, err := tx.Exec(ctx, `DELETE FROM imported_records WHERE experiment = $1`, name)
		if err != nil {
			return fmt.Errorf("delete the imported records: %w", err)
		}
		if tag.RowsAffected() == 0 && imported.RowsAffected() == 0 && len(uids) == 0 {
			return ErrNotFound
		}
		if _, err := tx.Exec(ctx, `DELETE FROM run_slices WHERE experiment = $1`, name); err != nil {
			return fmt.Errorf("delete the stored run slices: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM stored_comparisons WHERE experiment = $1`, name); err != nil {
			return fmt.Errorf("delete the stored comparisons: %w", err)
		}
		if err := deletePods(ctx, tx, uids, ""); err != nil {
			return fmt.Errorf("delete the experiment's pods: %w", err)
		}
		_, err = tx.Exec(ctx, `DELETE FROM events WHERE kind = 'experiment' AND envelope->'data'->>'name' = $1`, name)
		if err != nil {
			return fmt.Errorf("delete the definitions: %w", err)
		}
		return nil
	})
}
