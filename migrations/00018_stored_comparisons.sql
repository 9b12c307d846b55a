-- +goose Up

-- What a comparison reads of a run (its run slice: pods with their measures and latency
-- histograms, its arms' interruption seconds, placement and scheduling failures) and the built
-- comparisons, kept where every api replica finds them (internal/store/comparison.go): the first
-- comparison after an api starts reads these instead of every pod, snapshot and request. Each is
-- keyed by everything it was computed from — a run slice by its run's fingerprint (the pod rows'
-- versions and the shared part), a comparison by the fingerprints of all its runs, the definition
-- and the nodes (comparisonKey), hashed — and by `format` (the slice's form and the build that
-- computed it): a row is used only for exactly the stored state and the code it came from, and
-- is otherwise computed again and replaced. One row per run and one per (experiment, namespace,
-- baseline): their size follows the experiments, not time. `body` is JSON (encoding/json's form
-- of the Go values; bytea, never read in SQL).
CREATE TABLE run_slices (
    experiment  text        NOT NULL,
    namespace   text        NOT NULL, -- '' = every namespace
    run         text        NOT NULL, -- '' = pods without a run label
    fingerprint text        NOT NULL,
    format      text        NOT NULL,
    body        bytea       NOT NULL,
    computed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (experiment, namespace, run)
);

CREATE TABLE stored_comparisons (
    experiment  text        NOT NULL,
    namespace   text        NOT NULL,
    baseline    text        NOT NULL, -- as asked: '' = the definition's or the default
    key         bytea       NOT NULL, -- sha256 of format and comparisonKey
    nodes       text[]      NOT NULL, -- the nodes its placement named (their labels are part of the key)
    body        bytea       NOT NULL,
    computed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (experiment, namespace, baseline)
);

-- +goose Down
DROP TABLE stored_comparisons;
DROP TABLE run_slices;
