package importer_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/eventstest"
	"github.com/schedlens/schedlens/internal/importer"
	"github.com/schedlens/schedlens/internal/ingest"
	"github.com/schedlens/schedlens/internal/pipetest"
)

var t0 = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)

// pipeline is the real thing in process: JetStream, a correlator (unless not started), Postgres
// and the API's handler.
type pipeline struct {
	*pipetest.Pipeline
	t      testing.TB
	client *importer.Client
}

func newPipeline(t testing.TB, withCorrelator bool) *pipeline {
	t.Helper()
	p := pipetest.Open(t)
	if withCorrelator {
		p.StartCorrelator()
	}
	reg := prometheus.NewRegistry()
	h, err := api.New(p.DB, slog.New(slog.DiscardHandler), reg, reg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return &pipeline{Pipeline: p, t: t, client: &importer.Client{BaseURL: hs.URL}}
}

func (p *pipeline) publish(ctx context.Context, envs []*events.Envelope) (importer.Published, error) {
	res, err := bus.PublishAll(ctx, p.JS, envs)
	return importer.Published{Acked: res.Published, Duplicates: res.Duplicates, Failed: res.Failed}, err
}

func (p *pipeline) streamMessages() uint64 { return p.StreamState().Msgs }

// pods publishes snapshots of two Running pods of cluster lab with their IPs, seen from t0,
// and waits until they are stored.
func (p *pipeline) pods() {
	p.t.Helper()
	var envs []*events.Envelope
	for i, ip := range []string{"127.0.10.1", "127.0.10.2"} {
		ref := &events.PodRef{Namespace: "infer", Name: fmt.Sprintf("llm-%d", i+1), UID: fmt.Sprintf("0f0f0f0f-0000-4000-8000-%012d", i+1)}
		envs = append(envs, eventstest.RoundTrip(p.t, &events.Envelope{V: 1, ID: fmt.Sprintf("pod_status/%s/1", ref.UID), Kind: events.KindPodStatus, Cluster: "lab", Source: "collector",
			OccurredAt: t0, ObservedAt: t0, Pod: ref, Payload: &events.PodStatus{Phase: "Running", PodIP: ip}}))
	}
	if _, err := p.publish(context.Background(), envs); err != nil {
		p.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := p.DB.Stats(context.Background())
		if err == nil && st.PodsTotal == 2 {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("pod snapshots not stored: %+v %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rows are four results: two for llm-1's IP, one for llm-2's, one for an IP no pod held.
var rows = strings.Join([]string{
	`{"pod_ip":"127.0.10.1","sent_at":"2026-11-30T05:00:10Z","latency_ms":5,"status":200}`,
	`{"pod_ip":"127.0.10.1","sent_at":"2026-11-30T05:00:11Z","latency_ms":6,"status":200}`,
	`{"pod_ip":"127.0.10.2","sent_at":"2026-11-30T05:00:12Z","latency_ms":7,"status":200}`,
	`{"pod_ip":"127.0.10.9","sent_at":"2026-11-30T05:00:13Z","latency_ms":8,"status":200}`,
	`{"pod_ip":"127.0.10.1","sent_at":"2026-11-30T05:00:10Z","latency_ms":5,"status":200}`, // line 1 again
}, "\n")

func parse(t *testing.T, cluster string) []ingest.Result {
	t.Helper()
	results, rejected, err := ingest.Parse(ingest.FormatNDJSON, strings.NewReader(rows), ingest.Options{Cluster: cluster, Source: "loadgen"})
	if err != nil || len(rejected) != 0 {
		t.Fatalf("parse: %v %v", err, rejected)
	}
	return results
}

func run(t *testing.T, p *pipeline, cfg importer.Config, results []ingest.Result) (*importer.Report, string) {
	t.Helper()
	if cfg.Wait == 0 {
		cfg.Wait = 20 * time.Second
	}
	cfg.Poll = 20 * time.Millisecond
	r, err := importer.Run(context.Background(), cfg, results, 0, p.publish, p.client.Lookup)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	var out strings.Builder
	r.Write(&out)
	return r, out.String()
}

// The story: imported without -cluster, the results wait, and the report says why and
// where their IPs were known; imported again with the right cluster they land on the pods; a
// third identical import stores nothing.
func TestImportWrongClusterThenCorrected(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, true)
	p.pods()

	r, out := run(t, p, importer.Config{Cluster: "default", ClusterDefaulted: true}, parse(t, "default"))
	want := `published 4 request results (0 already in the stream), 0 rejected lines, 0 not acknowledged
stored: 4 new, 0 already stored, 0 stored before ids included the cluster, 0 not stored within 20s (1 lines repeated a result of an earlier line)
attributed to pods: 0 of 4
waiting for a pod: 4 — no pod of their cluster held their IP when they were sent (cluster "default", the default: no -cluster was given):
  127.0.10.1 in cluster "default": 2 results sent 2026-11-30T05:00:10Z to 2026-11-30T05:00:11Z; no pod of "default" was ever seen with it; a pod of "lab" held it then
  127.0.10.2 in cluster "default": 1 result sent 2026-11-30T05:00:12Z; no pod of "default" was ever seen with it; a pod of "lab" held it then
  127.0.10.9 in cluster "default": 1 result sent 2026-11-30T05:00:13Z; no pod of "default" was ever seen with it; no other cluster had a pod with it then
hint: pods of cluster "lab" held 2 of these IPs: import again with -cluster lab (nothing already stored is stored twice)
GET /v1/unattributed-requests lists every result that waits
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("first import (-want +got):\n%s", diff)
	}
	if err := r.Err(); err != nil {
		t.Errorf("waiting is reported, not an error: %v", err)
	}

	cfg := importer.Config{Cluster: "lab"}
	r, out = run(t, p, cfg, parse(t, "lab"))
	want = `published 4 request results (0 already in the stream), 0 rejected lines, 0 not acknowledged
stored: 4 new, 0 already stored, 0 stored before ids included the cluster, 0 not stored within 20s (1 lines repeated a result of an earlier line)
attributed to pods: 3 of 4 (infer/llm-1 2, infer/llm-2 1)
waiting for a pod: 1 — no pod of their cluster held their IP when they were sent (cluster "lab"):
  127.0.10.9 in cluster "lab": 1 result sent 2026-11-30T05:00:13Z; no pod of "lab" was ever seen with it; no other cluster had a pod with it then
hint: they are attributed as soon as the correlator stores snapshots of the pods that held these IPs (collector run or replay for that cluster)
GET /v1/unattributed-requests lists every result that waits
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("corrected import (-want +got):\n%s", diff)
	}
	before := p.streamMessages()
	cfg.RequireAttributed = true
	r, out = run(t, p, cfg, parse(t, "lab"))
	if !strings.HasPrefix(out, "published 0 request results (0 already in the stream), 0 rejected lines, 0 not acknowledged\nstored: 0 new, 4 already stored,") ||
		!strings.Contains(out, "attributed to pods: 3 of 4") || p.streamMessages() != before {
		t.Errorf("identical import: published or stored something:\n%s", out)
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "1 results wait for a pod (-require-attributed)") {
		t.Errorf("-require-attributed with a waiting result: %v", err)
	}
	st, err := p.DB.Stats(context.Background())
	if err != nil || st.ByKind["request"] != 8 || st.UnattributedRequestsTotal != 5 {
		t.Errorf("stats %+v (%v): want 8 requests stored, 5 of them waiting (4 in default, 1 in lab)", st, err)
	}
}

// Results stored before ids included the cluster are recognised by their old ids in the same
// cluster (and only there): upgrading and importing an old file again stores nothing twice.
func TestImportRecognisesPreClusterIDs(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, true)
	p.pods()
	// The old import: the same envelopes under the ids they had then.
	var old []*events.Envelope
	for _, res := range parse(t, "lab")[:4] {
		env := *res.Envelope
		env.ID, env.Raw = res.LegacyID, nil
		old = append(old, eventstest.RoundTrip(t, &env))
	}
	if _, err := p.publish(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for st, _ := p.DB.Stats(context.Background()); st.ByKind["request"] != 4; st, _ = p.DB.Stats(context.Background()) {
		if time.Now().After(deadline) {
			t.Fatalf("old import not stored: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}

	r, out := run(t, p, importer.Config{Cluster: "lab"}, parse(t, "lab"))
	if r.StoredLegacy != 4 || r.StoredNew != 0 || r.Published.Acked != 0 || r.Attributed != 3 || r.Waiting != 1 {
		t.Errorf("re-import after the upgrade:\n%s", out)
	}
	// Into another cluster they are other results.
	r, out = run(t, p, importer.Config{Cluster: "bar"}, parse(t, "bar"))
	if r.StoredLegacy != 0 || r.StoredNew != 4 || r.Waiting != 4 {
		t.Errorf("import into another cluster:\n%s", out)
	}

	// A vegeta result for a host name, mapped to llm-1 by -host-pod before the change: the same
	// mapping again is the same result; a corrected mapping is another.
	line := `{"attack":"a","seq":1,"code":200,"timestamp":"2026-11-30T05:00:20Z","latency":1000000,"bytes_out":0,"bytes_in":1,"error":"","body":null,"method":"GET","url":"http://gateway:8000/","headers":null}`
	mapped := func(pod int) []ingest.Result {
		ref := events.PodRef{Namespace: "infer", Name: fmt.Sprintf("llm-%d", pod), UID: fmt.Sprintf("0f0f0f0f-0000-4000-8000-%012d", pod)}
		results, _, err := ingest.Parse(ingest.FormatVegeta, strings.NewReader(line), ingest.Options{Cluster: "lab", HostPods: map[string]events.PodRef{"gateway": ref}})
		if err != nil || len(results) != 1 {
			t.Fatalf("parse: %v %v", err, results)
		}
		return results
	}
	oldEnv := *mapped(1)[0].Envelope
	oldEnv.ID, oldEnv.Raw = mapped(1)[0].LegacyID, nil
	if _, err := p.publish(context.Background(), []*events.Envelope{eventstest.RoundTrip(t, &oldEnv)}); err != nil {
		t.Fatal(err)
	}
	for st, _ := p.DB.Stats(context.Background()); st.ByKind["request"] != 9; st, _ = p.DB.Stats(context.Background()) {
		if time.Now().After(deadline) {
			t.Fatalf("old mapped import not stored: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r, out := run(t, p, importer.Config{Cluster: "lab"}, mapped(1)); r.StoredLegacy != 1 || r.Published.Acked != 0 {
		t.Errorf("the same mapping again:\n%s", out)
	}
	if r, out := run(t, p, importer.Config{Cluster: "lab"}, mapped(2)); r.StoredLegacy != 0 || r.StoredNew != 1 || len(r.Pods) != 1 || r.Pods[0].Pod.Name != "llm-2" {
		t.Errorf("a corrected mapping:\n%s", out)
	}
}

// Without an API to read back from, nothing is published; with -wait 0 the import publishes
// without reading back; with no correlator the results are reported not stored.
func TestImportWithoutReadBack(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, false)
	unreachable := &importer.Client{BaseURL: "http://127.0.0.1:1"}
	_, err := importer.Run(context.Background(), importer.Config{Cluster: "lab", Wait: time.Second}, parse(t, "lab"), 0, p.publish, unreachable.Lookup)
	if err == nil || !strings.Contains(err.Error(), "give -wait 0 to publish without reading back") || p.streamMessages() != 0 {
		t.Fatalf("api unreachable: err %v, %d messages published", err, p.streamMessages())
	}

	r, out := run(t, p, importer.Config{Cluster: "lab", Wait: 300 * time.Millisecond}, parse(t, "lab")[:1])
	if err := r.Err(); r.NotStored != 1 || err == nil || !strings.Contains(err.Error(), "1 results not stored by the correlator within 300ms") {
		t.Errorf("no correlator: %v\n%s", err, out)
	}

	noWait := importer.Config{Cluster: "lab"}
	r, err = importer.Run(context.Background(), noWait, parse(t, "lab"), 2, p.publish, p.client.Lookup)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r.Write(&b)
	want := "published 4 request results (1 already in the stream), 2 rejected lines, 0 not acknowledged\n" +
		"not read back (-wait 0): GET /v1/stats and /v1/unattributed-requests show what waits for a pod\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("-wait 0 (-want +got):\n%s", diff)
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "2 rejected lines") {
		t.Errorf("rejected lines: %v", err)
	}
	noWait.RequireAttributed = true
	r, _ = importer.Run(context.Background(), noWait, nil, 0, p.publish, p.client.Lookup)
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "needs the read-back") {
		t.Errorf("-require-attributed with -wait 0: %v", err)
	}
}
