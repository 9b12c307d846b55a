-- +goose Up

-- A pod created in the last milliseconds of its second reaches the collector after the
-- boundary: a first observation less than 100 ms past the creation second places created at
-- that second's last microsecond (an error no larger than the observation's delay), not at its
-- start (off by nearly a second). Mirrors align.createdAt; pod_timeline reads it for created.
CREATE FUNCTION created_at_seen(t timestamptz, o timestamptz) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN o >= t + interval '1 second' AND o < t + interval '1.1 seconds' THEN t + interval '999999 microseconds'
               ELSE seen_live(t, o) END $$;

-- +goose Down
-- pod_timeline (migrations/views/pod_timeline.sql, re-created after the migrations) reads it:
-- drop the view first.
DROP VIEW IF EXISTS pod_timeline;
DROP FUNCTION created_at_seen;
