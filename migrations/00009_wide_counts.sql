-- +goose Up

-- Counts in 64 bits (issue 14). The codec keeps every count in an envelope within 32 bits
-- (events.MaxCount), but sums of them do not fit: two FailedScheduling series of 2^31-1 each
-- made the pod_timeline view's sum()::int overflow ("integer out of range"), and every read of
-- that pod — its timeline, the pod list, a comparison — failed with a 500; restarts summed
-- over a pod's containers could overflow pods.restarts in the same way.
-- The view reads sums of them as bigint (migrations/views/pod_timeline.sql); it is re-created
-- after the migrations.
DROP VIEW IF EXISTS pod_timeline;
ALTER TABLE pod_event_series ALTER COLUMN max_count TYPE bigint;
ALTER TABLE pods ALTER COLUMN restarts TYPE bigint;

-- +goose Down
-- Values beyond 32 bits make this fail: they cannot be kept in the old columns.
DROP VIEW IF EXISTS pod_timeline;
ALTER TABLE pod_event_series ALTER COLUMN max_count TYPE int;
ALTER TABLE pods ALTER COLUMN restarts TYPE int;
