-- +goose Up

-- The successful requests of each pod in time order, as an index alone: the workload reads
-- (internal/store/workload.go detect) and a run's interruptions read when a service answered
-- from it with index-only scans, instead of reading each request's row and its JSON. At the
-- bench's window of 1,000 pods it took a span of 5,280 successes from 10.8 ms to 1.4 ms; what it
-- costs ingest is in docs/architecture.md#the-index-of-successful-requests. The expression is
-- store.succeeded's, which the queries must use as written for the planner to match it.
CREATE INDEX events_request_ok ON events (pod_uid, occurred_at)
    WHERE kind = 'request' AND (envelope #>> '{data,ok}')::boolean;

-- +goose Down
DROP INDEX events_request_ok;
