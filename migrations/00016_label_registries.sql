-- +goose Up

-- Label registries (label_registry events: ConfigMaps labelled schedlens.io/label-registry, the
-- node labels placement depends on with their source and owner), the latest state of each
-- ConfigMap: by when it was observed, then by event id, so the order events arrive in does not
-- matter. A deleted ConfigMap keeps its row, marked, so that an older state arriving late does
-- not bring it back. Kept beyond the events' retention, as experiment definitions are.
CREATE TABLE label_registries (
    namespace   text        NOT NULL,
    name        text        NOT NULL,
    registry    jsonb       NOT NULL,
    deleted     boolean     NOT NULL,
    observed_at timestamptz NOT NULL,
    event_id    text        NOT NULL,
    PRIMARY KEY (namespace, name)
);

-- +goose Down
DROP TABLE label_registries;
