-- +goose Up

-- Experiment definitions (experiment envelopes: ConfigMaps, or PUT /v1/experiments/{name}). The
-- latest definition wins: by when it was defined, then by event id, so the order events arrive
-- in does not matter.
CREATE TABLE experiments (
    name       text        PRIMARY KEY,
    definition jsonb       NOT NULL,
    defined_at timestamptz NOT NULL,
    event_id   text        NOT NULL
);

-- +goose Down
DROP TABLE experiments;
