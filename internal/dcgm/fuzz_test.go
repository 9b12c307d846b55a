package dcgm_test

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/schedlens/schedlens/internal/dcgm"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/eventstest"
)

// FuzzParse: any text either fails to parse or gives, the same way twice, samples that name a
// GPU and carry finite values; every envelope built from them is what the codec reads back
// (the others are reported, never returned).
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*.prom"))
	if err != nil || len(files) == 0 {
		f.Fatalf("fixtures: %v", err)
	}
	for _, name := range files {
		rel, _ := filepath.Rel("testdata", name)
		f.Add(fixture(f, rel))
	}
	f.Add([]byte("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\",Hostname=\"" + string(bytes.Repeat([]byte("h"), 300)) + "\"} 5\n"))
	f.Add([]byte("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",pod=\"p\",namespace=\"n\"} NaN\nDCGM_FI_DEV_FB_USED{gpu=\"0\"} +Inf\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		samples, err := dcgm.Parse(bytes.NewReader(text))
		if err != nil {
			if samples != nil {
				t.Fatalf("samples %v with error %v", samples, err)
			}
			return
		}
		again, err := dcgm.Parse(bytes.NewReader(text))
		if err != nil {
			t.Fatalf("second parse: %v", err)
		}
		if diff := cmp.Diff(samples, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("two parses differ:\n%s", diff)
		}
		for _, s := range samples {
			if s.GPU == "" && s.UUID == "" {
				t.Fatalf("sample without gpu and UUID: %+v", s)
			}
			for name, v := range s.Metrics {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("metric %s = %v", name, v)
				}
			}
		}
		envs, _ := dcgm.Envelopes(samples, "lab", "collector/fuzz", "fallback-node", scrapedAt, seenAt, cache)
		if len(envs) > len(samples) {
			t.Fatalf("%d envelopes for %d samples", len(envs), len(samples))
		}
		ids := map[string]bool{}
		for _, env := range envs {
			got := eventstest.RoundTrip(t, env)
			if diff := cmp.Diff(env, got, cmpopts.IgnoreFields(events.Envelope{}, "Raw")); diff != "" {
				t.Fatalf("%s: decoded envelope (-built +decoded):\n%s", env.ID, diff)
			}
			ids[env.ID] = true
		}
	})
}
