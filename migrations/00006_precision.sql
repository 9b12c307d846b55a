-- +goose Up

-- Sub-second milestones, served requests and live watches (issue 10; docs/timeline.md):
-- - created_observed_at / scheduled_observed_at: the first observation of a snapshot of the pod
--   and of PodScheduled=True, so a second-precision time seen live is placed at its observation;
-- - pre_ready_requests / pre_ready_errors: requests sent while the pod was not Ready;
-- - scope_watches: heartbeats of collectors' watches, which extend observed_until of pods that
--   are still there (align.Facts.ApplyWatches).
ALTER TABLE pods
    ADD COLUMN created_observed_at   timestamptz,
    ADD COLUMN scheduled_observed_at timestamptz,
    ADD COLUMN pre_ready_requests    bigint NOT NULL DEFAULT 0,
    ADD COLUMN pre_ready_errors      bigint NOT NULL DEFAULT 0;

CREATE TABLE scope_watches (
    cluster    text        NOT NULL,
    scope_key  text        NOT NULL,
    since      timestamptz NOT NULL,
    live_until timestamptz NOT NULL,
    PRIMARY KEY (cluster, scope_key, since)
);

-- The latest node snapshot of each node, for the conditions an arm was measured under.
CREATE INDEX events_node_status ON events (node, occurred_at) WHERE kind = 'node_status';

-- t (second precision) seen live at o: o when it falls inside t's second, else t. Mirrors
-- align.seenLive.
CREATE FUNCTION seen_live(t timestamptz, o timestamptz) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN o >= t AND o < t + interval '1 second' THEN o ELSE t END $$;

DROP VIEW pod_timeline;
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

-- +goose Down
DROP VIEW pod_timeline;
-- The view of 00002.
CREATE VIEW pod_timeline AS
SELECT p.uid, p.cluster, p.namespace, p.name, p.exp_name, p.exp_arm, p.exp_run,
       p.first_seen, p.last_seen,
       COALESCE(p.scheduled_event_node, p.status_node) AS node,
       p.created_at AS created,
       p.first_unschedulable_at AS first_unschedulable,
       s.scheduled, r.running, rd.ready,
       p.first_success_at AS first_success,
       COALESCE(p.ended_at, p.unobserved_end_at) AS ended,
       CASE WHEN p.ended_at IS NOT NULL
            THEN (ARRAY['deleted_unobserved','deleted','succeeded','failed','evicted','preempted'])[p.end_rank]
            WHEN p.unobserved_end_at IS NOT NULL THEN 'deleted_unobserved'
       END AS ended_reason,
       p.preempted_by,
       COALESCE(p.ended_at, p.last_seen) AS observed_until,
       (SELECT COALESCE(sum(se.max_count), 0) FROM pod_event_series se
         WHERE se.pod_uid = p.uid AND se.reason = 'FailedScheduling')::int AS failed_scheduling,
       p.restarts, p.requests, p.request_errors
FROM pods p
CROSS JOIN LATERAL (SELECT COALESCE(p.scheduled_event_at, clamp_up(p.scheduled_cond_at, GREATEST(p.created_at, p.first_unschedulable_at))) AS scheduled) s
CROSS JOIN LATERAL (SELECT CASE WHEN p.running_started_at IS NULL THEN p.running_observed_at
                           ELSE LEAST(clamp_up(p.running_started_at, GREATEST(p.created_at, s.scheduled)), p.running_observed_at)
                           END AS running) r
CROSS JOIN LATERAL (SELECT CASE WHEN p.ready_cond_at IS NULL THEN p.ready_observed_at
                           ELSE LEAST(clamp_up(p.ready_cond_at, GREATEST(p.created_at, s.scheduled, r.running)), p.ready_observed_at)
                           END AS ready) rd;
DROP FUNCTION seen_live;
DROP INDEX events_node_status;
DROP TABLE scope_watches;
ALTER TABLE pods DROP COLUMN created_observed_at, DROP COLUMN scheduled_observed_at,
    DROP COLUMN pre_ready_requests, DROP COLUMN pre_ready_errors;
