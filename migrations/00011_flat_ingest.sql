-- +goose Up

-- Flat ingest (issue 12): a batch touches only the pods its events are about, and an inventory
-- of P pods costs P index insertions, whatever the history. An inventory no longer updates the
-- pods of its scope (every pod it listed, and every one it could end, each time); what it
-- proves is read when a pod is read, with two index lookups (migrations/views/pod_timeline.sql):
-- - alive: the latest of the pod's snapshots (pods.alive_at) and of the inventories that list
--   it (inventory_pods);
-- - ended unobserved: the first inventory of its scope listed after that (every such inventory
--   leaves the pod out: one that listed it would be the latest listing it).
-- Both are order-free, as align.Facts.ApplyInventories is. pods.alive_at keeps the pod's own
-- observations (values an inventory set before this migration are inventories that list the
-- pod, so they stay correct); unobserved_end_at is no longer stored.
CREATE TABLE inventory_pods (
    uid       text        NOT NULL,
    cluster   text        NOT NULL,
    scope_key text        NOT NULL,
    listed_at timestamptz NOT NULL
);
INSERT INTO inventory_pods (uid, cluster, scope_key, listed_at)
SELECT u.uid, i.cluster, i.scope_key, i.listed_at FROM inventories i CROSS JOIN LATERAL unnest(i.pod_uids) AS u(uid);
CREATE INDEX inventory_pods_latest ON inventory_pods (uid, cluster, scope_key, listed_at);

-- Nothing looks inventories up by the pods they list, or pods up by scope, any more.
DROP INDEX inventories_uids;
DROP INDEX pods_scope;

-- pod_timeline (migrations/views/pod_timeline.sql, re-created after the migrations) reads the
-- column this drops: drop it first.
DROP VIEW IF EXISTS pod_timeline;
ALTER TABLE pods DROP COLUMN unobserved_end_at;

-- +goose Down
DROP VIEW IF EXISTS pod_timeline;
ALTER TABLE pods ADD COLUMN unobserved_end_at timestamptz;
UPDATE pods p SET alive_at = GREATEST(p.alive_at, (SELECT max(ip.listed_at) FROM inventory_pods ip
                                                   WHERE ip.uid = lower(p.uid) AND ip.cluster = p.cluster AND ip.scope_key = p.scope_key))
WHERE p.scope_key IS NOT NULL;
UPDATE pods p SET unobserved_end_at = (SELECT min(i.listed_at) FROM inventories i
                                       WHERE i.cluster = p.cluster AND i.scope_key = p.scope_key AND i.listed_at > p.alive_at)
WHERE p.scope_key IS NOT NULL;
CREATE INDEX pods_scope ON pods (cluster, scope_key) WHERE scope_key IS NOT NULL;
CREATE INDEX inventories_uids ON inventories USING gin (pod_uids);
DROP TABLE inventory_pods;
