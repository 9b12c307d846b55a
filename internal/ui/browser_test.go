package ui_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pipetest"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/testenv"
	"github.com/schedlens/schedlens/internal/ui"
)

// chromium is Debian's browser, which .ci/run installs.
const chromium = "/usr/bin/chromium"

// artifactDir is where the browser tests write their screenshots: artifacts/ui at the
// repository's root (gitignored), or $SCHEDLENS_ARTIFACTS.
func artifactDir(t testing.TB) string {
	dir := os.Getenv("SCHEDLENS_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "artifacts")
	}
	dir = filepath.Join(dir, "ui")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// browser starts headless Chromium with the flags this workplace requires: no sandbox, no
// proxy to reach and no name resolution except loopback.
func browser(t testing.TB) context.Context {
	t.Helper()
	path := chromium
	if _, err := os.Stat(path); err != nil {
		if p, err := exec.LookPath("chromium"); err == nil {
			path = p
		} else {
			testenv.Unavailable(t, "chromium not installed at %s (apt-get install chromium; .ci/run does)", chromium)
		}
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.Flag("proxy-server", "127.0.0.1:9"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"),
		chromedp.WindowSize(1400, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// serve runs the api with the UI over the pipeline's database.
func serve(t testing.TB, p *pipetest.Pipeline) *httptest.Server {
	t.Helper()
	web, err := ui.New(p.DB, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return apitest.Serve(t, p.DB, api.WithUI(web))
}

func screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(artifactDir(t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// do drives the browser with a deadline.
func do(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// eval evaluates a script expression in the page and decodes its value.
func eval[T any](t testing.TB, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// lane is what the run page says about one pod lane.
type lane struct {
	UID        string             `json:"uid"`
	Censored   *string            `json:"censored"`
	Milestones map[string]float64 `json:"milestones"`
	Order      []string           `json:"order"`
}

const readLanes = `[...document.querySelectorAll('[data-pod-uid]')].map(l => ({
	uid: l.dataset.podUid,
	censored: l.hasAttribute('data-censored') ? l.dataset.censored : null,
	milestones: Object.fromEntries([...l.querySelectorAll('[data-milestone]')].map(m => [m.dataset.milestone, parseFloat(m.dataset.t)])),
	order: [...l.querySelectorAll('[data-milestone]')].map(m => m.dataset.milestone),
}))`

const readArrows = `[...document.querySelectorAll('[data-preemptor]')].map(a => [a.dataset.preemptor, a.dataset.victim])`

const readBadges = `Object.fromEntries([...document.querySelectorAll('[data-arm][data-verdict]')].map(b => [b.dataset.arm, b.dataset.verdict]))`

// The UI in a real browser over a database filled by the real pipeline: every view renders,
// the run page has a lane per pod with its milestones in time order, the censored pods
// marked, the preemption arrows between the right pods, the verdict badges equal to the
// comparison JSON, the live page picks up new events, and screenshots of each view are written.
func TestBrowserViews(t *testing.T) {
	ctx := browser(t)
	p := pipetest.Start(t)
	all := eventgen.Generate(eventgen.Default())
	// Hold back one pod of run 3, to be published while its run page is open.
	var late, early []*events.Envelope
	lateUID := ""
	for _, env := range all {
		if lateUID == "" && env.Pod != nil && strings.HasPrefix(env.Pod.Name, "day20-sharing-r3-") {
			lateUID = env.Pod.UID
		}
		if lateUID != "" && env.PodUID() == lateUID {
			late = append(late, env)
		} else {
			early = append(early, env)
		}
	}
	p.Publish(early)
	srv := serve(t, p)

	var cmpJSON api.Comparison
	apitest.GetJSON(t, srv.URL+"/v1/experiments/day20/comparison", &cmpJSON)
	wantBadges := map[string]string{}
	for _, a := range cmpJSON.Arms {
		if !a.Baseline {
			wantBadges[a.Arm] = a.Verdict
		}
	}

	t.Run("experiments", func(t *testing.T) {
		do(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`table.data`)))
		got := eval[map[string]string](t, ctx, readBadges)
		if diff := cmp.Diff(wantBadges, got); diff != "" {
			t.Errorf("verdict badges (-comparison +page):\n%s", diff)
		}
		screenshot(t, ctx, "experiments")
	})

	t.Run("run timeline", func(t *testing.T) {
		var pods, everyone struct {
			Pods []align.Summary `json:"pods"`
		}
		apitest.GetJSON(t, srv.URL+"/v1/pods?experiment=day20&run=1&limit=1000", &pods)
		apitest.GetJSON(t, srv.URL+"/v1/pods?limit=1000", &everyone)
		do(t, ctx, chromedp.Navigate(srv.URL+"/ui/experiments/day20/runs/1"), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
		lanes := eval[[]lane](t, ctx, readLanes)
		arrows := eval[[][2]string](t, ctx, readArrows)
		byUID := map[string]lane{}
		for _, l := range lanes {
			byUID[l.UID] = l
		}
		inRun := map[string]bool{}
		censored := 0
		for _, s := range pods.Pods {
			inRun[s.Pod.UID] = true
			l, ok := byUID[s.Pod.UID]
			if !ok {
				t.Errorf("no lane for pod %s", s.Pod.Name)
				continue
			}
			checkLane(t, s, l)
			if len(s.Censored) > 0 {
				censored++
			}
		}
		if censored == 0 {
			t.Error("the run has no censored pod: the test would prove nothing")
		}
		var wantArrows [][2]string
		for _, s := range everyone.Pods {
			if s.PreemptedBy != nil && inRun[*s.PreemptedBy] {
				wantArrows = append(wantArrows, [2]string{*s.PreemptedBy, s.Pod.UID})
			}
		}
		if len(wantArrows) == 0 {
			t.Error("the run has no preemption: the test would prove nothing")
		}
		sortPairs(wantArrows)
		sortPairs(arrows)
		if diff := cmp.Diff(wantArrows, arrows); diff != "" {
			t.Errorf("preemption arrows [preemptor victim] (-timelines +page):\n%s", diff)
		}
		if want := len(pods.Pods) + len(wantArrows); len(lanes) != want {
			t.Errorf("%d lanes, want %d (the run's pods and their victims)", len(lanes), want)
		}
		traceHref := eval[string](t, ctx, `document.querySelector('[data-trace-link]').getAttribute('href')`)
		if !strings.HasSuffix(traceHref, "/v1/experiments/day20/runs/1/trace.json") {
			t.Errorf("trace link %q", traceHref)
		}
		// Disruptions come from the domain (workload.Detect over the run's pods): a numbered
		// flag each, the same as the table's rows; the run's preemptions among them.
		flags := eval[[]hooked](t, ctx, readHooked(`#timeline g.disruption`))
		rows := eval[[]hooked](t, ctx, readHooked(`#disruptions tbody tr`))
		if diff := cmp.Diff(rows, flags, cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("disruption flags (-table +chart):\n%s", diff)
		}
		if !slices.ContainsFunc(flags, func(h hooked) bool { return h.Kind == report.DisruptionPreemption && h.ID != "" }) {
			t.Errorf("no preemption among the run's disruptions %+v", flags)
		}
		screenshot(t, ctx, "run-timeline")

		// Keyboard: + on the focused chart zooms in (the script swaps the view in place).
		before := eval[string](t, ctx, `document.getElementById('timeline').dataset.to`)
		do(t, ctx, chromedp.Focus(chromedp.CSS(`[data-zoomable]`)), chromedp.KeyEvent("+"))
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('timeline').dataset.to !== `+fmt.Sprintf("%q", before), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Errorf("zoom in by keyboard: %v", err)
		}
		after := eval[string](t, ctx, `document.getElementById('timeline').dataset.to`)
		loc := eval[string](t, ctx, `location.href`)
		if before == after || !strings.Contains(loc, "to=") {
			t.Errorf("zoom in by keyboard: window end %s → %s, location %s", before, after, loc)
		}

		// The arm filter keeps that arm's lanes and their victims.
		do(t, ctx, chromedp.Navigate(srv.URL+"/ui/experiments/day20/runs/1?arm=control"), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
		filtered := eval[[]lane](t, ctx, readLanes)
		n := 0
		for _, s := range pods.Pods {
			if s.Experiment.Arm != nil && *s.Experiment.Arm == "control" {
				n++
			}
		}
		if len(filtered) != n {
			t.Errorf("arm=control shows %d lanes, want %d", len(filtered), n)
		}
	})

	t.Run("experiment", func(t *testing.T) {
		do(t, ctx, chromedp.Navigate(srv.URL+"/ui/experiments/day20"), chromedp.WaitVisible(chromedp.CSS(`#forest`)))
		got := eval[map[string]string](t, ctx, readBadges)
		intervals := eval[int](t, ctx, `document.querySelectorAll('[data-interval-arm]').length`)
		if diff := cmp.Diff(wantBadges, got); diff != "" {
			t.Errorf("verdict badges (-comparison +page):\n%s", diff)
		}
		want := 0
		for _, a := range cmpJSON.Arms {
			if !a.Baseline {
				want += len(a.Metrics)
			}
		}
		if intervals != want {
			t.Errorf("%d intervals in the forest plot, want %d (metrics × arms)", intervals, want)
		}
		screenshot(t, ctx, "experiment")
		// An interval opens the runs and pods behind it.
		do(t, ctx, chromedp.Click(chromedp.CSS(`[data-interval-arm="affinity"] .hit`)), chromedp.WaitVisible(chromedp.CSS(`#arm-runs`)))
		runs := eval[int](t, ctx, `document.querySelectorAll('#arm-runs tbody tr').length`)
		if runs != 3 {
			t.Errorf("arm page lists %d runs, want 3", runs)
		}
		screenshot(t, ctx, "arm")
	})

	t.Run("pod", func(t *testing.T) {
		var pods struct {
			Pods []align.Summary `json:"pods"`
		}
		apitest.GetJSON(t, srv.URL+"/v1/pods?experiment=day20&arm=priority&run=2", &pods)
		uid := pods.Pods[0].Pod.UID
		var tl align.Timeline
		apitest.GetJSON(t, srv.URL+"/v1/pods/"+uid+"/timeline", &tl)
		do(t, ctx, chromedp.Navigate(srv.URL+"/ui/pods/"+uid), chromedp.WaitVisible(chromedp.CSS(`#pod-timeline`)))
		rows := eval[int](t, ctx, `document.querySelectorAll('#events tbody tr').length`)
		markers := eval[int](t, ctx, `document.querySelectorAll('#pod-timeline [data-milestone]').length`)
		if rows != len(tl.Events) {
			t.Errorf("%d event rows, want %d", rows, len(tl.Events))
		}
		if markers == 0 {
			t.Error("no milestone markers on the pod's timeline")
		}
		screenshot(t, ctx, "pod")
	})

	t.Run("live", func(t *testing.T) {
		do(t, ctx, chromedp.Navigate(srv.URL+"/ui/experiments/day20/runs/3"), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
		present := eval[bool](t, ctx, fmt.Sprintf(`!!document.querySelector('[data-pod-uid=%q]')`, lateUID))
		if present {
			t.Fatal("the held-back pod is on the page before it was published")
		}
		p.Publish(late)
		do(t, ctx, chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`[data-pod-uid=%q]`, lateUID))))
	})

	t.Run("errors", func(t *testing.T) {
		for path, want := range map[string]int{
			"/ui/pods/not-a-uid":                            http.StatusBadRequest,
			"/ui/pods/00000000-0000-0000-0000-000000000000": http.StatusNotFound,
			"/ui/experiments/nope":                          http.StatusNotFound,
			"/ui/experiments/day20/runs/99":                 http.StatusNotFound,
			"/ui/experiments/day20/runs/1?from=x&to=1":      http.StatusBadRequest,
			"/ui/experiments/day20/runs/1?lanes=5-1":        http.StatusBadRequest,
			"/ui/nothing":                                   http.StatusNotFound,
		} {
			checkPage(t, srv.URL+path, want)
		}
	})
}

// checkPage fails unless url answers status with an HTML page (the UI's error pages included).
func checkPage(t *testing.T, url string, status int) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("%s: %d %s, want %d text/html", url, resp.StatusCode, resp.Header.Get("Content-Type"), status)
	}
}

// checkLane compares a lane's milestone markers with the pod's timeline: the same milestones,
// in time order.
func checkLane(t *testing.T, s align.Summary, l lane) {
	t.Helper()
	m := s.Milestones
	var want []string
	for _, ms := range []struct {
		name string
		at   *time.Time
	}{{"created", m.Created}, {"scheduled", m.Scheduled}, {"running", m.Running}, {"ready", m.Ready}, {"first_success", m.FirstSuccess}, {"ended", m.Ended}} {
		if ms.at != nil {
			want = append(want, ms.name)
		}
	}
	if diff := cmp.Diff(want, l.Order); diff != "" {
		t.Errorf("pod %s milestones (-timeline +lane):\n%s", s.Pod.Name, diff)
	}
	for i := 1; i < len(l.Order); i++ {
		if l.Milestones[l.Order[i]] < l.Milestones[l.Order[i-1]] {
			t.Errorf("pod %s: %s at %.3fs before %s at %.3fs", s.Pod.Name, l.Order[i], l.Milestones[l.Order[i]], l.Order[i-1], l.Milestones[l.Order[i-1]])
		}
	}
	wantCensored := strings.Join(s.Censored, " ")
	got := ""
	if l.Censored != nil {
		got = *l.Censored
	}
	if got != wantCensored {
		t.Errorf("pod %s: lane data-censored %q, timeline censored %q", s.Pod.Name, got, wantCensored)
	}
}

func sortPairs(ps [][2]string) {
	slices.SortFunc(ps, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
}
