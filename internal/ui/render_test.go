package ui_test

import (
	"net/http"
	neturl "net/url"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pipetest"
)

// A 1,000-pod run in the browser: the figure reported is the time from navigation start to the
// first frame drawn after the DOM was parsed with every lane in it (ui.js records it), median
// of three loads, beside the server's share (time to the last byte of the page). It is a
// report, not an assertion on time; the test checks that every lane was drawn.
//
//	go test ./internal/ui -run TestThousandPodRunRender -v
func TestThousandPodRunRender(t *testing.T) {
	ctx := browser(t)
	p := pipetest.Start(t)
	cfg := eventgen.Default()
	cfg.Runs, cfg.PodsPerArm = 1, 250
	p.Publish(eventgen.Generate(cfg))
	srv := serve(t, p)
	url := srv.URL + "/ui/experiments/day20/runs/1"

	start := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Logf("server: GET run page %s in %s (%d bytes)", resp.Status, time.Since(start).Round(time.Millisecond), resp.ContentLength)

	var drawn, served []float64
	var lanes, pods int
	for range 3 {
		do(t, ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`#timeline`)))
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.documentElement.dataset.drawnMs`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatal(err)
		}
		drawn = append(drawn, eval[float64](t, ctx, `parseFloat(document.documentElement.dataset.drawnMs)`))
		served = append(served, eval[float64](t, ctx, `performance.getEntriesByType('navigation')[0].responseEnd`))
		lanes = eval[int](t, ctx, `document.querySelectorAll('[data-pod-uid]').length`)
		pods = eval[int](t, ctx, `document.querySelectorAll('#pods tbody tr').length`)
	}
	if lanes < 1000 || lanes != pods {
		t.Fatalf("%d lanes and %d table rows, want the same, at least 1000", lanes, pods)
	}
	slices.Sort(drawn)
	slices.Sort(served)
	t.Logf("1,000-pod run (%d lanes): DOM ready and lanes drawn %.0f ms after navigation start (median of 3: %.0f / %.0f / %.0f ms); page received by %.0f ms",
		lanes, drawn[1], drawn[0], drawn[1], drawn[2], served[1])
	screenshot(t, ctx, "run-1000-pods")
}

// A 1,000-pod workload window in the browser: an unlabelled Deployment of 100 replicas through
// nine rollouts, a drain and a node failure (~1,050 pods in ten revisions, eleven disruptions).
// As TestThousandPodRunRender, the figure is the time from navigation start to the first frame
// drawn with every lane in the DOM, median of three loads, beside the server's share; the test
// checks that every lane, revision group and disruption band was drawn.
//
//	go test ./internal/ui -run TestThousandPodWorkloadRender -v
func TestThousandPodWorkloadRender(t *testing.T) {
	ctx := browser(t)
	p := pipetest.Start(t)
	cfg := eventgen.DefaultWorkload()
	cfg.Replicas, cfg.Rollouts, cfg.Drains, cfg.NodeFailures = 100, 9, 1, 1
	cfg.Gap, cfg.RequestsEvery = 5*time.Minute, 30*time.Second
	envs, did := eventgen.Workload(cfg)
	p.Publish(envs)
	srv := serve(t, p)
	end := cfg.Start.Add(time.Duration(len(did)+1) * cfg.Gap)
	url := srv.URL + "/ui/workloads/prod/Deployment/infer?" + neturl.Values{
		"from": {cfg.Start.Add(-time.Minute).Format(time.RFC3339)}, "to": {end.Add(time.Minute).Format(time.RFC3339)}}.Encode()

	start := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Logf("server: GET workload page %s in %s", resp.Status, time.Since(start).Round(time.Millisecond))

	var drawn, served []float64
	var lanes, pods, groups, bands int
	for range 3 {
		do(t, ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`#timeline`)))
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.documentElement.dataset.drawnMs`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatal(err)
		}
		drawn = append(drawn, eval[float64](t, ctx, `parseFloat(document.documentElement.dataset.drawnMs)`))
		served = append(served, eval[float64](t, ctx, `performance.getEntriesByType('navigation')[0].responseEnd`))
		lanes = eval[int](t, ctx, `document.querySelectorAll('[data-pod-uid]').length`)
		pods = eval[int](t, ctx, `document.querySelectorAll('#pods tbody tr').length`)
		groups = eval[int](t, ctx, `document.querySelectorAll('#timeline g.group[data-revision]').length`)
		bands = eval[int](t, ctx, `document.querySelectorAll('#timeline g.disruption[data-disruption-kind]').length`)
	}
	if lanes < 1000 || lanes != pods || groups != cfg.Rollouts+1 || bands != len(did) {
		t.Fatalf("%d lanes and %d table rows (want the same, at least 1000), %d revision groups (want %d), %d disruptions (want %d)",
			lanes, pods, groups, cfg.Rollouts+1, bands, len(did))
	}
	slices.Sort(drawn)
	slices.Sort(served)
	t.Logf("1,000-pod workload (%d lanes, %d revisions, %d disruptions): DOM ready and lanes drawn %.0f ms after navigation start (median of 3: %.0f / %.0f / %.0f ms); page received by %.0f ms",
		lanes, groups, bands, drawn[1], drawn[0], drawn[1], drawn[2], served[1])
	screenshot(t, ctx, "workload-1000-pods")
}
