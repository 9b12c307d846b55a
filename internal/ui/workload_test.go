package ui_test

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pipetest"
	"github.com/schedlens/schedlens/internal/report"
)

// hooked is what a page's data-* hooks say about one disruption.
type hooked struct {
	ID      string  `json:"id"`
	Kind    string  `json:"kind"`
	Seconds float64 `json:"seconds"`
}

// readHooked reads the disruptions of the elements matched by selector (data-disruption,
// data-disruption-kind, data-interruption-seconds), in document order.
func readHooked(selector string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => ({id: e.dataset.disruption || '', kind: e.dataset.disruptionKind,
		seconds: parseFloat(e.dataset.interruptionSeconds)}))`, selector)
}

// The workload views in a real browser over an unlabelled Deployment taken through a rollout, a
// drain and a node failure (eventgen.Workload, through NATS and the correlator): the list shows
// it with the API's figures; the disruptions page lists the three with the API's kinds and
// interruption seconds and links each to the workload's page around it; the workload page
// draws the three as bands with their kinds and seconds, its two revisions as lane groups, a
// lane per pod and the desired-vs-Ready lines, links its trace and before/after, and zooms by
// keyboard; bad windows are HTML 400 pages.
func TestBrowserWorkloads(t *testing.T) {
	ctx := browser(t)
	cfg := eventgen.DefaultWorkload()
	envs, did := eventgen.Workload(cfg)
	p := pipetest.Start(t)
	p.Publish(envs)
	srv := serve(t, p)
	q := url.Values{"from": {cfg.Start.Add(-time.Minute).Format(time.RFC3339)}, "to": {cfg.Start.Add(10 * time.Minute).Format(time.RFC3339)}}.Encode()

	var page api.DisruptionPage
	apitest.GetJSON(t, srv.URL+"/v1/disruptions?"+q, &page)
	var win report.WorkloadWindow
	apitest.GetJSON(t, srv.URL+"/v1/workloads/prod/Deployment/infer?"+q, &win)
	if len(page.Disruptions) != len(did) || len(did) != 3 || len(win.Revisions) != 2 {
		t.Fatalf("the API finds %d disruptions (generated %d, want 3) and %d revisions (want 2): the test would prove nothing", len(page.Disruptions), len(did), len(win.Revisions))
	}
	var newest []hooked // as the API lists them
	for _, d := range page.Disruptions {
		newest = append(newest, hooked{d.ID, d.Kind, d.Workloads[0].Interruption.Seconds})
	}
	oldest := slices.Clone(newest)
	slices.Reverse(oldest)
	approx := cmpopts.EquateApprox(0, 0.0005)

	t.Run("workloads", func(t *testing.T) {
		var list api.WorkloadPage
		apitest.GetJSON(t, srv.URL+"/v1/workloads?"+q, &list)
		do(t, ctx, chromedp.Navigate(srv.URL+"/ui/workloads?"+q), chromedp.WaitVisible(chromedp.CSS(`#workloads`)))
		type row struct {
			Workload string  `json:"workload"`
			Seconds  float64 `json:"seconds"`
		}
		got := eval[[]row](t, ctx, `[...document.querySelectorAll('#workloads tr[data-workload]')].map(r => ({workload: r.dataset.workload, seconds: parseFloat(r.dataset.interruptionSeconds)}))`)
		var want []row
		for _, w := range list.Workloads {
			want = append(want, row{w.WorkloadRef.String(), w.InterruptionSeconds})
		}
		if diff := cmp.Diff(want, got, approx); diff != "" {
			t.Errorf("workload rows (-API +page):\n%s", diff)
		}
		screenshot(t, ctx, "workloads")
		// The kind filter is a GET form: Job has no workload here.
		do(t, ctx, chromedp.Navigate(srv.URL+"/ui/workloads?kind=job&"+q), chromedp.WaitVisible(chromedp.CSS(`main`)))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-workload]').length`); n != 0 {
			t.Errorf("kind=job lists %d workloads, want none", n)
		}
	})

	t.Run("disruptions", func(t *testing.T) {
		do(t, ctx, chromedp.Navigate(srv.URL+"/ui/disruptions?"+q), chromedp.WaitVisible(chromedp.CSS(`#disruptions`)))
		got := eval[[]hooked](t, ctx, readHooked(`#disruptions tbody tr`))
		if diff := cmp.Diff(newest, got, approx); diff != "" {
			t.Errorf("disruption rows, newest first (-API +page):\n%s", diff)
		}
		screenshot(t, ctx, "disruptions")
		// Each links to the workload's page from 5 minutes before it to 5 minutes after it.
		hrefs := eval[[]string](t, ctx, `[...document.querySelectorAll('#disruptions [data-workload] a')].map(a => a.getAttribute('href'))`)
		if len(hrefs) != 3 {
			t.Fatalf("%d workload links, want 3", len(hrefs))
		}
		d := page.Disruptions[0]
		link, err := url.Parse(hrefs[0])
		if err != nil {
			t.Fatal(err)
		}
		from, _ := time.Parse(time.RFC3339Nano, link.Query().Get("from"))
		to, _ := time.Parse(time.RFC3339Nano, link.Query().Get("to"))
		if link.Path != "/ui/workloads/prod/Deployment/infer" || d.Start.Sub(from) < 5*time.Minute || d.Start.Sub(from) > 5*time.Minute+time.Second ||
			d.End == nil || to.Sub(*d.End) < 5*time.Minute || to.Sub(*d.End) > 5*time.Minute+time.Second {
			t.Errorf("the newest disruption (%s → %v) links to %s", d.Start, d.End, hrefs[0])
		}
		do(t, ctx, chromedp.Click(chromedp.CSS(`#disruptions [data-workload] a`)), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
		if got := eval[string](t, ctx, `document.querySelector('.workload-view').dataset.workload`); got != "prod/Deployment/infer" {
			t.Errorf("the link opens the page of %q", got)
		}
	})

	t.Run("workload", func(t *testing.T) {
		do(t, ctx, chromedp.Navigate(srv.URL+"/ui/workloads/prod/deployment/infer?"+q), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
		if got := eval[string](t, ctx, `document.querySelector('[data-workload]').dataset.workload`); got != "prod/Deployment/infer" {
			t.Errorf("data-workload %q", got)
		}
		bands := eval[[]hooked](t, ctx, readHooked(`#timeline g.disruption`))
		if diff := cmp.Diff(oldest, bands, approx); diff != "" {
			t.Errorf("disruption flags, in the order they began (-API +page):\n%s", diff)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('#timeline rect.disruption-band').length`); n != 3 {
			t.Errorf("%d disruption bands, want 3", n)
		}
		rows := eval[[]hooked](t, ctx, readHooked(`#workload-disruptions tbody tr[data-disruption-kind]`))
		if diff := cmp.Diff(oldest, rows, approx); diff != "" {
			t.Errorf("disruption rows (-API +page):\n%s", diff)
		}
		var wantRevs []string
		wantLanes := map[string][]string{}
		for _, r := range win.Revisions {
			wantRevs = append(wantRevs, r.Hash)
		}
		for _, p := range win.Pods {
			wantLanes[p.Revision] = append(wantLanes[p.Revision], p.Pod.UID)
		}
		gotRevs := eval[[]string](t, ctx, `[...document.querySelectorAll('#timeline g.group[data-revision]')].map(g => g.dataset.revision)`)
		if diff := cmp.Diff(wantRevs, gotRevs); diff != "" {
			t.Errorf("revision groups, in the order they first ran (-API +page):\n%s", diff)
		}
		gotLanes := eval[map[string][]string](t, ctx, `Object.fromEntries([...document.querySelectorAll('#timeline g.group[data-revision]')].map(g =>
			[g.dataset.revision, [...g.querySelectorAll('[data-pod-uid]')].map(l => l.dataset.podUid)]))`)
		if diff := cmp.Diff(wantLanes, gotLanes); diff != "" {
			t.Errorf("lanes by revision (-API +page):\n%s", diff)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('#timeline .interruption').length`); n == 0 {
			t.Error("no interruption window drawn")
		}
		if got := eval[[]string](t, ctx, `[...document.querySelectorAll('#counts [data-series]')].map(p => p.dataset.series).sort()`); !slices.Equal(got, []string{"desired", "ready"}) {
			t.Errorf("desired-vs-Ready lines %q", got)
		}
		for _, sel := range []string{`[data-trace-link]`, `[data-compare-link]`} {
			href := eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%q).getAttribute('href')`, sel))
			resp, err := http.Get(srv.URL + href)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(href, "/v1/workloads/prod/Deployment/infer/") {
				t.Errorf("%s %s: %s", sel, href, resp.Status)
			}
		}
		screenshot(t, ctx, "workload")

		// Keyboard: + on the focused chart zooms in to the middle half, as times (the script
		// swaps the view in place).
		before := eval[string](t, ctx, `document.getElementById('timeline').dataset.origin`)
		do(t, ctx, chromedp.Focus(chromedp.CSS(`[data-zoomable]`)), chromedp.KeyEvent("+"))
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('timeline').dataset.origin !== `+fmt.Sprintf("%q", before), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("zoom in by keyboard: %v", err)
		}
		loc, err := url.Parse(eval[string](t, ctx, `location.href`))
		if err != nil {
			t.Fatal(err)
		}
		from, err1 := time.Parse(time.RFC3339Nano, loc.Query().Get("from"))
		to, err2 := time.Parse(time.RFC3339Nano, loc.Query().Get("to"))
		if err1 != nil || err2 != nil || math.Abs(to.Sub(from).Minutes()-5.5) > 0.01 {
			t.Errorf("zoomed to %s, want the middle 5.5 minutes of the 11", loc)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for path, want := range map[string]int{
			"/ui/workloads?from=yesterday":                 http.StatusBadRequest,
			"/ui/workloads?from=-40d":                      http.StatusBadRequest,
			"/ui/disruptions?from=-1h&to=-2h":              http.StatusBadRequest,
			"/ui/workloads/prod/Deployment/infer?to=later": http.StatusBadRequest,
			"/ui/workloads/prod/Deployment/nothing?" + q:   http.StatusNotFound,
			"/ui/disruptions?from=-6h&to=now":              http.StatusOK,
			"/ui/workloads?from=-2d":                       http.StatusOK,
		} {
			checkPage(t, srv.URL+path, want)
		}
		do(t, ctx, chromedp.Navigate(srv.URL+"/ui/workloads?from=yesterday"), chromedp.WaitVisible(chromedp.CSS(`.error`)))
		if msg := eval[string](t, ctx, `document.querySelector('.error').textContent`); !strings.Contains(msg, "from:") {
			t.Errorf("the 400 page says %q; want which bound is wrong", msg)
		}
	})
}
