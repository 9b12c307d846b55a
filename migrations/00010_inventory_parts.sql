-- +goose Up

-- The parts of chunked inventories (issue 14). An inventory too large for one NATS message is
-- published in parts (events.Inventory.Part of Parts), each listing a share of the scope's
-- pods. A part alone would end the pods the other parts list, so parts wait here until all of
-- a chunked inventory's parts are stored; then their union becomes one row of inventories
-- (id parts/<cluster>/<scope>/<listed at>/<parts>) and is applied as a whole inventory.
CREATE TABLE inventory_parts (
    cluster   text        NOT NULL,
    scope_key text        NOT NULL,
    listed_at timestamptz NOT NULL,
    parts     int         NOT NULL,
    part      int         NOT NULL,
    id        text        NOT NULL,
    pod_uids  text[]      NOT NULL,
    PRIMARY KEY (cluster, scope_key, listed_at, parts, part)
);

-- +goose Down
DROP TABLE inventory_parts;
