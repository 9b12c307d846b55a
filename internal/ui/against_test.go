package ui_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/record"
	"github.com/schedlens/schedlens/internal/ui"
)

// The experiment page links the chain — day21's definition names day20 as previous — and its
// form (no script: a GET) holds day20 against day21 on a page of its own: the changed
// definition key, the baseline's metrics with their shift, and each arm's verdicts with
// whether they held.
func TestRecordChainAndAgainstPage(t *testing.T) {
	ctx := browser(t)
	db := pgtest.DB(t)
	day21 := eventgen.Default()
	day21.Experiment, day21.IDPrefix, day21.Seed = "day21", "d21/", 21
	for _, cfg := range []eventgen.Config{eventgen.Default(), day21} {
		if _, err := db.Append(context.Background(), eventgen.Generate(cfg), nil); err != nil {
			t.Fatal(err)
		}
	}
	var def events.Experiment
	if err := json.Unmarshal([]byte(`{"name":"day21","change":"placement, again","baseline":"control","previous":"day20"}`), &def); err != nil {
		t.Fatal(err)
	}
	if err := db.DefineExperiment(context.Background(), def, day21.Start.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	web, err := ui.New(db, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := apitest.Serve(t, db, api.WithUI(web))

	do(t, ctx, chromedp.Navigate(srv.URL+"/ui/experiments/day21"), chromedp.WaitVisible(chromedp.CSS(`[data-record]`)))
	if got := eval[string](t, ctx, `document.querySelector('[data-previous]')?.dataset.previous ?? ''`); got != "day20" {
		t.Errorf("day21's page: previous %q, want day20", got)
	}
	do(t, ctx, chromedp.Navigate(srv.URL+"/ui/experiments/day20"), chromedp.WaitVisible(chromedp.CSS(`[data-record]`)))
	if got := eval[string](t, ctx, `[...document.querySelectorAll('[data-next]')].map(a => a.dataset.next).join(',')`); got != "day21" {
		t.Errorf("day20's page: next %q, want day21", got)
	}
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`#against-form select`), "day21"),
		chromedp.Submit(chromedp.CSS(`#against-form`)), chromedp.WaitVisible(chromedp.CSS(`#arms-held`)))
	if got := eval[string](t, ctx, `location.pathname`); got != "/ui/experiments/day20/against/day21" {
		t.Fatalf("the form led to %s", got)
	}
	if got := eval[int](t, ctx, `document.querySelectorAll('[data-difference="definition.change"]').length`); got != 1 {
		t.Errorf("rows for definition.change: %d, want 1", got)
	}
	if got := eval[int](t, ctx, `document.querySelectorAll('#baseline-shift [data-shift]').length`); got == 0 {
		t.Error("no baseline metric rows")
	}
	if got := eval[string](t, ctx, `[...document.querySelectorAll('#arms-held [data-arm]')].map(r => r.dataset.arm).join(',')`); got != "affinity,oversized,priority,sharing" {
		t.Errorf("arms held: %q", got)
	}
	if got := eval[int](t, ctx, `document.querySelectorAll('#arms-held [data-held]').length`); got != 4 {
		t.Errorf("arms with data-held: %d", got)
	}

	// An experiment known only by a record imported from elsewhere (day21's, renamed day19):
	// listed as imported, its page the comparison as recorded, with no run or pod to open.
	rec, err := db.Record(context.Background(), "day21", "")
	if err != nil {
		t.Fatal(err)
	}
	rec.Experiment, rec.Previous = "day19", nil
	if rec.Digest, err = record.Digest(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ImportRecord(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Navigate(srv.URL+"/ui/"), chromedp.WaitVisible(chromedp.CSS(`table.data`)))
	if got := eval[string](t, ctx, `[...document.querySelectorAll('[data-imported]')].map(e => e.closest('tr').querySelector('th a').textContent).join(',')`); got != "day19" {
		t.Errorf("experiments marked imported: %q, want day19", got)
	}
	do(t, ctx, chromedp.Navigate(srv.URL+"/ui/experiments/day19"), chromedp.WaitVisible(chromedp.CSS(`[data-imported]`)))
	if got := eval[string](t, ctx, `document.querySelector('[data-imported]').dataset.imported`); got != rec.Digest {
		t.Errorf("imported from %q, want %s", got, rec.Digest)
	}
	var want []string
	for _, a := range rec.Comparison.Arms {
		if !a.Baseline {
			want = append(want, a.Arm+"="+a.Verdict)
		}
	}
	if got := eval[string](t, ctx, `[...document.querySelectorAll('.arms [data-verdict]')].map(b => b.dataset.arm + '=' + b.dataset.verdict).join(',')`); got != strings.Join(want, ",") || got == "" {
		t.Errorf("imported page's verdicts %q, want the recorded %q", got, strings.Join(want, ","))
	}
	if got := eval[int](t, ctx, `document.querySelectorAll('span.run-link[data-run]').length`); got == 0 {
		t.Error("the recorded runs are not listed")
	}
	if got := eval[int](t, ctx, `document.querySelectorAll('a.run-link, a.interval-link, .arms a[data-arm]').length`); got != 0 {
		t.Errorf("%d links to runs or arms that are not stored here", got)
	}
	if got := eval[int](t, ctx, `document.querySelectorAll('svg .interval').length`); got == 0 {
		t.Error("no forest intervals drawn from the recorded comparison")
	}
}

// /ui/labels lists the labels the window's pods place on: documented or not (a registry names
// one of the two), and a node whose value drifted in the window.
func TestLabelsPage(t *testing.T) {
	ctx := browser(t)
	db := pgtest.DB(t)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var envs []*events.Envelope
	add := func(kind events.Kind, id string, at time.Time, pod *events.PodRef, node string, payload any) {
		b, err := events.Encode(&events.Envelope{V: events.Version, ID: id, Kind: kind, Cluster: "lab", Source: "test", OccurredAt: at, ObservedAt: at, Pod: pod, Node: node, Payload: payload})
		if err != nil {
			t.Fatal(err)
		}
		e, err := events.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, e)
	}
	add(events.KindNodeStatus, "node/1", t0, nil, "gpu-1", &events.NodeStatus{Ready: true, Labels: map[string]string{"accelerator": "nvidia-gpu", "gpu-model": "H100"}})
	add(events.KindNodeStatus, "node/2", t0, nil, "gpu-2", &events.NodeStatus{Ready: true, Labels: map[string]string{"gpu-model": "A100"}})
	add(events.KindPodStatus, "pod/1", t0.Add(time.Minute), &events.PodRef{Namespace: "ai-lab", Name: "infer-1", UID: "00000000-0000-4000-8000-000000000001"}, "",
		&events.PodStatus{Phase: events.PhaseRunning, NodeName: "gpu-1", CreationTimestamp: &t0,
			Placement: &events.Placement{Required: []string{"accelerator In (nvidia-gpu)"}, Preferred: []string{"50: gpu-model In (H100)"}}})
	add(events.KindNodeStatus, "node/2b", t0.Add(2*time.Minute), nil, "gpu-2", &events.NodeStatus{Ready: true, Labels: map[string]string{"gpu-model": "A100-80GB"}})
	add(events.KindPodStatus, "pod/2", t0.Add(time.Minute), &events.PodRef{Namespace: "ai-lab", Name: "dra-1", UID: "00000000-0000-4000-8000-000000000002"}, "",
		&events.PodStatus{Phase: events.PhaseRunning, NodeName: "gpu-h200-0", CreationTimestamp: &t0,
			Claims: []events.PodClaim{{Name: "gpu", Selectors: []string{`device.attributes["gpu.nvidia.com"].productName == "NVIDIA H200"`},
				Devices: []events.ClaimDevice{{Node: "gpu-h200-0", Attributes: map[string]string{"gpu.nvidia.com/productName": "NVIDIA H200"}}}}}})
	add(events.KindLabelRegistry, "label_registry/platform/node-labels/7", t0, nil, "", &events.LabelRegistry{Namespace: "platform", Name: "node-labels",
		Labels: []events.LabelDoc{{Key: "accelerator", Source: "GPU feature discovery", Owner: "platform-gpu", Use: "hard", Registry: "platform/node-labels"}}})
	if _, err := db.Append(context.Background(), envs, nil); err != nil {
		t.Fatal(err)
	}
	web, err := ui.New(db, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := apitest.Serve(t, db, api.WithUI(web))
	do(t, ctx, chromedp.Navigate(srv.URL+"/ui/labels?from=2026-12-01T08:00:00Z&to=2026-12-01T10:00:00Z"), chromedp.WaitVisible(chromedp.CSS(`#labels`)))
	got := eval[string](t, ctx, `[...document.querySelectorAll('#labels [data-label]')].map(r => r.dataset.label + ':' + r.dataset.kind + ':' + r.dataset.documented + ':' + r.dataset.drift).join(' ')`)
	if want := "accelerator:node_label:true:0 gpu-model:node_label:false:1 gpu.nvidia.com/productName:device_attribute:false:0"; got != want {
		t.Errorf("label rows %q, want %q", got, want)
	}
	if got := eval[string](t, ctx, `document.querySelector('[data-drift-node]')?.textContent ?? ''`); got != "gpu-2: A100 → A100-80GB" {
		t.Errorf("drift %q", got)
	}
}
