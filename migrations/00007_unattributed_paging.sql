-- +goose Up

-- GET /v1/unattributed-requests pages through the waiting results by when they were sent.
CREATE INDEX unattributed_requests_page ON unattributed_requests (occurred_at, event_id);

-- Why a result waits: which clusters saw a pod with its IP, and since when (looked up by IP
-- alone, across clusters, unlike the attribution itself).
CREATE INDEX pod_ips_ip ON pod_ips (ip, first_seen);

-- +goose Down
DROP INDEX pod_ips_ip, unattributed_requests_page;
