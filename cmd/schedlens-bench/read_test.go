package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestReadsSmoke runs the read bench on a small experiment and checks that it stored what it
// was asked for and timed every endpoint. It asserts no latency: figures are for people.
func TestReadsSmoke(t *testing.T) {
	out := smoke(t, 2*time.Minute, "-reads", "-read-pods", "60", "-read-runs", "3", "-read-requests", "900",
		"-read-iterations", "3", "-admin-database-url", adminURL(t))
	var r readReport
	lastJSON(t, out, &r)
	if r.Fill.Runs != 3 || r.Fill.Pods < 60 || r.Fill.Requests < 900 || r.Fill.Events <= r.Fill.Requests {
		t.Errorf("fill = %+v; want 3 runs, ≥ 60 pods, ≥ 900 requests and more events than requests", r.Fill)
	}
	if len(r.Figures) != len(readEndpoints) {
		t.Fatalf("%d endpoints timed, want %d:\n%s", len(r.Figures), len(readEndpoints), out)
	}
	for i, f := range r.Figures {
		if f.Endpoint != readEndpoints[i] || f.N != 3 || f.P50MS <= 0 || f.P95MS < f.P50MS || f.TargetMS <= 0 {
			t.Errorf("figure %d = %+v", i, f)
		}
		if !strings.Contains(out, f.Endpoint) {
			t.Errorf("output lacks %q:\n%s", f.Endpoint, out)
		}
	}
}

func TestReadsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-reads", "-read-runs", "0"},
		{"-reads", "-read-pods", "2", "-read-runs", "3"},
		{"-reads", "-read-iterations", "0"},
		{"-reads", "-read-requests", "-1"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"schedlens-bench"}, args...), noEnv, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "-read-") {
			t.Errorf("%v: err = %v, want a usage error naming the flag", args, err)
		}
	}
}
