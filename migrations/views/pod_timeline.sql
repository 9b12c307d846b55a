-- The derived timeline of every pod: align.Build is the reference, and tests keep the two in
-- step (the store's TestProjectionAgreesWithAlign, the e2e tests). This is the view's one
-- definition: it is not versioned; the store re-creates it after the migrations at every
-- `correlator migrate` (store.DB.Migrate), so a migration that changes a column it reads drops
-- it first (DROP VIEW IF EXISTS pod_timeline) and never repeats it. The end causes come from
-- end_reasons (written from align.EndReasons); rank 1 is deleted_unobserved, the end an
-- inventory proves. What inventories prove (align.Facts.ApplyInventories) is read here, not
-- stored with the pod (unless retention dropped the inventories that proved it: then
-- store.Maintain pinned it first, in pods.alive_at and pods.unobserved_end_at), so an
-- inventory never updates the pods of its scope: a pod not ended by
-- an observed event was alive at the latest of its snapshots and of the inventories listing it
-- (one lookup in inventory_pods), and gone at the first inventory of its scope listed after
-- that (one lookup in inventories; such an inventory cannot list it). OFFSET 0 evaluates each
-- lookup once per pod.
DROP VIEW IF EXISTS pod_timeline;
CREATE VIEW pod_timeline AS
SELECT p.uid, p.cluster, p.namespace, p.name, p.exp_name, p.exp_arm, p.exp_run,
       p.first_seen, p.last_seen,
       COALESCE(p.scheduled_event_node, p.status_node) AS node,
       c.created, g.gated,
       p.first_unschedulable_at AS first_unschedulable,
       CASE WHEN ca.at < c.created THEN c.created ELSE ca.at END AS claim_allocated,
       s.scheduled, r.running, rd.ready,
       p.first_success_at AS first_success,
       COALESCE(p.ended_at, u.unobserved_end) AS ended,
       CASE WHEN p.ended_at IS NOT NULL THEN (SELECT er.reason FROM end_reasons er WHERE er.rank = p.end_rank)
            WHEN u.unobserved_end IS NOT NULL THEN (SELECT er.reason FROM end_reasons er WHERE er.rank = 1)
       END AS ended_reason,
       p.preempted_by,
       CASE WHEN p.ended_at IS NOT NULL THEN p.ended_at
            ELSE GREATEST(p.last_seen, a.alive_at,
                          CASE WHEN u.unobserved_end IS NULL OR w.live_until < u.unobserved_end THEN w.live_until END)
       END AS observed_until,
       (SELECT COALESCE(sum(se.max_count), 0) FROM pod_event_series se
         WHERE se.pod_uid = p.uid AND se.reason = 'FailedScheduling')::bigint AS failed_scheduling,
       (SELECT COALESCE(sum(se.max_count), 0) FROM pod_event_series se
         WHERE se.pod_uid = p.uid AND se.reason = 'FailedPrepareDynamicResources')::bigint AS failed_prepare,
       p.restarts, p.requests, p.request_errors, p.pre_ready_requests, p.pre_ready_errors,
       p.workload_kind, p.workload_name, p.revision,
       (p.gated_seen_at IS NOT NULL AND g.gated IS NULL) AS gate_held
FROM pods p
CROSS JOIN LATERAL (SELECT CASE WHEN p.ended_at IS NULL AND p.scope_key IS NOT NULL THEN
                               GREATEST(p.alive_at, (SELECT max(ip.listed_at) FROM inventory_pods ip
                                                     WHERE ip.uid = lower(p.uid) AND ip.cluster = p.cluster AND ip.scope_key = p.scope_key))
                           ELSE p.alive_at END AS alive_at OFFSET 0) a
CROSS JOIN LATERAL (SELECT CASE WHEN p.ended_at IS NULL AND p.scope_key IS NOT NULL THEN
                               COALESCE(p.unobserved_end_at,
                                        (SELECT min(i.listed_at) FROM inventories i
                                         WHERE i.cluster = p.cluster AND i.scope_key = p.scope_key AND i.listed_at > a.alive_at))
                           END AS unobserved_end OFFSET 0) u
CROSS JOIN LATERAL (SELECT CASE WHEN p.ended_at IS NULL AND p.scope_key IS NOT NULL THEN
                               (SELECT max(sw.live_until) FROM scope_watches sw
                                WHERE sw.cluster = p.cluster AND sw.scope_key = p.scope_key AND sw.since <= a.alive_at)
                           END AS live_until) w
CROSS JOIN LATERAL (SELECT created_at_seen(p.created_at, LEAST(p.created_observed_at, p.scheduled_event_at, p.first_unschedulable_at)) AS created) c
CROSS JOIN LATERAL (SELECT COALESCE(p.scheduled_event_at,
                                    clamp_up(seen_live(p.scheduled_cond_at, p.scheduled_observed_at), GREATEST(c.created, p.first_unschedulable_at))) AS scheduled) s
CROSS JOIN LATERAL (SELECT CASE WHEN p.gated_seen_at IS NOT NULL AND p.ungated_observed_at > p.gated_seen_at THEN
                               LEAST(GREATEST(p.ungated_observed_at, c.created), s.scheduled)
                           END AS gated) g
CROSS JOIN LATERAL (SELECT CASE WHEN p.claims_allocated_at IS NULL THEN p.claims_allocated_observed_at
                           ELSE LEAST(clamp_up(seen_live(p.claims_allocated_at, p.claims_allocated_observed_at), GREATEST(c.created, g.gated)),
                                      p.claims_allocated_observed_at)
                           END AS at) ca
CROSS JOIN LATERAL (SELECT CASE WHEN p.running_started_at IS NULL THEN p.running_observed_at
                           ELSE LEAST(clamp_up(seen_live(p.running_started_at, p.running_observed_at), GREATEST(c.created, s.scheduled)), p.running_observed_at)
                           END AS running) r
CROSS JOIN LATERAL (SELECT CASE WHEN p.ready_cond_at IS NULL THEN p.ready_observed_at
                           ELSE LEAST(clamp_up(seen_live(p.ready_cond_at, p.ready_observed_at), GREATEST(c.created, s.scheduled, r.running)), p.ready_observed_at)
                           END AS ready) rd;
