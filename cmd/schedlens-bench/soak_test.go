package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestSoakSmoke runs the soak bench for three small simulated days and checks that each day
// stored its events, was maintained and read, and that bytes are reported by class and scaled
// to the reference cluster. It asserts no size or latency.
func TestSoakSmoke(t *testing.T) {
	out := smoke(t, 4*time.Minute, "-soak", "-soak-days", "3", "-soak-scale", "0.01", "-soak-probe-every", "30s", "-admin-database-url", adminURL(t))
	var r soakReport
	lastJSON(t, out, &r)
	if len(r.Days) != 3 || r.Pods != 10 || r.DayBytesReference <= 0 {
		t.Fatalf("report = %+v; want 3 days of 10 pods and the bytes a day scaled to the reference\n%s", r, out)
	}
	for _, d := range r.Days {
		if d.Events == 0 || d.IngestPerSec <= 0 || d.Bytes <= 0 || d.ByClass["summaries"] <= 0 || d.Rows["request_buckets"] <= 0 ||
			d.WindowP95MS <= 0 || d.DisruptP95MS <= 0 || d.CompareP95MS <= 0 {
			t.Errorf("day %+v", d)
		}
	}
	for _, want := range []string{"scaled to the reference cluster", "target ≤ 1 GB", "flatness after the horizon: needs more than 8 days, ran 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSoakBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-soak", "-soak-days", "0"},
		{"-soak", "-soak-scale", "2"},
		{"-soak", "-soak-probe-every", "10ms"},
		{"-soak", "-reads"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"schedlens-bench"}, args...), noEnv, &bytes.Buffer{}, &stderr)
		if err == nil || !strings.Contains(err.Error(), "-soak") {
			t.Errorf("%q: err = %v, want a usage error naming -soak…", args, err)
		}
	}
}
