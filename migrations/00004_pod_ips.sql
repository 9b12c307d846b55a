-- +goose Up

-- Which pod held which IP, and when it was seen with it: results that name only a pod IP (an
-- external load generator's) are attributed to the pod that held that IP at the time.
CREATE TABLE pod_ips (
    cluster    text        NOT NULL,
    ip         text        NOT NULL,
    uid        text        NOT NULL,
    first_seen timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL,
    PRIMARY KEY (cluster, ip, uid)
);

-- Request results naming only an IP that no known pod held yet; attributed as soon as one is.
CREATE TABLE unattributed_requests (
    event_id    text        PRIMARY KEY,
    cluster     text        NOT NULL,
    ip          text        NOT NULL,
    occurred_at timestamptz NOT NULL
);
CREATE INDEX unattributed_requests_ip ON unattributed_requests (cluster, ip);

-- +goose Down
DROP TABLE unattributed_requests, pod_ips;
