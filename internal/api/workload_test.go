package api_test

import (
	"math"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/pipetest"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/store"
)

// An unlabelled Deployment taken through a rollout, a drain and a node failure (generated as a
// collector would publish them, through NATS and the correlator): /v1/disruptions lists exactly
// those three, with their nodes and what each cost it; /v1/workloads and the workload's window
// say the same; its trace and a before/after of its two revisions answer.
func TestWorkloadsAndDisruptions(t *testing.T) {
	cfg := eventgen.DefaultWorkload()
	envs, did := eventgen.Workload(cfg)
	p := pipetest.Start(t)
	p.Publish(envs)
	srv := apitest.Serve(t, p.DB)
	q := url.Values{"from": {cfg.Start.Add(-time.Minute).Format(time.RFC3339)}, "to": {cfg.Start.Add(10 * time.Minute).Format(time.RFC3339)}}.Encode()

	var page api.DisruptionPage
	apitest.GetJSON(t, srv.URL+"/v1/disruptions?"+q, &page)
	type seen struct {
		Kind, Node string
		Start      time.Time
	}
	var got, want []seen
	for _, d := range page.Disruptions {
		got = append(got, seen{d.Kind, d.Node, d.Start})
	}
	for i := len(did) - 1; i >= 0; i-- { // newest first
		want = append(want, seen{did[i].Kind, did[i].Node, did[i].Start.Truncate(time.Microsecond)})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("/v1/disruptions (-want +got):\n%s", diff)
	}
	for i, d := range page.Disruptions {
		g := did[len(did)-1-i]
		if len(d.Workloads) != 1 || d.Workloads[0].Workload.String() != "prod/Deployment/infer" {
			t.Fatalf("%s: workloads %+v, want prod/Deployment/infer alone", d.Kind, d.Workloads)
		}
		a := d.Workloads[0]
		if math.Abs(a.Interruption.Seconds-g.Interruption.Seconds()) > 0.1 {
			t.Errorf("%s: interruption %.3f s, want %.3f s (from the pods' Ready transitions)", d.Kind, a.Interruption.Seconds, g.Interruption.Seconds())
		}
		wantRecovery := g.Recovered.Sub(g.Start).Seconds()
		if a.RecoverySeconds == nil || math.Abs(*a.RecoverySeconds-wantRecovery) > 0.1 {
			t.Errorf("%s: recovery %v s, want %.3f s", d.Kind, a.RecoverySeconds, wantRecovery)
		}
		if d.Kind != report.DisruptionRollout && (a.Interruption.NoSuccessSeconds == nil || len(a.Replacements) == 0) {
			t.Errorf("%s: no-success seconds %v and %d replacements; want requests read and a replacement", d.Kind, a.Interruption.NoSuccessSeconds, len(a.Replacements))
		}
	}

	var list api.WorkloadPage
	apitest.GetJSON(t, srv.URL+"/v1/workloads?namespace=prod&"+q, &list)
	if len(list.Workloads) != 1 {
		t.Fatalf("/v1/workloads: %+v, want prod/Deployment/infer alone", list.Workloads)
	}
	w := list.Workloads[0]
	if w.Kind != "Deployment" || w.Name != "infer" || w.Desired != 3 || !w.Observed || w.Disruptions != 3 || w.Revisions != 2 {
		t.Errorf("/v1/workloads: %+v", w)
	}

	var win report.WorkloadWindow
	apitest.GetJSON(t, srv.URL+"/v1/workloads/prod/deployment/infer?"+q, &win)
	if len(win.Disruptions) != 3 || len(win.Revisions) != 2 || win.Revisions[1].Number != "2" || win.Revisions[0].Requests == 0 {
		t.Errorf("workload window: %d disruptions, revisions %+v", len(win.Disruptions), win.Revisions)
	}

	var tr struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	apitest.GetJSON(t, srv.URL+"/v1/workloads/prod/Deployment/infer/trace.json?"+q, &tr)
	if len(tr.TraceEvents) < 20 {
		t.Errorf("trace: %d events", len(tr.TraceEvents))
	}

	var ba store.BeforeAfter
	apitest.GetJSON(t, srv.URL+"/v1/workloads/prod/Deployment/infer/compare?before=1&after="+win.Revisions[1].Hash+"&"+q, &ba)
	if ba.Note == "" || len(ba.Comparison.Arms) != 2 || ba.Before.Pods != 3 || ba.After.Pods < 3 {
		t.Errorf("before/after: note %q, %d arms, %d and %d pods", ba.Note, len(ba.Comparison.Arms), ba.Before.Pods, ba.After.Pods)
	}
}

// Bad windows, sides and names are problems, not empty answers.
func TestWorkloadProblems(t *testing.T) {
	db := pgtest.DB(t)
	srv := apitest.Serve(t, db)
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/v1/disruptions?from=yesterday", http.StatusBadRequest},
		{"/v1/disruptions?from=-1h&to=-2h", http.StatusBadRequest},
		{"/v1/disruptions?from=-40d", http.StatusBadRequest},
		{"/v1/workloads?cursor=!!", http.StatusBadRequest},
		{"/v1/workloads?limit=0", http.StatusBadRequest},
		{"/v1/workloads/prod/Deployment/nothing", http.StatusNotFound},
		{"/v1/workloads/prod/Deployment/nothing/compare?before=1", http.StatusBadRequest},
		{"/v1/workloads/prod/Deployment/nothing/compare?before=1&after=-2h..-3h", http.StatusBadRequest},
		{"/v1/workloads/prod/Deployment/nothing/compare?before=1&after=2", http.StatusNotFound},
		{"/v1/disruptions?from=-6h&to=now", http.StatusOK},
		{"/v1/workloads?from=-2d", http.StatusOK},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.status)
		}
		if tc.status != http.StatusOK && resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s: Content-Type %q, want application/problem+json", tc.path, resp.Header.Get("Content-Type"))
		}
	}
}
