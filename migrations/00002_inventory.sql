-- +goose Up

-- Which collector scope saw each pod, when it was last known alive, and when an inventory proved
-- it gone unobserved (align.Facts.ApplyInventories; recomputed, never merged).
ALTER TABLE pods
    ADD COLUMN scope_key         text,
    ADD COLUMN alive_at          timestamptz,
    ADD COLUMN unobserved_end_at timestamptz;
CREATE INDEX pods_scope ON pods (cluster, scope_key) WHERE scope_key IS NOT NULL;

-- Full lists of the pods in a collector scope, kept to end pods deleted while nobody watched.
CREATE TABLE inventories (
    id        text        PRIMARY KEY,
    cluster   text        NOT NULL,
    scope_key text        NOT NULL,
    listed_at timestamptz NOT NULL,
    pod_uids  text[]      NOT NULL
);
CREATE INDEX inventories_scope ON inventories (cluster, scope_key, listed_at);
CREATE INDEX inventories_uids ON inventories USING gin (pod_uids);

CREATE OR REPLACE VIEW pod_timeline AS
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

-- +goose Down
DROP TABLE inventories;
DROP INDEX pods_scope;
-- Restore the view of 00001 before dropping the columns it no longer needs.
CREATE OR REPLACE VIEW pod_timeline AS
SELECT p.uid, p.cluster, p.namespace, p.name, p.exp_name, p.exp_arm, p.exp_run,
       p.first_seen, p.last_seen,
       COALESCE(p.scheduled_event_node, p.status_node) AS node,
       p.created_at AS created,
       p.first_unschedulable_at AS first_unschedulable,
       s.scheduled, r.running, rd.ready,
       p.first_success_at AS first_success,
       p.ended_at AS ended,
       CASE WHEN p.ended_at IS NOT NULL
            THEN (ARRAY['deleted_unobserved','deleted','succeeded','failed','evicted','preempted'])[p.end_rank]
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
ALTER TABLE pods DROP COLUMN scope_key, DROP COLUMN alive_at, DROP COLUMN unobserved_end_at;
