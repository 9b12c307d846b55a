package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The collector's prober sends the request to a pod from Running onward: it fails before the
// model is loaded (connection refused, then 503) and succeeds after; time to first success is
// measured from the requests, at the configured rate.
func TestProberMeasuresFirstSuccess(t *testing.T) {
	e := newEnv(t)
	pod := e.create(podSpec{name: "probed-1", arm: "control", nodeSelector: map[string]string{"lab.schedlens.io/pool": "t4"}})
	e.waitReady("probed-1")
	time.Sleep(2 * time.Second) // some successes after Ready
	e.settle()
	tl := e.timeline(pod.UID)
	if tl.Milestones.FirstSuccess == nil || tl.Milestones.Ready == nil || tl.Milestones.Running == nil {
		t.Fatalf("milestones %+v: want running, ready and first_success", tl.Milestones)
	}
	if tl.Milestones.FirstSuccess.Before(*tl.Milestones.Ready) {
		t.Errorf("first success %v before Ready %v", tl.Milestones.FirstSuccess, tl.Milestones.Ready)
	}
	if tl.Counts.RequestErrors == 0 || tl.Counts.Requests <= tl.Counts.RequestErrors {
		t.Errorf("counts %+v: want errors while the model loaded, then successes", tl.Counts)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Every failure before the first success was sent before Ready (or within one probe
	// interval of it); every attempt after Ready + 1 s succeeded.
	var lateFailures, earlySuccesses int
	var first, last time.Time
	var n int
	var p50 float64
	err = conn.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE NOT (envelope->'data'->>'ok')::bool AND occurred_at > $2::timestamptz + interval '1 second'),
		       count(*) FILTER (WHERE (envelope->'data'->>'ok')::bool AND occurred_at < $3::timestamptz),
		       min(occurred_at), max(occurred_at), count(*),
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY (envelope->'data'->>'latency_ms')::float8) FILTER (WHERE (envelope->'data'->>'ok')::bool)
		FROM events WHERE kind = 'request' AND pod_uid = $1`, string(pod.UID), *tl.Milestones.Ready, *tl.Milestones.Running,
	).Scan(&lateFailures, &earlySuccesses, &first, &last, &n, &p50)
	if err != nil {
		t.Fatal(err)
	}
	if lateFailures > 0 || earlySuccesses > 0 {
		t.Errorf("%d failures more than 1 s after Ready, %d successes before Running", lateFailures, earlySuccesses)
	}
	rate := float64(n-1) / last.Sub(first).Seconds()
	t.Logf("prober: %d requests over %s = %.1f/s (configured 5/s); success p50 latency %.1f ms (T4 model ≈ 80 ms); ready→first success %.3fs",
		n, last.Sub(first).Round(time.Millisecond), rate, p50, tl.Milestones.FirstSuccess.Sub(*tl.Milestones.Ready).Seconds())
	// The rate and the latencies are figures of a loaded machine, logged above; what is asserted
	// holds on any: the pod was probed, not before it ran, and no request beat the model's time.
	if n < 2 {
		t.Errorf("%d probe requests; want several", n)
	}
	if first.Before(tl.Milestones.Running.Add(-time.Second)) {
		t.Errorf("first probe %v before the pod was Running %v", first, tl.Milestones.Running)
	}
	// The endpoint sleeps the T4 model's 80 ms × a jitter of sd 10 % (log-normal): a median
	// under 60 ms would mean the latency was not measured around the request.
	if tl.Requests == nil || tl.Requests.LatencyMS["p50"] < 60 {
		t.Errorf("request summary %+v: want a p50 of at least the T4 model's time (80 ms, jittered)", tl.Requests)
	}
	// The node's dcgm-exporter was scraped every second: GPU time while the pod held the GPU,
	// idle while the model loaded, busy while it served.
	if g := tl.GPU; g == nil || g.Seconds < 2 || g.UtilMean <= 0 || g.IdleSeconds <= 0 || g.FBUsedMiBMax == nil {
		t.Errorf("gpu summary %+v: want seconds, some utilisation and some idle time", tl.GPU)
	} else {
		t.Logf("gpu: %.0f s sampled, util mean %.1f%% p95 %.0f%%, idle %.0f s, framebuffer max %.0f MiB", g.Seconds, g.UtilMean, g.UtilP95, g.IdleSeconds, *g.FBUsedMiBMax)
	}
}
