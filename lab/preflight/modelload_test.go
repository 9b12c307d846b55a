package preflight_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/preflight"
)

// probe-startup-short with model-load times read from a real schedlens api over Postgres,
// holding the recorded day20 sample: a liveness budget just under the slowest measured load is
// an error, just over it is not, and an arm without data falls back to its experiment's.
func TestModelLoadFromAPI(t *testing.T) {
	ctx := context.Background()
	db := pgtest.DB(t)
	f, err := os.Open("../../testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var envs []*events.Envelope
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		e, err := events.Decode(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, e)
	}
	if _, err := db.Append(ctx, envs, nil); err != nil {
		t.Fatal(err)
	}
	srv := apitest.Serve(t, db)

	// The slowest model load of the affinity arm, read page by page (one pod a page).
	slowest := -1.0
	cursor := ""
	for {
		q := url.Values{"experiment": {"day20"}, "arm": {"affinity"}, "limit": {"1"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		resp, err := http.Get(srv.URL + "/v1/pods?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Pods []struct {
				Durations map[string]*float64 `json:"durations"`
			} `json:"pods"`
			Next *string `json:"next_cursor"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Pods {
			if d := p.Durations["model_load"]; d != nil {
				slowest = math.Max(slowest, *d)
			}
		}
		if page.Next == nil {
			break
		}
		cursor = *page.Next
	}
	if slowest <= 0 {
		t.Fatal("the sample has no model-load time for day20/affinity")
	}

	manifests := func(arm string, initialDelay int) *preflight.Input {
		m := deployment("llm", 1, container+fmt.Sprintf("  livenessProbe: {httpGet: {path: /v2/health/live, port: 8000}, initialDelaySeconds: %d, periodSeconds: 1, failureThreshold: 1}\n", initialDelay), "")
		m = strings.Replace(m, "labels: {app: llm}", "labels: {app: llm, schedlens.io/experiment: day20, schedlens.io/arm: "+arm+"}", 1)
		return preflight.Load([]string{preflight.Stdin}, strings.NewReader(m), "default")
	}
	in := manifests("affinity", 0)
	loads, err := preflight.FetchModelLoads(ctx, srv.Client(), srv.URL, preflight.ModelLoadKeys(in))
	if err != nil {
		t.Fatal(err)
	}
	got := loads[preflight.ModelLoadKey{Experiment: "day20", Arm: "affinity"}]
	if want := time.Duration(slowest * float64(time.Second)); got.Max != want || got.Pods == 0 || got.P50 > got.Max {
		t.Fatalf("affinity: %+v, want max %s", got, want)
	}
	for _, tc := range []struct {
		arm   string
		delay int
		want  string
	}{
		{"affinity", int(math.Ceil(slowest)) - 2, "measured for experiment day20 arm affinity"},
		{"affinity", int(math.Ceil(slowest)), ""},
		{"no-such-arm", 0, "measured for experiment day20;"},
	} {
		in := manifests(tc.arm, tc.delay)
		loads, err := preflight.FetchModelLoads(ctx, srv.Client(), srv.URL, preflight.ModelLoadKeys(in))
		if err != nil {
			t.Fatal(err)
		}
		// A default far below every measurement: only measured times can trigger the rule.
		r := preflight.Check(in, preflight.FromSpec(cluster.Default(), "test"), preflight.Options{ModelLoad: time.Millisecond, ModelLoads: loads})
		msg := ""
		for _, f := range r.Findings {
			if f.Rule == preflight.RuleProbeStartupShort {
				msg = f.Message
			}
		}
		if (tc.want == "") != (msg == "") || !strings.Contains(msg, tc.want) {
			t.Errorf("arm %s, initialDelaySeconds %d (slowest %.2fs): finding %q, want %q", tc.arm, tc.delay, slowest, msg, tc.want)
		}
	}
	if _, err := preflight.FetchModelLoads(ctx, srv.Client(), srv.URL+"/nowhere", preflight.ModelLoadKeys(in)); err == nil {
		t.Error("a wrong API URL: no error")
	}
}
