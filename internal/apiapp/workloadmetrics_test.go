package apiapp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/apiapp"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/testenv"
)

// The api computes the workload metrics in the background and serves them on /metrics: here
// the day20 experiment of an hour ago, whose oversized pods still wait for a GPU. Told not to
// (a negative interval, -workload-metrics-interval 0), it exports none.
func TestAPIExportsWorkloadMetrics(t *testing.T) {
	url := pgtest.URL(t)
	db := pgtest.Open(t, url)
	cfg := eventgen.Default()
	cfg.Start = time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	if _, err := db.Append(context.Background(), eventgen.Generate(cfg), nil); err != nil {
		t.Fatal(err)
	}
	const waiting = `schedlens_workload_gpu_pods_waiting{reason="insufficient_gpu",workload_kind="ReplicaSet",workload_name="day20",workload_namespace="ai-lab"} 2`
	base := start(t, apiapp.Options{DatabaseURL: url, WorkloadMetricsInterval: 100 * time.Millisecond})
	var body string
	if !testenv.Until(10*time.Second, 50*time.Millisecond, func() bool {
		_, body = do(t, http.MethodGet, base+"/metrics", "", "")
		return strings.Contains(body, waiting)
	}) {
		t.Fatalf("/metrics never said %s:\n%s", waiting, grepLines(body, "schedlens_workload"))
	}
	for _, name := range []string{"schedlens_workload_disruptions_total{", "schedlens_workload_metrics_refresh_duration_seconds_count "} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics has no %s:\n%s", name, grepLines(body, "schedlens_workload"))
		}
	}

	off := start(t, apiapp.Options{DatabaseURL: url, WorkloadMetricsInterval: -1})
	time.Sleep(300 * time.Millisecond)
	if _, body := do(t, http.MethodGet, off+"/metrics", "", ""); strings.Contains(body, "schedlens_workload") {
		t.Errorf("with the workload metrics off, /metrics has:\n%s", grepLines(body, "schedlens_workload"))
	}
}

// grepLines are the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
