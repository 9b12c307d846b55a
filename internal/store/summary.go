package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/summary"
)

var (
	bucketColumns = []string{"pod_uid", "start", "requests", "errors", "pre_ready", "pre_ready_errors",
		"first_success_ms", "last_success_ms", "error_classes", "latency"}
	gpuSampleColumns = []string{"at", "pod_uid", "node", "gpu", "mig_profile", "period_s", "util", "fb_used_mib"}
)

// summarise turns the raw request results and GPU samples of the detached samples partition
// `partition` — but those of experiment runs, copied to the kept class — into request buckets
// and typed GPU samples, unless their own class's horizon is past them. The table is dropped
// next, in the same transaction: a result is summarised exactly once, and a copy of it arriving
// later is refused as expired (its hour is past the samples' horizon).
func summarise(ctx context.Context, tx pgx.Tx, partition string, h horizons, res *MaintainResult) error {
	rows, err := tx.Query(ctx, `SELECT kind, node, pod_uid, occurred_at, envelope->'data' FROM `+partition+`
		WHERE (pod_uid IS NOT NULL OR kind = 'gpu_sample') AND (pod_uid IS NULL OR NOT (`+keptSamples+`))`)
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	var (
		buckets summary.Buckets
		gpuRows [][]any
		kind    string
		node    *string
		uid     *string
		at      time.Time
		data    []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&kind, &node, &uid, &at, &data}, func() error {
		switch events.Kind(kind) {
		case events.KindRequest:
			var r events.Request
			if err := json.Unmarshal(data, &r); err != nil {
				return fmt.Errorf("request at %s: %w", at, err)
			}
			if !at.Before(h[ClassSummaries]) {
				buckets.Add(*uid, at, &r)
			}
		case events.KindGPUSample:
			var g events.GPUSample
			if err := json.Unmarshal(data, &g); err != nil {
				return fmt.Errorf("GPU sample at %s: %w", at, err)
			}
			if at.Before(h[ClassGPUSamples]) {
				return nil
			}
			gpu := g.UUID
			if gpu == "" {
				gpu = g.GPU
			}
			var util, fb any
			if u, ok := align.GPUUtil(g.Metrics); ok {
				util = float32(u)
			}
			if v, ok := g.Metrics["DCGM_FI_DEV_FB_USED"]; ok {
				fb = float32(v)
			}
			var nodeV, uidV any // copies: the scan targets are reused
			if node != nil {
				nodeV = *node
			}
			if uid != nil {
				uidV = *uid
			}
			gpuRows = append(gpuRows, []any{at, uidV, nodeV, gpu, nullString(g.MIGProfile), float32(podPeriod(&g)), util, fb})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	list := buckets.List()
	n := need{}
	for _, b := range list {
		n.add(requestBuckets, b.Start)
	}
	for _, g := range gpuRows {
		n.add(gpuSamples, g[0].(time.Time))
	}
	if _, _, _, err := createMissing(ctx, tx, n); err != nil {
		return err
	}
	bucketRows := make([][]any, 0, len(list))
	for _, b := range list {
		var classes any
		if len(b.ErrorClasses) > 0 {
			classes = b.ErrorClasses
		}
		var first, last any
		if !b.FirstSuccess.IsZero() {
			first, last = int16(b.FirstSuccess.Sub(b.Start).Milliseconds()), int16(b.LastSuccess.Sub(b.Start).Milliseconds())
		}
		bucketRows = append(bucketRows, []any{b.PodUID, b.Start, int32(b.Requests), int32(b.Errors), int32(b.PreReady),
			int32(b.PreReadyErrors), first, last, classes, b.EncodeLatency()})
	}
	if len(bucketRows) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{requestBuckets.parent}, bucketColumns, pgx.CopyFromRows(bucketRows)); err != nil {
			return fmt.Errorf("copy request buckets: %w", err)
		}
	}
	if len(gpuRows) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{gpuSamples.parent}, gpuSampleColumns, pgx.CopyFromRows(gpuRows)); err != nil {
			return fmt.Errorf("copy GPU samples: %w", err)
		}
	}
	res.Buckets += int64(len(bucketRows))
	res.GPUSamples += int64(len(gpuRows))
	return nil
}

// podPeriod is the period a compacted GPU sample keeps: the pod's share of it
// (events.GPUSample.PodSeconds), 0 when the sample did not say its period.
func podPeriod(g *events.GPUSample) float64 {
	if g.PeriodS <= 0 {
		return 0
	}
	return g.PodSeconds()
}
