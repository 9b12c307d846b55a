-- +goose Up

-- Workloads (issue 22): every pod knows the workload that controls it and the revision it
-- belongs to (events.WorkloadOf, from its owner and labels), and every observed state of a
-- Deployment, ReplicaSet or StatefulSet is kept, so that "desired" at any moment is the
-- workload's own and rollouts, drains and node failures can be found from what happened.
-- Pods stored before this migration get their workload from their snapshots when the store
-- migrates (store.backfillWorkloads, in Go: the rule is events.WorkloadOf's), a bounded pass
-- over pods, not a rewrite of events.
ALTER TABLE pods ADD COLUMN workload_kind text, ADD COLUMN workload_name text, ADD COLUMN revision text;
CREATE INDEX pods_workload ON pods (namespace, workload_kind, workload_name, first_seen);
CREATE INDEX pods_window ON pods (last_seen, first_seen);

-- One row per workload_status envelope (its id): order-free, as a projection must be.
CREATE TABLE workload_states (
    id            text        PRIMARY KEY,
    cluster       text        NOT NULL,
    kind          text        NOT NULL,
    namespace     text        NOT NULL,
    name          text        NOT NULL,
    occurred_at   timestamptz NOT NULL,
    status        jsonb       NOT NULL
);
CREATE INDEX workload_states_workload ON workload_states (namespace, kind, name, occurred_at);
CREATE INDEX workload_states_time ON workload_states (occurred_at);

-- Cordons and readiness of nodes are read by time window, cluster-wide; a window's pods' snapshots
-- and FailedScheduling events without their requests (the bulk of a busy pod's events).
CREATE INDEX events_node_status_time ON events (occurred_at) WHERE kind = 'node_status';
CREATE INDEX events_pod_status ON events (pod_uid, occurred_at) WHERE kind = 'pod_status';
CREATE INDEX events_pod_k8s_event ON events (pod_uid, occurred_at) WHERE kind = 'k8s_event';

-- +goose Down
DROP INDEX events_pod_k8s_event;
DROP INDEX events_pod_status;
DROP INDEX events_node_status_time;
DROP TABLE workload_states;
DROP VIEW IF EXISTS pod_timeline;
DROP INDEX pods_window;
DROP INDEX pods_workload;
ALTER TABLE pods DROP COLUMN workload_kind, DROP COLUMN workload_name, DROP COLUMN revision;
