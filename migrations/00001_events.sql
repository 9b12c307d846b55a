-- +goose Up

-- Every envelope ever accepted, once (id is the idempotency key). The truth: every projection
-- below is derived from this table and can be rebuilt from it (`correlator rebuild`).
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
CREATE INDEX events_pod_time ON events (pod_uid, occurred_at) WHERE pod_uid IS NOT NULL;

-- Messages that could not be decoded or validated, with why. Unique per stream position so a
-- redelivery after a crash does not store the same poison twice.
CREATE TABLE dead_letters (
    id          bigserial   PRIMARY KEY,
    stream      text        NOT NULL,
    stream_seq  bigint      NOT NULL,
    subject     text        NOT NULL,
    raw         bytea       NOT NULL,
    error       text        NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (stream, stream_seq)
);

-- Per-pod facts (see internal/align): each column merges commutatively, so events applied in
-- any order, in any batches, by any number of correlators give the same row.
CREATE TABLE pods (
    uid                     text        PRIMARY KEY,
    cluster                 text,
    namespace               text,
    name                    text,
    exp_name                text,
    exp_arm                 text,
    exp_run                 text,
    first_seen              timestamptz NOT NULL,
    last_seen               timestamptz NOT NULL,
    created_at              timestamptz,
    first_unschedulable_at  timestamptz,
    scheduled_event_at      timestamptz,
    scheduled_event_node    text,
    scheduled_cond_at       timestamptz,
    status_node             text,
    running_started_at      timestamptz,
    running_observed_at     timestamptz,
    ready_cond_at           timestamptz,
    ready_observed_at       timestamptz,
    first_success_at        timestamptz,
    ended_at                timestamptz,
    end_rank                int         NOT NULL DEFAULT 0,
    preempted_by            text,
    restarts                int         NOT NULL DEFAULT 0,
    requests                bigint      NOT NULL DEFAULT 0,
    request_errors          bigint      NOT NULL DEFAULT 0
);
CREATE INDEX pods_experiment ON pods (exp_name, exp_arm, exp_run);
CREATE INDEX pods_page ON pods (first_seen, uid);

-- Kubernetes event series per pod: occurrences = the largest series count seen.
CREATE TABLE pod_event_series (
    pod_uid    text NOT NULL,
    reason     text NOT NULL,
    series_key text NOT NULL,
    max_count  int  NOT NULL,
    PRIMARY KEY (pod_uid, reason, series_key)
);

-- Running totals for /v1/stats, maintained with each batch.
CREATE TABLE kind_counts (
    kind             text        PRIMARY KEY,
    events           bigint      NOT NULL,
    last_occurred_at timestamptz NOT NULL
);

-- A second-precision time t means [t, t+1s): when prev falls inside that second, the earliest
-- instant consistent with both is prev. Mirrors align.clampUp.
CREATE FUNCTION clamp_up(t timestamptz, prev timestamptz) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN t < prev AND prev < t + interval '1 second' THEN prev ELSE t END $$;


-- +goose Down
-- pod_timeline (migrations/views) reads these tables.
DROP VIEW IF EXISTS pod_timeline;
DROP FUNCTION clamp_up;
DROP TABLE kind_counts, pod_event_series, pods, dead_letters, events;
