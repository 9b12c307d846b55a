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

-- +goose Down
-- pod_timeline (migrations/views/pod_timeline.sql, re-created after the migrations) reads the
-- columns this changes: drop it first.
DROP VIEW IF EXISTS pod_timeline;
DROP FUNCTION seen_live;
DROP INDEX events_node_status;
DROP TABLE scope_watches;
ALTER TABLE pods DROP COLUMN created_observed_at, DROP COLUMN scheduled_observed_at,
    DROP COLUMN pre_ready_requests, DROP COLUMN pre_ready_errors;
