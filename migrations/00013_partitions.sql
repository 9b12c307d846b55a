-- +goose Up

-- Bounded storage (issue 24; docs/operations.md#retention). The tables that grow with every event
-- are partitioned by time, natively (declarative partitioning: no extension), so retention
-- drops whole partitions, never runs a long DELETE:
-- - events: by class, then by time. Class 'raw' (every event as it arrives but request results
--   and GPU samples) is partitioned by occurred_at, one partition per UTC day; class 'samples'
--   (request results and GPU samples, the bulk of a busy cluster's events) one per hour, so
--   their raw window can be short: past it they are summarised (request_buckets, gpu_samples);
--   class 'kept' holds what retention keeps of a dropped period (experiment runs until
--   DELETE /v1/experiments/{name}; kept pods' snapshots until they end). A unique key of a
--   partitioned table must hold its partition keys, so the primary key is
--   (id, occurred_at, class): the same thing as id alone, because an id names one event and so
--   one occurred_at (docs/contracts.md), and an event's class is a function of its kind, so a
--   copy of a stored event always meets it in the same partition, however late it comes (until
--   that period is dropped: then it is refused as expired).
-- - inventories and inventory_pods: by listed_at, one partition per UTC day.
-- The store creates a period's partition when its first row comes (internal/store/partition.go)
-- and maintenance creates the next ones ahead; partitions lists them all with their bounds, so
-- finding a period's partition is one lookup, not a parse of the catalogue.
--
-- What is already stored is not rewritten: each table is renamed, becomes the first partition
-- (every time up to the end of the current UTC day, or of its latest row's), and is dropped by
-- retention as a whole once all of it is older than the horizon. Checked by the store's
-- TestMigrationAdoptsStoredEvents: the old table's file (pg_class.relfilenode) is unchanged; the
-- cost is one scan per table (the CHECK that lets ATTACH skip its own) and building the new
-- primary keys' indexes.
CREATE TABLE partitions (
    parent text        NOT NULL,
    name   text        PRIMARY KEY,
    lower  timestamptz NOT NULL,
    upper  timestamptz NOT NULL
);
CREATE INDEX partitions_range ON partitions (parent, upper);

-- The horizon of each retention class: nothing older is stored any more (an event that old is
-- refused as expired: its day was dropped), and when maintenance last ran.
CREATE TABLE retention (
    class         text        PRIMARY KEY,
    horizon       timestamptz,
    maintained_at timestamptz
);

-- +goose StatementBegin
CREATE FUNCTION pg_temp.adopt(tbl text, col text, parent text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
    latest timestamptz;
    upper  timestamptz;
    name   text := tbl || '_until_partitioning';
BEGIN
    EXECUTE format('SELECT max(%I) FROM %I', col, name) INTO latest;
    IF latest IS NULL THEN
        EXECUTE format('DROP TABLE %I', name);
        RETURN;
    END IF;
    upper := date_trunc('day', greatest(latest, now()), 'UTC') + interval '1 day';
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I < %L) NOT VALID', name, name || '_range', col, upper);
    EXECUTE format('ALTER TABLE %I VALIDATE CONSTRAINT %I', name, name || '_range');
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', parent, name, upper);
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', name, name || '_range');
    INSERT INTO partitions (parent, name, lower, upper) VALUES (parent, name, '-infinity', upper);
END
$f$;
-- +goose StatementEnd

-- events
ALTER TABLE events RENAME TO events_until_partitioning;
ALTER TABLE events_until_partitioning RENAME CONSTRAINT events_pkey TO events_until_partitioning_pkey;
ALTER INDEX events_pod_time RENAME TO events_until_partitioning_pod_time;
ALTER INDEX events_node_status RENAME TO events_until_partitioning_node_status;
ALTER INDEX events_node_status_time RENAME TO events_until_partitioning_node_status_time;
ALTER INDEX events_pod_status RENAME TO events_until_partitioning_pod_status;
ALTER INDEX events_pod_k8s_event RENAME TO events_until_partitioning_pod_k8s_event;
ALTER TABLE events_until_partitioning ADD COLUMN class text NOT NULL DEFAULT 'raw';
CREATE UNIQUE INDEX events_until_partitioning_key ON events_until_partitioning (id, occurred_at, class);
ALTER TABLE events_until_partitioning DROP CONSTRAINT events_until_partitioning_pkey;

CREATE TABLE events (
    id          text        NOT NULL,
    kind        text        NOT NULL,
    cluster     text        NOT NULL,
    source      text        NOT NULL,
    occurred_at timestamptz NOT NULL,
    observed_at timestamptz NOT NULL,
    pod_uid     text,
    node        text,
    envelope    jsonb       NOT NULL,
    ingested_at timestamptz NOT NULL DEFAULT now(),
    class       text        NOT NULL DEFAULT 'raw',
    PRIMARY KEY (id, occurred_at, class)
) PARTITION BY LIST (class);
CREATE TABLE events_raw PARTITION OF events FOR VALUES IN ('raw') PARTITION BY RANGE (occurred_at);
CREATE TABLE events_samples PARTITION OF events FOR VALUES IN ('samples') PARTITION BY RANGE (occurred_at);
CREATE TABLE events_kept PARTITION OF events FOR VALUES IN ('kept');
SELECT pg_temp.adopt('events', 'occurred_at', 'events_raw');
-- Created on the parent, each index is attached to the old table's equal one, not built again.
CREATE INDEX events_pod_time ON events (pod_uid, occurred_at) WHERE pod_uid IS NOT NULL;
CREATE INDEX events_node_status ON events (node, occurred_at) WHERE kind = 'node_status';
CREATE INDEX events_node_status_time ON events (occurred_at) WHERE kind = 'node_status';
CREATE INDEX events_pod_status ON events (pod_uid, occurred_at) WHERE kind = 'pod_status';
CREATE INDEX events_pod_k8s_event ON events (pod_uid, occurred_at) WHERE kind = 'k8s_event';
-- An experiment's definitions, found when it is deleted (DELETE /v1/experiments/{name}).
CREATE INDEX events_experiment ON events ((envelope->'data'->>'name')) WHERE kind = 'experiment';

-- inventories
ALTER TABLE inventories RENAME TO inventories_until_partitioning;
ALTER TABLE inventories_until_partitioning RENAME CONSTRAINT inventories_pkey TO inventories_until_partitioning_pkey;
ALTER INDEX inventories_scope RENAME TO inventories_until_partitioning_scope;
CREATE UNIQUE INDEX inventories_until_partitioning_key ON inventories_until_partitioning (id, listed_at);
ALTER TABLE inventories_until_partitioning DROP CONSTRAINT inventories_until_partitioning_pkey;
CREATE TABLE inventories (
    id        text        NOT NULL,
    cluster   text        NOT NULL,
    scope_key text        NOT NULL,
    listed_at timestamptz NOT NULL,
    pod_uids  text[]      NOT NULL,
    PRIMARY KEY (id, listed_at)
) PARTITION BY RANGE (listed_at);
SELECT pg_temp.adopt('inventories', 'listed_at', 'inventories');
CREATE INDEX inventories_scope ON inventories (cluster, scope_key, listed_at);

-- inventory_pods
ALTER TABLE inventory_pods RENAME TO inventory_pods_until_partitioning;
ALTER INDEX inventory_pods_latest RENAME TO inventory_pods_until_partitioning_latest;
CREATE TABLE inventory_pods (
    uid       text        NOT NULL,
    cluster   text        NOT NULL,
    scope_key text        NOT NULL,
    listed_at timestamptz NOT NULL
) PARTITION BY RANGE (listed_at);
SELECT pg_temp.adopt('inventory_pods', 'listed_at', 'inventory_pods');
CREATE INDEX inventory_pods_latest ON inventory_pods (uid, cluster, scope_key, listed_at);

-- Request results outside experiment runs, once their raw hour is past the samples' horizon:
-- per pod and 10 s (internal/summary), kept lean — a busy cluster makes millions a day: the pod
-- UID as a uuid, the first and last success as milliseconds into the bucket. latency is the
-- successful results' latency (ms) as a DDSketch in sketches-go's encoding (1 % relative
-- accuracy); error_classes {class: count}, NULL when none failed.
CREATE TABLE request_buckets (
    pod_uid          uuid        NOT NULL,
    start            timestamptz NOT NULL,
    requests         int         NOT NULL,
    errors           int         NOT NULL,
    pre_ready        int         NOT NULL,
    pre_ready_errors int         NOT NULL,
    first_success_ms smallint,
    last_success_ms  smallint,
    error_classes    jsonb,
    latency          bytea
) PARTITION BY RANGE (start);
CREATE INDEX request_buckets_pod ON request_buckets (pod_uid, start);

-- GPU samples outside experiment runs, once their raw hour is past the samples' horizon: typed
-- columns (the utilisation and framebuffer the measures read), not one JSON document each. The
-- GPU's model is its node's (node_status) and pod's (pod_status) to say, not each sample's.
CREATE TABLE gpu_samples (
    at          timestamptz NOT NULL,
    pod_uid     uuid,
    node        text,
    gpu         text        NOT NULL,
    mig_profile text,
    period_s    real,
    util        real,
    fb_used_mib real
) PARTITION BY RANGE (at);
CREATE INDEX gpu_samples_pod ON gpu_samples (pod_uid, at) WHERE pod_uid IS NOT NULL;

-- What a kept pod's timeline read from rows that retention drops is pinned on the pod first
-- (store.Maintain): the latest inventory that listed it (alive_at, which existed) and the first
-- inventory of its scope that proved it gone.
ALTER TABLE pods ADD COLUMN unobserved_end_at timestamptz;

-- Retention's lookups: the dead letters by age, the watch heartbeats by end, the workloads'
-- states by time (workload_states_time exists).
CREATE INDEX dead_letters_received ON dead_letters (received_at);
CREATE INDEX scope_watches_until ON scope_watches (live_until);

-- +goose Down
-- Everything partitioned goes back to one table each (a copy: only for a store small enough).
DROP VIEW IF EXISTS pod_timeline;
DROP INDEX events_experiment;
DROP INDEX scope_watches_until;
DROP INDEX dead_letters_received;
ALTER TABLE pods DROP COLUMN unobserved_end_at;
ALTER TABLE events RENAME TO events_partitioned;
ALTER TABLE inventories RENAME TO inventories_partitioned;
ALTER TABLE inventory_pods RENAME TO inventory_pods_partitioned;
ALTER TABLE events_partitioned RENAME CONSTRAINT events_pkey TO events_partitioned_pkey;
ALTER TABLE inventories_partitioned RENAME CONSTRAINT inventories_pkey TO inventories_partitioned_pkey;
ALTER INDEX events_pod_time RENAME TO events_partitioned_pod_time;
ALTER INDEX events_node_status RENAME TO events_partitioned_node_status;
ALTER INDEX events_node_status_time RENAME TO events_partitioned_node_status_time;
ALTER INDEX events_pod_status RENAME TO events_partitioned_pod_status;
ALTER INDEX events_pod_k8s_event RENAME TO events_partitioned_pod_k8s_event;
ALTER INDEX inventories_scope RENAME TO inventories_partitioned_scope;
ALTER INDEX inventory_pods_latest RENAME TO inventory_pods_partitioned_latest;
CREATE TABLE events (
    id          text        PRIMARY KEY,
    kind        text        NOT NULL,
    cluster     text        NOT NULL,
    source      text        NOT NULL,
    occurred_at timestamptz NOT NULL,
    observed_at timestamptz NOT NULL,
    pod_uid     text,
    node        text,
    envelope    jsonb       NOT NULL,
    ingested_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO events SELECT id, kind, cluster, source, occurred_at, observed_at, pod_uid, node, envelope, ingested_at FROM events_partitioned;
CREATE INDEX events_pod_time ON events (pod_uid, occurred_at) WHERE pod_uid IS NOT NULL;
CREATE INDEX events_node_status ON events (node, occurred_at) WHERE kind = 'node_status';
CREATE INDEX events_node_status_time ON events (occurred_at) WHERE kind = 'node_status';
CREATE INDEX events_pod_status ON events (pod_uid, occurred_at) WHERE kind = 'pod_status';
CREATE INDEX events_pod_k8s_event ON events (pod_uid, occurred_at) WHERE kind = 'k8s_event';
CREATE TABLE inventories (
    id        text        PRIMARY KEY,
    cluster   text        NOT NULL,
    scope_key text        NOT NULL,
    listed_at timestamptz NOT NULL,
    pod_uids  text[]      NOT NULL
);
INSERT INTO inventories SELECT * FROM inventories_partitioned;
CREATE INDEX inventories_scope ON inventories (cluster, scope_key, listed_at);
CREATE TABLE inventory_pods (
    uid       text        NOT NULL,
    cluster   text        NOT NULL,
    scope_key text        NOT NULL,
    listed_at timestamptz NOT NULL
);
INSERT INTO inventory_pods SELECT * FROM inventory_pods_partitioned;
CREATE INDEX inventory_pods_latest ON inventory_pods (uid, cluster, scope_key, listed_at);
DROP TABLE events_partitioned, inventories_partitioned, inventory_pods_partitioned, partitions, retention, request_buckets, gpu_samples;
