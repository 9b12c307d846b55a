-- +goose Up

-- One source of truth for the end causes: the store writes align.EndReasons (rank → reason) into
-- this table at every migration (store.DB.Migrate), and pod_timeline reads it instead of a copy
-- of the list. Rank 1 is deleted_unobserved, the end an inventory proves.
CREATE TABLE end_reasons (
    rank   int  PRIMARY KEY,
    reason text NOT NULL
);

-- +goose Down
-- pod_timeline (migrations/views/pod_timeline.sql, re-created after the migrations) reads the
-- columns this changes: drop it first.
DROP VIEW IF EXISTS pod_timeline;
DROP TABLE end_reasons;
