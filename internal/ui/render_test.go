package ui_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	neturl "net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pipetest"
)

// A 1,000-pod run in the browser (4 arms × 250 pods, an unschedulable pod and 250 preempted
// outsiders: 1,251 lanes). The run page draws only the lanes on screen (its first 100 lanes
// inline; ui.js fetches the others' lanes after the first frame and draws them as they near the
// screen), so the figure reported is the time from navigation start to the first frame with every
// lane on screen drawn: ui.js records performance.now() in the requestAnimationFrame callback of
// the first frame after the page is parsed (data-drawn-ms; that frame's style, layout and paint
// follow it, and "frame done" is a task queued from the callback, after them), median of three
// loads, beside the time the page was received by and the time the other lanes were in. It is a
// report, not an assertion on time. The test checks that no chunk on screen was left undrawn at
// that frame, that scrolling through the chart draws every lane, one per row of the pods table,
// that a live update keeps focus on a lane far down the chart, and that without script every
// lane is drawn by the run page or by a page its chunks link to.
//
//	go test ./internal/ui -run TestThousandPodRunRender -v
func TestThousandPodRunRender(t *testing.T) {
	runRender(t, 250, "1,000", true)
}

// TestFiveThousandPodRunRender is TestThousandPodRunRender at 5,000 pods (4 arms × 1,250 pods:
// 6,251 lanes); it leaves out the screenshot (too tall), the live update and the pages without
// script (124 of them), which the 1,000-pod test walks.
//
//	go test ./internal/ui -run TestFiveThousandPodRunRender -v
func TestFiveThousandPodRunRender(t *testing.T) {
	runRender(t, 1250, "5,000", false)
}

// runRender stores a run of 4 arms × podsPerArm pods, times its page and checks what is drawn;
// walk also walks the pages a browser without script reaches and takes a screenshot.
func runRender(t *testing.T, podsPerArm int, label string, walk bool) {
	ctx := browser(t)
	p := pipetest.Start(t)
	cfg := eventgen.Default()
	cfg.Runs, cfg.PodsPerArm = 1, podsPerArm
	envs := eventgen.Generate(cfg)
	// Held back: the last request about a pod of the last arm (far down the chart), published
	// once the page is open (live, below).
	held := -1
	for i, e := range envs {
		if e.Kind == events.KindRequest && strings.HasPrefix(e.Pod.Name, "day20-sharing-") {
			held = i
		}
	}
	if held < 0 {
		t.Fatal("the generated run has no request about a pod of arm sharing to hold back")
	}
	late := envs[held]
	p.Publish(slices.Delete(slices.Clone(envs), held, held+1))
	srv := serve(t, p)
	url := srv.URL + "/ui/experiments/day20/runs/1"
	want := 4 * podsPerArm

	load := timeLoads(t, ctx, url, "run page",
		"all", `+document.getElementById('timeline').dataset.lanes`,
		"pending", `+document.documentElement.dataset.drawnPending`,
		"drawn", `+document.documentElement.dataset.drawnLanes`)
	if load.count["pending"] != 0 || load.count["drawn"] == 0 {
		t.Fatalf("at the first frame: %d lanes drawn, %d chunks on screen not drawn (want some and none)", load.count["drawn"], load.count["pending"])
	}
	t.Logf("%s-pod run (%d lanes): %s; %d lanes in the DOM at that frame", label, load.count["all"], load, load.count["drawn"])
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.documentElement.dataset.lanesLoaded`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the chunks' lanes were not fetched: %v", err)
	}
	t.Logf("the other chunks' lanes (%d chunks) fetched by %.0f ms after navigation start (the last load)",
		eval[int](t, ctx, `+document.documentElement.dataset.lanesLoaded`), eval[float64](t, ctx, `+document.documentElement.dataset.lanesLoadedMs`))
	if walk { // 5,000 lanes are too tall for a screenshot of the whole page
		screenshot(t, ctx, fmt.Sprintf("run-%d-pods", want))
	}

	// Scrolling through the chart draws every lane: the same pods as the table's rows.
	lanes := eval[[]string](t, ctx, scrollLanes, chromedp.EvalAwaitPromise)
	if inDOM := eval[int](t, ctx, `document.querySelectorAll('[data-pod-uid]').length`); inDOM > 10*runChunk {
		t.Errorf("%d lanes in the DOM after scrolling through, want the few screens around the window", inDOM)
	}
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll('#pods tbody tr')].map(r => r.dataset.rowUid)`)
	checkLanes(t, "scrolled through", lanes, rows, load.count["all"], want)

	if walk {
		// Live: the run changes while a lane far down the chart has focus; the page fetches its
		// view and then the chunks' lanes again, and the same lane, drawn again, keeps focus.
		uid := late.Pod.UID
		at := eval[int](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('#pods tbody tr')].findIndex(r => r.dataset.rowUid === %q) + 1`, uid))
		if at <= liveLanes {
			t.Fatalf("the held-back pod's lane is %d of the chart, want one left to the script (past %d)", at, liveLanes)
		}
		focused := `document.activeElement && document.activeElement.closest('[data-pod-uid]') && document.activeElement.closest('[data-pod-uid]').dataset.podUid || ''`
		if got := eval[string](t, ctx, fmt.Sprintf(`(async () => {
			const g = [...document.querySelectorAll('g.lane-chunk')].find(g => { const [a, b] = g.dataset.lanes.split('-').map(Number); return a <= %d && %d <= b; });
			g.scrollIntoView();
			await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
			document.querySelector('[data-pod-uid=%q] a').focus();
			return %s;
		})()`, at, at, uid, focused), chromedp.EvalAwaitPromise); got != uid {
			t.Fatalf("focus on %q, want the lane of %s", got, uid)
		}
		p.Publish([]*events.Envelope{late})
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`+document.documentElement.dataset.refreshed > 0`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("the live page did not fetch its view again: %v", err)
		}
		if got := eval[string](t, ctx, focused); got != uid {
			t.Errorf("after the live update, focus on %q, want the lane of %s", got, uid)
		}

		lanes := noScriptLanes(t, ctx, url)
		checkLanes(t, "without script", lanes, rows, load.count["all"], want)
	}
}

// liveLanes is timeline.go's: a run page draws its first 100 lanes inline.
const liveLanes = 100

// runChunk is lanes.go's: lanes are drawn 50 at a time.
const runChunk = 50

// scrollLanes scrolls the page, its chunks' lanes fetched (runRender waits for that), through the
// chart a screen at a time, two frames each (ui.js draws the lanes within a screen of the window
// on the frame after a scroll), collecting the pod of every lane in the DOM.
const scrollLanes = `(async () => {
	const seen = new Set();
	const end = document.getElementById('timeline').getBoundingClientRect().bottom + scrollY;
	for (let y = 0; y <= end; y += innerHeight) {
		scrollTo(0, y);
		await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
		document.querySelectorAll('[data-pod-uid]').forEach(l => seen.add(l.dataset.podUid));
	}
	scrollTo(0, 0);
	return [...seen];
})()`

// checkLanes fails unless lanes are the table's rows, one each, all of the chart's lanes and
// at least want of them.
func checkLanes(t *testing.T, how string, lanes, rows []string, all, want int) {
	t.Helper()
	slices.Sort(lanes)
	slices.Sort(rows)
	if len(lanes) < want || len(lanes) != all || !slices.Equal(lanes, rows) {
		t.Errorf("%s: %d lanes drawn, the chart has %d, the table %d rows (want the same pods, at least %d)", how, len(lanes), all, len(rows), want)
	}
}

// noScriptLanes loads url in a tab without script, and then every page its chunks of lanes
// link to, collecting the pod of every lane drawn; it also checks the pods table is there.
func noScriptLanes(t *testing.T, ctx context.Context, url string) []string {
	t.Helper()
	ctx, cancel := chromedp.NewContext(ctx)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		t.Fatal(err)
	}
	const read = `({lanes: [...document.querySelectorAll('[data-pod-uid]')].map(l => l.dataset.podUid),
		links: [...document.querySelectorAll('g.lane-chunk[data-pending] a')].map(a => a.href.baseVal || a.getAttribute('href')),
		rows: document.querySelectorAll('#pods tbody tr').length})`
	type answer struct {
		Lanes []string `json:"lanes"`
		Links []string `json:"links"`
		Rows  int      `json:"rows"`
	}
	do(t, ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`#timeline`)))
	first := eval[answer](t, ctx, read)
	if first.Rows == 0 || len(first.Links) == 0 {
		t.Fatalf("without script: %d rows in the pods table, %d chunks linked (want both)", first.Rows, len(first.Links))
	}
	seen := map[string]bool{}
	for _, uid := range first.Lanes {
		seen[uid] = true
	}
	base, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	for _, link := range first.Links {
		ref, err := neturl.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		do(t, ctx, chromedp.Navigate(base.ResolveReference(ref).String()), chromedp.WaitReady(chromedp.CSS(`#timeline`)))
		for _, uid := range eval[answer](t, ctx, read).Lanes {
			seen[uid] = true
		}
	}
	t.Logf("without script: the run page and the %d pages its chunks link to draw %d lanes", len(first.Links), len(seen))
	return slices.Collect(maps.Keys(seen))
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
	drawn, done, served []float64
	count               map[string]int
}

func (l loads) String() string {
	return fmt.Sprintf("DOM ready and lanes on screen drawn %.0f ms after navigation start (median of 3: %.0f / %.0f / %.0f ms); frame done by %.0f ms; page received by %.0f ms",
		l.drawn[1], l.drawn[0], l.drawn[1], l.drawn[2], l.done[1], l.served[1])
}

// settled is true once a page has nothing left to fetch after its first frame: a chart with
// no lanes to fetch, or its lanes fetched.
const settled = `(() => { const c = document.getElementById('timeline'); return !c || !c.dataset.lanesUrl || !!document.documentElement.dataset.lanesLoaded; })()`

// timeLoads asks the server for url once (its time logged), then loads it three times in the
// browser, each once the one before has settled, counting the lanes, the pods table's rows and
// what each extra (name, expression) pair counts.
func timeLoads(t *testing.T, ctx context.Context, url, page string, extra ...string) loads {
	t.Helper()
	start := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	size, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server: GET %s %s in %s (%d bytes)", page, resp.Status, time.Since(start).Round(time.Millisecond), size)
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
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!!document.documentElement.dataset.frameDoneMs`, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatal(err)
		}
		l.done = append(l.done, eval[float64](t, ctx, `parseFloat(document.documentElement.dataset.frameDoneMs)`))
		l.served = append(l.served, eval[float64](t, ctx, `performance.getEntriesByType('navigation')[0].responseEnd`))
		for i := 0; i+1 < len(counts); i += 2 {
			l.count[counts[i]] = eval[int](t, ctx, counts[i+1])
		}
		// Each load starts on a quiet server: the page's own fetch of the other chunks' lanes
		// (a whole second of the server's CPU at 5,000 pods) is let finish first, which a
		// navigation away would not stop on the server — the next load timed would share the two
		// cores with it, as no user's first look at a run does.
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](settled, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("the page's fetch of the other lanes did not finish: %v", err)
		}
	}
	slices.Sort(l.drawn)
	slices.Sort(l.done)
	slices.Sort(l.served)
	return l
}

// The lanes a run page's script fetches (the chart's data-lanes-url) are, chunk by chunk, the
// very markup the page drawing every lane inline draws, at the same place; the page itself
// carries none of them beyond the chunks it draws, and a placeholder for every other chunk.
func TestFetchedLanesAreThePageLanes(t *testing.T) {
	p := pipetest.Start(t)
	cfg := eventgen.Default()
	cfg.Runs, cfg.PodsPerArm = 1, 60 // 240 pods and 60 outsiders: lanes in chunks, some placeholders
	p.Publish(eventgen.Generate(cfg))
	srv := serve(t, p)
	base := srv.URL + "/ui/experiments/day20/runs/1"

	page := string(apitest.Get(t, base))
	url := regexp.MustCompile(`data-lanes-url="([^"]+)"`).FindStringSubmatch(page)
	if url == nil {
		t.Fatal("the run page's chart has no data-lanes-url")
	}
	if strings.Contains(page, "text/x-schedlens-lanes") {
		t.Error("the run page carries the lanes it leaves to the script")
	}
	placeholders := regexp.MustCompile(`<g class="lane-chunk" id="lanes-\d+" data-lanes="(\d+-\d+)" data-pending="">`).FindAllStringSubmatch(page, -1)
	lanes := string(apitest.Get(t, srv.URL+html.UnescapeString(url[1])))
	all := string(apitest.Get(t, base+"?lanes=1-"+regexp.MustCompile(`data-lanes="(\d+)"`).FindStringSubmatch(page)[1]))

	chunks := regexp.MustCompile(`(?s)<script type="text/x-schedlens-lanes" data-lanes="((\d+)-\d+)">(.*?)</script>`).FindAllStringSubmatch(lanes, -1)
	got := map[string]bool{}
	for _, c := range chunks {
		got[c[1]] = true
		inline := fmt.Sprintf(`<g class="lane-chunk" id="lanes-%s" data-lanes="%s">%s</g>`, c[2], c[1], c[3])
		if c[3] == "" || !strings.Contains(all, inline) {
			t.Errorf("chunk %s: its fetched lanes are not what the page drawing every lane draws there", c[1])
		}
	}
	if len(placeholders) == 0 || len(chunks) < len(placeholders) {
		t.Fatalf("%d placeholders on the page, %d chunks fetched (want some, and every one)", len(placeholders), len(chunks))
	}
	for _, ph := range placeholders {
		if !got[ph[1]] {
			t.Errorf("placeholder %s: no lanes fetched for it", ph[1])
		}
	}
	if drawn := regexp.MustCompile(`<g class="lane-chunk" id="lanes-\d+" data-lanes="\d+-\d+">`).FindAllString(all, -1); len(drawn) != len(chunks) {
		t.Errorf("%d chunks fetched, the page drawing every lane has %d", len(chunks), len(drawn))
	}
}
