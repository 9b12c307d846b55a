-- +goose Up

-- Experiment records imported from another schedlens (POST /v1/records, internal/record): kept
-- as the bytes they were verified in (text, not jsonb: jsonb would respace the definition's
-- values and the digest would no longer be the document's), one row per digest, so importing a
-- record twice stores it once. An imported experiment is listed, compared and held against
-- others from its record alone: no events come with it.
CREATE TABLE imported_records (
    digest      text        PRIMARY KEY,
    experiment  text        NOT NULL,
    namespace   text        NOT NULL DEFAULT '',
    record      text        NOT NULL,
    imported_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX imported_records_experiment ON imported_records (experiment, imported_at DESC);

-- +goose Down
DROP TABLE imported_records;
