-- +goose Up

-- Where the wait really was (issue 25): a pod held by a scheduling gate (Kueue's
-- kueue.x-k8s.io/admission, …) is not waiting for a scheduler, and a pod with Dynamic Resource
-- Allocation claims waits for them to be allocated. The facts are align.Facts' and merge the
-- same way (mergePods): the latest observation of the pod still gated (GREATEST), the earliest
-- without a gate (LEAST), and when all of its claims were allocated, by the claims' own
-- allocationTimestamp and by the collector's first observation (LEAST over snapshots). The
-- pod_timeline view derives the milestones gated and claim_allocated from them. Pods stored
-- before this migration read NULL: they were never seen gated or with claims, because the
-- collector did not keep either until now.
ALTER TABLE pods ADD COLUMN gated_seen_at timestamptz, ADD COLUMN ungated_observed_at timestamptz,
    ADD COLUMN claims_allocated_at timestamptz, ADD COLUMN claims_allocated_observed_at timestamptz;

-- +goose Down
DROP VIEW IF EXISTS pod_timeline;
ALTER TABLE pods DROP COLUMN gated_seen_at, DROP COLUMN ungated_observed_at,
    DROP COLUMN claims_allocated_at, DROP COLUMN claims_allocated_observed_at;
