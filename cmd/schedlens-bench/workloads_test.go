package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestWorkloadsSmoke runs the workload read bench on a small history and checks that it stored
// the Deployment's pods and disruptions and timed every read and the workload metrics'
// refresh. It asserts no latency.
func TestWorkloadsSmoke(t *testing.T) {
	out := smoke(t, 2*time.Minute, "-workloads", "-workload-pods", "300", "-read-iterations", "2", "-admin-database-url", adminURL(t))
	var r workloadReport
	lastJSON(t, out, &r)
	if r.Pods < 300 || r.Disruptions < 3 || r.Events <= r.Pods {
		t.Errorf("report = %+v; want ≥ 300 pods, ≥ 3 disruptions, more events than pods", r)
	}
	if len(r.Figures) != 4 {
		t.Fatalf("%d reads timed, want 3 and the metrics refresh:\n%s", len(r.Figures), out)
	}
	for _, f := range r.Figures {
		target := 200.0
		if f.Endpoint == "metrics refresh" {
			target = 1000
		}
		if f.N != 2 || f.P50MS <= 0 || f.P95MS < f.P50MS || f.TargetMS != target || !strings.Contains(out, f.Endpoint) {
			t.Errorf("figure %+v", f)
		}
	}
}

func TestWorkloadsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-workloads", "-workload-pods", "10"},
		{"-workloads", "-reads"},
		{"-workloads", "-lag"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"schedlens-bench"}, args...), noEnv, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "-work") {
			t.Errorf("%v: err = %v, want a usage error naming -workload…", args, err)
		}
	}
}
