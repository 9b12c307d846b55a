package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/events"
)

// TestRunSmoke runs the whole bench on two small sizes of both mixes against the real Postgres
// and checks that it prints every figure, ratio and target. It asserts no rate: figures are for
// people.
func TestRunSmoke(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu")
	out := smoke(t, 3*time.Minute, "-sizes", "300,600", "-naive-rows", "200", "-cpu-profile", prof, "-admin-database-url", adminURL(t))
	// -cpu-profile: one profile per timed end-to-end phase (pprof's format: gzipped protobuf).
	for _, name := range []string{"pods-300", "pods-600", "requests-300", "requests-600"} {
		b, err := os.ReadFile(prof + "-" + name + ".pprof")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s: not a pprof profile (%d bytes)", name, len(b))
		}
	}
	for _, want := range []string{
		"naive INSERT times the first 200 rows of each size (its rate is per row)",
		"mix pods (many short-lived pods, an inventory every 3 runs)",
		"mix requests (36 pods, many request results)",
		"end to end/s", "CopyFrom/s", "naive/s", "psql \\copy/s", "e2e/CopyFrom", "e2e/naive", "e2e/\\copy",
		"end-to-end / raw CopyFrom: ",
		"(target ≥ 0.50 at every size)",
		"end-to-end rate at 600 / at 300 = ",
		"(target ≥ 0.80)",
		"end-to-end / raw CopyFrom at 600 = ",
		"(target ≥ 0.30)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	var r report
	lastJSON(t, out, &r)
	var got []string
	for _, m := range r.Mixes {
		for _, s := range m.Sizes {
			bare := -1 // not measured: this machine's Postgres comes with psql, so it should be
			if s.BareCopy != nil {
				bare = s.BareCopy.Count
			}
			got = append(got, fmt.Sprintf("%s %d %d %d %d %d", m.Mix, s.N, s.EndToEnd.Count, s.CopyFrom.Count, s.Naive.Count, bare))
		}
		if m.LargestOverSmallest <= 0 {
			t.Errorf("mix %s: largest over smallest = %v", m.Mix, m.LargestOverSmallest)
		}
	}
	want := []string{"pods 300 300 300 200 300", "pods 600 600 600 200 600", "requests 300 300 300 200 300", "requests 600 600 600 200 600"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("measurements: mix, size, end-to-end, CopyFrom, naive and psql \\copy counts (-want +got):\n%s", diff)
	}
}

// Bad flags are usage errors, before anything connects.
func TestFlagsRejected(t *testing.T) {
	for _, args := range [][]string{
		{"-sizes", "1000,abc"},
		{"-sizes", "2000,1000"},
		{"-sizes", "0"},
		{"-mix", "nodes"},
		{"-n", "-3"},
		{"-naive-rows", "0"},
		{"-lag", "-lag-rate", "0"},
		{"-lag", "-lag-duration", "0s"},
		{"-lag", "-reads"},
		{"-lag", "-memory"},
		{"-concurrent-batches", "0"},
		{"-psql", "/nonexistent/psql"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"schedlens-bench", "-admin-database-url", "postgres://127.0.0.1:1/x"}, args...), noEnv, &stdout, &stderr)
		if !errors.Is(err, config.ErrUsage) {
			t.Errorf("%q: err = %v, want a usage error", args, err)
		}
	}
}

// -n is one size, and the mixes generate exactly the events asked for, with ids no other size
// or mix shares, and the shapes they claim.
func TestSizesAndMixes(t *testing.T) {
	o := options{n: 1234, sizesFlag: defaultSizes, mixFlag: "both", naiveRows: 1, batchSize: 1, batchWait: time.Second, concurrentBatches: 1}
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1234}, o.sizes); diff != "" {
		t.Errorf("sizes with -n (-want +got):\n%s", diff)
	}
	o = options{sizesFlag: defaultSizes, mixFlag: "pods", naiveRows: 1, batchSize: 1, batchWait: time.Second, concurrentBatches: 1}
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{50000, 200000, 1000000}, o.sizes); diff != "" {
		t.Errorf("default sizes (-want +got):\n%s", diff)
	}
	ids := map[string]bool{}
	for _, m := range []mix{podMix, requestMix} {
		for _, n := range []int{5000, 20000} {
			envs, err := m.generate(n)
			if err != nil {
				t.Fatal(err)
			}
			if len(envs) != n {
				t.Errorf("%s: %d events, want %d", m.name, len(envs), n)
			}
			pods, requests := map[string]bool{}, 0
			for _, env := range envs {
				if ids[env.ID] {
					t.Fatalf("%s at %d: id %s also generated elsewhere", m.name, n, env.ID)
				}
				ids[env.ID] = true
				if uid := env.PodUID(); uid != "" {
					pods[uid] = true
				}
				if env.Kind == events.KindRequest {
					requests++
				}
			}
			t.Logf("%s at %d: %d pods, %d requests", m.name, n, len(pods), requests)
			switch {
			case m.name == "requests" && (len(pods) > 50 || requests < n*3/4):
				t.Errorf("requests mix at %d: %d pods, %d requests", n, len(pods), requests)
			case m.name == "pods" && len(pods) < n/40:
				t.Errorf("pods mix at %d: only %d pods", n, len(pods))
			}
		}
	}
}
