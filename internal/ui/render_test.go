package ui_test

import (
	"context"
	"fmt"
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

	load := timeLoads(t, ctx, url, "run page")
	lanes, pods := load.count["lanes"], load.count["pods"]
	if lanes < 1000 || lanes != pods {
		t.Fatalf("%d lanes and %d table rows, want the same, at least 1000", lanes, pods)
	}
	t.Logf("1,000-pod run (%d lanes): %s", lanes, load)
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

	load := timeLoads(t, ctx, url, "workload page",
		"groups", `document.querySelectorAll('#timeline g.group[data-revision]').length`,
		"bands", `document.querySelectorAll('#timeline g.disruption[data-disruption-kind]').length`)
	lanes, pods, groups, bands := load.count["lanes"], load.count["pods"], load.count["groups"], load.count["bands"]
	if lanes < 1000 || lanes != pods || groups != cfg.Rollouts+1 || bands != len(did) {
		t.Fatalf("%d lanes and %d table rows (want the same, at least 1000), %d revision groups (want %d), %d disruptions (want %d)",
			lanes, pods, groups, cfg.Rollouts+1, bands, len(did))
	}
	t.Logf("1,000-pod workload (%d lanes, %d revisions, %d disruptions): %s", lanes, groups, bands, load)
	screenshot(t, ctx, "workload-1000-pods")
}

// loads is what three loads of a chart page measured: the time from navigation start to the
// first frame drawn with every lane in the DOM (ui.js records it), the time the page was
// received by, and counts of what was drawn (the last load's).
type loads struct {
	drawn, served []float64
	count         map[string]int
}

func (l loads) String() string {
	return fmt.Sprintf("DOM ready and lanes drawn %.0f ms after navigation start (median of 3: %.0f / %.0f / %.0f ms); page received by %.0f ms",
		l.drawn[1], l.drawn[0], l.drawn[1], l.drawn[2], l.served[1])
}

// timeLoads asks the server for url once (its time logged), then loads it three times in the
// browser, counting the lanes, the pods table's rows and what each extra (name, expression)
// pair counts.
func timeLoads(t *testing.T, ctx context.Context, url, page string, extra ...string) loads {
	t.Helper()
	start := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Logf("server: GET %s %s in %s (%d bytes)", page, resp.Status, time.Since(start).Round(time.Millisecond), resp.ContentLength)
	counts := append([]string{
		"lanes", `document.querySelectorAll('[data-pod-uid]').length`,
		"pods", `document.querySelectorAll('#pods tbody tr').length`,
	}, extra...)
	l := loads{count: map[string]int{}}
	for range 3 {
		do(t, ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`#timeline`)))
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.documentElement.dataset.drawnMs`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatal(err)
		}
		l.drawn = append(l.drawn, eval[float64](t, ctx, `parseFloat(document.documentElement.dataset.drawnMs)`))
		l.served = append(l.served, eval[float64](t, ctx, `performance.getEntriesByType('navigation')[0].responseEnd`))
		for i := 0; i+1 < len(counts); i += 2 {
			l.count[counts[i]] = eval[int](t, ctx, counts[i+1])
		}
	}
	slices.Sort(l.drawn)
	slices.Sort(l.served)
	return l
}
