-- +goose Up

-- Counts in 64 bits (issue 14). The codec keeps every count in an envelope within 32 bits
-- (events.MaxCount), but sums of them do not fit: two FailedScheduling series of 2^31-1 each
-- made the pod_timeline view's sum()::int overflow ("integer out of range"), and every read of
-- that pod — its timeline, the pod list, a comparison — failed with a 500; restarts summed
-- over a pod's containers could overflow pods.restarts in the same way.
DROP VIEW pod_timeline;
ALTER TABLE pod_event_series ALTER COLUMN max_count TYPE bigint;
ALTER TABLE pods ALTER COLUMN restarts TYPE bigint;
CREATE VIEW pod_timeline AS
SELECT p.uid, p.cluster, p.namespace, p.name, p.exp_name, p.exp_arm, p.exp_run,
       p.first_seen, p.last_seen,
       COALESCE(p.scheduled_event_node, p.status_node) AS node,
       c.created,
       p.first_unschedulable_at AS first_unschedulable,
       s.scheduled, r.running, rd.ready,
       p.first_success_at AS first_success,
       COALESCE(p.ended_at, p.unobserved_end_at) AS ended,
       CASE WHEN p.ended_at IS NOT NULL
            THEN (ARRAY['deleted_unobserved','deleted','succeeded','failed','evicted','preempted'])[p.end_rank]
            WHEN p.unobserved_end_at IS NOT NULL THEN 'deleted_unobserved'
       END AS ended_reason,
       p.preempted_by,
       CASE WHEN p.ended_at IS NOT NULL THEN p.ended_at
            ELSE GREATEST(p.last_seen, p.alive_at,
                          CASE WHEN p.unobserved_end_at IS NULL OR w.live_until < p.unobserved_end_at THEN w.live_until END)
       END AS observed_until,
       (SELECT COALESCE(sum(se.max_count), 0) FROM pod_event_series se
         WHERE se.pod_uid = p.uid AND se.reason = 'FailedScheduling')::bigint AS failed_scheduling,
       p.restarts, p.requests, p.request_errors, p.pre_ready_requests, p.pre_ready_errors
FROM pods p
CROSS JOIN LATERAL (SELECT CASE WHEN p.ended_at IS NULL AND p.scope_key IS NOT NULL THEN
                               (SELECT max(sw.live_until) FROM scope_watches sw
                                WHERE sw.cluster = p.cluster AND sw.scope_key = p.scope_key AND sw.since <= p.alive_at)
                           END AS live_until) w
CROSS JOIN LATERAL (SELECT seen_live(p.created_at, LEAST(p.created_observed_at, p.scheduled_event_at, p.first_unschedulable_at)) AS created) c
CROSS JOIN LATERAL (SELECT COALESCE(p.scheduled_event_at,
                                    clamp_up(seen_live(p.scheduled_cond_at, p.scheduled_observed_at), GREATEST(c.created, p.first_unschedulable_at))) AS scheduled) s
CROSS JOIN LATERAL (SELECT CASE WHEN p.running_started_at IS NULL THEN p.running_observed_at
                           ELSE LEAST(clamp_up(seen_live(p.running_started_at, p.running_observed_at), GREATEST(c.created, s.scheduled)), p.running_observed_at)
                           END AS running) r
CROSS JOIN LATERAL (SELECT CASE WHEN p.ready_cond_at IS NULL THEN p.ready_observed_at
                           ELSE LEAST(clamp_up(seen_live(p.ready_cond_at, p.ready_observed_at), GREATEST(c.created, s.scheduled, r.running)), p.ready_observed_at)
                           END AS ready) rd;

-- +goose Down
-- Values beyond 32 bits make this fail: they cannot be kept in the old columns.
DROP VIEW pod_timeline;
ALTER TABLE pod_event_series ALTER COLUMN max_count TYPE int;
ALTER TABLE pods ALTER COLUMN restarts TYPE int;
-- The view of 00006.
CREATE VIEW pod_timeline AS
SELECT p.uid, p.cluster, p.namespace, p.name, p.exp_name, p.exp_arm, p.exp_run,
       p.first_seen, p.last_seen,
       COALESCE(p.scheduled_event_node, p.status_node) AS node,
       c.created,
       p.first_unschedulable_at AS first_unschedulable,
       s.scheduled, r.running, rd.ready,
       p.first_success_at AS first_success,
       COALESCE(p.ended_at, p.unobserved_end_at) AS ended,
       CASE WHEN p.ended_at IS NOT NULL
            THEN (ARRAY['deleted_unobserved','deleted','succeeded','failed','evicted','preempted'])[p.end_rank]
            WHEN p.unobserved_end_at IS NOT NULL THEN 'deleted_unobserved'
       END AS ended_reason,
       p.preempted_by,
       CASE WHEN p.ended_at IS NOT NULL THEN p.ended_at
            ELSE GREATEST(p.last_seen, p.alive_at,
                          CASE WHEN p.unobserved_end_at IS NULL OR w.live_until < p.unobserved_end_at THEN w.live_until END)
       END AS observed_until,
       (SELECT COALESCE(sum(se.max_count), 0) FROM pod_event_series se
         WHERE se.pod_uid = p.uid AND se.reason = 'FailedScheduling')::int AS failed_scheduling,
       p.restarts, p.requests, p.request_errors, p.pre_ready_requests, p.pre_ready_errors
FROM pods p
CROSS JOIN LATERAL (SELECT CASE WHEN p.ended_at IS NULL AND p.scope_key IS NOT NULL THEN
                               (SELECT max(sw.live_until) FROM scope_watches sw
                                WHERE sw.cluster = p.cluster AND sw.scope_key = p.scope_key AND sw.since <= p.alive_at)
                           END AS live_until) w
CROSS JOIN LATERAL (SELECT seen_live(p.created_at, LEAST(p.created_observed_at, p.scheduled_event_at, p.first_unschedulable_at)) AS created) c
CROSS JOIN LATERAL (SELECT COALESCE(p.scheduled_event_at,
                                    clamp_up(seen_live(p.scheduled_cond_at, p.scheduled_observed_at), GREATEST(c.created, p.first_unschedulable_at))) AS scheduled) s
CROSS JOIN LATERAL (SELECT CASE WHEN p.running_started_at IS NULL THEN p.running_observed_at
                           ELSE LEAST(clamp_up(seen_live(p.running_started_at, p.running_observed_at), GREATEST(c.created, s.scheduled)), p.running_observed_at)
                           END AS running) r
CROSS JOIN LATERAL (SELECT CASE WHEN p.ready_cond_at IS NULL THEN p.ready_observed_at
                           ELSE LEAST(clamp_up(seen_live(p.ready_cond_at, p.ready_observed_at), GREATEST(c.created, s.scheduled, r.running)), p.ready_observed_at)
                           END AS ready) rd;
