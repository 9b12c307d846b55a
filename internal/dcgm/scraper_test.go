package dcgm_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/dcgm"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/testenv"
)

// exporter serves a fixture as dcgm-exporter serves /metrics, on 127.0.0.1.
func exporter(t *testing.T, file string) *httptest.Server {
	t.Helper()
	body := fixture(t, file)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func server(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// recorder collects what a Scraper publishes.
type recorder struct {
	mu   sync.Mutex
	envs []*events.Envelope
}

func (r *recorder) publish(env *events.Envelope) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.envs = append(r.envs, env)
}

func (r *recorder) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, env := range r.envs {
		ids = append(ids, env.ID)
	}
	return ids
}

func fixedClock() time.Time { return scrapedAt }

func TestScrapeOnce(t *testing.T) {
	idle := exporter(t, "recorded/l40s-idle-node.prom")
	busy := exporter(t, "recorded/t4-busy-no-help.prom")
	shared := exporter(t, "derived/l40s-time-sliced.prom")
	mig := exporter(t, "derived/a100-mig.prom")
	failing := server(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "dcgm hostengine unreachable", http.StatusInternalServerError)
	})
	garbage := server(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html><body>login required</body></html>\n"))
	})
	release := make(chan struct{})
	hanging := server(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release) // before the servers close: they wait for their handlers

	var logs testenv.LogBuffer
	rec := &recorder{}
	s := &dcgm.Scraper{
		Targets: func() []dcgm.Target {
			return []dcgm.Target{
				{URL: idle.URL + "/metrics", Node: "ignored-hostname-label-wins"},
				{URL: failing.URL + "/metrics", Node: "node-500"},
				{URL: busy.URL + "/metrics", Node: t4Host},
				{URL: garbage.URL + "/metrics", Node: "node-garbage"},
				{URL: shared.URL + "/metrics", Node: l40sHost},
				{URL: hanging.URL + "/metrics", Node: "node-hanging"},
				{URL: mig.URL + "/metrics", Node: l40sHost},
			}
		},
		Interval: 15 * time.Second, // not waited for by ScrapeOnce: the samples' period
		Timeout:  300 * time.Millisecond,
		Client:   &http.Client{},
		Cluster:  "lab",
		Source:   "collector/test",
		Resolver: cache,
		Publish:  rec.publish,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		Clock:    fixedClock,
	}
	n, err := s.ScrapeOnce(context.Background())
	if n != 7 {
		t.Errorf("published %d envelopes, want 7 (1 idle L40S, 1 T4, 3 pods sharing an L40S, 2 MIG instances)", n)
	}
	const at = "1764484200123456000"
	want := []string{ // in target order
		"gpu_sample/gpu1-wl8sg/" + l40sUUID + "/" + at,
		"gpu_sample/cp-bm14r7/" + t4UUID + "/" + at,
		"gpu_sample/gpu1-wl8sg/" + l40sUUID + "/" + at + "/day20/chat-7d9f8b6c5-4xkqp/server",
		"gpu_sample/gpu1-wl8sg/" + l40sUUID + "/" + at + "/day20/chat-7d9f8b6c5-9vbn2/server",
		"gpu_sample/gpu1-wl8sg/" + l40sUUID + "/" + at + "/day20/embed-5c6d7f8b9-tq2lm/embedder",
		"gpu_sample/gpu1-wl8sg/" + l40sUUID + "/1/" + at + "/day20/chat-mig-6b7c8d9f4-k8s7d/server",
		"gpu_sample/gpu1-wl8sg/" + l40sUUID + "/2/" + at,
	}
	if diff := cmp.Diff(want, rec.ids()); diff != "" {
		t.Errorf("published (-want +got):\n%s", diff)
	}
	for _, env := range rec.envs {
		got, err := events.Decode(must(events.Encode(env)))
		if err != nil {
			t.Errorf("%s: %v", env.ID, err)
			continue
		}
		if p := got.Payload.(*events.GPUSample).PeriodS; p != 15 {
			t.Errorf("%s: period_s %v, want the interval, 15", env.ID, p)
		}
	}

	if err == nil {
		t.Fatal("no error for the failing targets")
	}
	for _, bad := range []struct{ url, why string }{
		{failing.URL, "status 500: dcgm hostengine unreachable"},
		{garbage.URL, "text format parsing error"},
		{hanging.URL, "context deadline exceeded"},
	} {
		if !strings.Contains(err.Error(), bad.url) || !strings.Contains(err.Error(), bad.why) {
			t.Errorf("error does not name %s (%s):\n%v", bad.url, bad.why, err)
		}
		if !strings.Contains(logs.String(), "url="+bad.url+"/metrics") {
			t.Errorf("failure of %s not logged:\n%s", bad.url, logs.String())
		}
	}
	if diff := cmp.Diff(dcgm.ScrapeStats{Rounds: 1, Scrapes: 4, Failures: 3, Published: 7}, s.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestScraperRunKeepsGoingPastFailures(t *testing.T) {
	busy := exporter(t, "recorded/t4-busy-no-help.prom")
	failing := server(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusServiceUnavailable)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var published int
	s := &dcgm.Scraper{
		Targets: func() []dcgm.Target {
			return []dcgm.Target{{URL: failing.URL + "/metrics"}, {URL: busy.URL + "/metrics"}}
		},
		Interval: 10 * time.Millisecond,
		Timeout:  time.Second,
		Cluster:  "lab",
		Source:   "collector/test",
		Publish: func(*events.Envelope) {
			published++ // Publish is called from Run's goroutine only
			if published == 3 {
				cancel()
			}
		},
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop after its context was cancelled")
	}
	st := s.Stats()
	if st.Rounds < 3 || st.Published != 3 || st.Failures < 2 {
		t.Errorf("stats %+v: want ≥3 rounds, 3 published, ≥2 failures", st)
	}
}

func TestScraperRefusesAnIncompleteConfig(t *testing.T) {
	targets := func() []dcgm.Target { return nil }
	publish := func(*events.Envelope) {}
	for name, s := range map[string]*dcgm.Scraper{
		"no targets":  {Interval: time.Second, Cluster: "lab", Source: "s", Publish: publish},
		"no publish":  {Targets: targets, Interval: time.Second, Cluster: "lab", Source: "s"},
		"no cluster":  {Targets: targets, Interval: time.Second, Source: "s", Publish: publish},
		"no interval": {Targets: targets, Cluster: "lab", Source: "s", Publish: publish},
	} {
		if err := s.Run(context.Background()); err == nil {
			t.Errorf("%s: Run started", name)
		}
	}
}

func TestScrapeOnceStopsWithItsContext(t *testing.T) {
	release := make(chan struct{})
	hanging := server(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	var logs testenv.LogBuffer
	s := &dcgm.Scraper{
		Targets:  func() []dcgm.Target { return []dcgm.Target{{URL: hanging.URL + "/metrics"}} },
		Timeout:  time.Minute,
		Cluster:  "lab",
		Source:   "collector/test",
		Publish:  func(*events.Envelope) {},
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		Interval: time.Second,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := s.ScrapeOnce(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the context's", err)
	}
	if s.Stats().Failures != 0 || logs.String() != "" {
		t.Errorf("shutdown counted as a target failure: %+v, logs %q", s.Stats(), logs.String())
	}
}
