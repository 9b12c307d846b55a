-- +goose Up

-- Request latency and GPU measures per pod (align/measures.go). Each merges by addition (or max),
-- so events applied in any order give the same rows.
ALTER TABLE pods
    ADD COLUMN gpu_fb_seconds double precision NOT NULL DEFAULT 0,
    ADD COLUMN gpu_fb_max     double precision NOT NULL DEFAULT 0;

-- Histogram of successful requests' latencies: bucket i holds (1.02^(i-1), 1.02^i] ms.
CREATE TABLE pod_latency (
    pod_uid text   NOT NULL,
    bucket  int    NOT NULL,
    count   bigint NOT NULL,
    PRIMARY KEY (pod_uid, bucket)
);

-- GPU seconds spent at each whole utilisation percent while allocated to the pod.
CREATE TABLE pod_gpu_util (
    pod_uid text             NOT NULL,
    util    smallint         NOT NULL,
    seconds double precision NOT NULL,
    PRIMARY KEY (pod_uid, util)
);

-- +goose Down
DROP TABLE pod_gpu_util, pod_latency;
ALTER TABLE pods DROP COLUMN gpu_fb_seconds, DROP COLUMN gpu_fb_max;
