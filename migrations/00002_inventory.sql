-- +goose Up

-- Which collector scope saw each pod, when it was last known alive, and when an inventory proved
-- it gone unobserved (align.Facts.ApplyInventories; recomputed, never merged).
ALTER TABLE pods
    ADD COLUMN scope_key         text,
    ADD COLUMN alive_at          timestamptz,
    ADD COLUMN unobserved_end_at timestamptz;
CREATE INDEX pods_scope ON pods (cluster, scope_key) WHERE scope_key IS NOT NULL;

-- Full lists of the pods in a collector scope, kept to end pods deleted while nobody watched.
CREATE TABLE inventories (
    id        text        PRIMARY KEY,
    cluster   text        NOT NULL,
    scope_key text        NOT NULL,
    listed_at timestamptz NOT NULL,
    pod_uids  text[]      NOT NULL
);
CREATE INDEX inventories_scope ON inventories (cluster, scope_key, listed_at);
CREATE INDEX inventories_uids ON inventories USING gin (pod_uids);


-- +goose Down
-- pod_timeline (migrations/views/pod_timeline.sql, re-created after the migrations) reads the
-- columns this changes: drop it first.
DROP VIEW IF EXISTS pod_timeline;
DROP TABLE inventories;
DROP INDEX pods_scope;
ALTER TABLE pods DROP COLUMN scope_key, DROP COLUMN alive_at, DROP COLUMN unobserved_end_at;
