package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/events"
)

// ipHoldSlack is how much earlier than its first sighting with an IP a pod may have served on
// it: the collector observes a Running snapshot shortly after the kubelet writes it.
const ipHoldSlack = 2 * time.Second

const mergePodIPs = `
INSERT INTO pod_ips (cluster, ip, uid, first_seen, last_seen)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[]) ORDER BY 1, 2, 3
ON CONFLICT (cluster, ip, uid) DO UPDATE SET first_seen = LEAST(pod_ips.first_seen, excluded.first_seen),
    last_seen = GREATEST(pod_ips.last_seen, excluded.last_seen)`

const addUnattributed = `
INSERT INTO unattributed_requests (event_id, cluster, ip, occurred_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) ORDER BY 1
ON CONFLICT (event_id) DO NOTHING`

// resultsWaiting says whether any result waits on one of the given (cluster, ip) pairs.
const resultsWaiting = `
SELECT EXISTS (SELECT 1 FROM unattributed_requests WHERE (cluster, ip) IN (SELECT * FROM unnest($1::text[], $2::text[])))`

// resolveIPs attributes every waiting result of the given (cluster, ip) pairs that a known pod
// can now claim: the pod that most recently took the IP before the request was sent (allowing
// ipHoldSlack), and records the attribution on the stored event.
const resolveIPs = `
WITH claimed AS (
    DELETE FROM unattributed_requests u
    USING (
        SELECT w.event_id, h.uid FROM unattributed_requests w
        CROSS JOIN LATERAL (
            SELECT p.uid FROM pod_ips p
            WHERE p.cluster = w.cluster AND p.ip = w.ip AND p.first_seen <= w.occurred_at + $3::interval
            ORDER BY p.first_seen DESC, p.uid LIMIT 1) h
        WHERE (w.cluster, w.ip) IN (SELECT * FROM unnest($1::text[], $2::text[]))
        ORDER BY w.event_id FOR UPDATE OF w
    ) r
    WHERE u.event_id = r.event_id
    RETURNING u.event_id, r.uid
)
UPDATE events e SET pod_uid = c.uid FROM claimed c
WHERE e.id = c.event_id
RETURNING e.envelope::text, c.uid,
    (SELECT namespace FROM pods WHERE uid = c.uid), (SELECT name FROM pods WHERE uid = c.uid)`

// attributeByIP records pod IPs seen in snapshots and results that name only an IP, then
// attributes whatever waiting results the new knowledge settles, and projects them as if they
// had named their pod. A result arriving before any snapshot of its pod's IP waits; one
// attributed before a later holder of the same IP became known keeps its attribution.
func (db *DB) attributeByIP(ctx context.Context, tx pgx.Tx, envs []*events.Envelope) error {
	type ipKey struct{ cluster, ip, uid string }
	seen := map[ipKey][2]time.Time{}
	var wID, wCluster, wIP []string
	var wAt []time.Time
	affected := map[[2]string]bool{}
	for _, env := range envs {
		switch p := env.Payload.(type) {
		case *events.PodStatus:
			if p.PodIP == "" || env.Pod == nil {
				continue
			}
			k := ipKey{env.Cluster, p.PodIP, env.Pod.UID}
			span, ok := seen[k]
			if !ok || env.OccurredAt.Before(span[0]) {
				span[0] = env.OccurredAt
			}
			if env.OccurredAt.After(span[1]) {
				span[1] = env.OccurredAt
			}
			seen[k] = span
			affected[[2]string{env.Cluster, p.PodIP}] = true
		case *events.Request:
			if env.Pod != nil || p.PodIP == "" {
				continue
			}
			wID, wCluster, wIP, wAt = append(wID, env.ID), append(wCluster, env.Cluster), append(wIP, p.PodIP), append(wAt, env.OccurredAt)
			affected[[2]string{env.Cluster, p.PodIP}] = true
		}
	}
	if len(affected) == 0 {
		return nil
	}
	var sCluster, sIP, sUID []string
	var sFirst, sLast []time.Time
	for _, k := range slices.SortedFunc(maps.Keys(seen), func(a, b ipKey) int {
		return strings.Compare(a.cluster+"\x00"+a.ip+"\x00"+a.uid, b.cluster+"\x00"+b.ip+"\x00"+b.uid)
	}) {
		sCluster, sIP, sUID = append(sCluster, k.cluster), append(sIP, k.ip), append(sUID, k.uid)
		sFirst, sLast = append(sFirst, seen[k][0]), append(sLast, seen[k][1])
	}
	var aCluster, aIP []string
	for _, k := range slices.SortedFunc(maps.Keys(affected), func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) }) {
		aCluster, aIP = append(aCluster, k[0]), append(aIP, k[1])
	}
	b := &pgx.Batch{}
	if len(sIP) > 0 {
		b.Queue(mergePodIPs, sCluster, sIP, sUID, sFirst, sLast)
	}
	if len(wID) > 0 {
		b.Queue(addUnattributed, wID, wCluster, wIP, wAt)
	}
	// resolveIPs updates events, and a statement on the partitioned table costs every
	// partition (planning it, opening and locking each with its indexes) whether or not a row
	// changes: beside a week of hourly partitions a median 1.3 ms and up to 30 ms a batch,
	// against 0.25 ms in a fresh database (BenchmarkAppendBesideAWeek). So it runs only when a
	// result waits on one of these IPs, which a cluster whose requests name their pods never has.
	var waiting bool
	b.Queue(resultsWaiting, aCluster, aIP).QueryRow(func(row pgx.Row) error { return row.Scan(&waiting) })
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("record pod IPs: %w", err)
	}
	if !waiting {
		return nil
	}
	rows, err := tx.Query(ctx, resolveIPs, aCluster, aIP, ipHoldSlack.String())
	if err != nil {
		return fmt.Errorf("attribute results by pod IP: %w", err)
	}
	var resolved []*events.Envelope
	var raw, uid string
	var ns, name *string
	_, err = pgx.ForEachRow(rows, []any{&raw, &uid, &ns, &name}, func() error {
		env, err := events.Decode([]byte(raw))
		if err != nil {
			return err
		}
		env.Pod = &events.PodRef{Namespace: deref(ns), Name: deref(name), UID: uid}
		resolved = append(resolved, env)
		return nil
	})
	if err != nil {
		return fmt.Errorf("attribute results by pod IP: %w", err)
	}
	return db.project(ctx, tx, resolved, false)
}
