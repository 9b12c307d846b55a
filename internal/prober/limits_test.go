package prober_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/metricstest"
	"github.com/schedlens/schedlens/internal/prober"
)

// chanSink hands every envelope to got (dropping when full).
type chanSink chan *events.Envelope

func (s chanSink) Put(_ context.Context, env *events.Envelope) error {
	select {
	case s <- env:
	default:
	}
	return nil
}

// serve answers on 127.0.0.1 with h; it returns the port.
func serve(t *testing.T, ip string, h http.HandlerFunc) int {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

func podOn(uid string) *corev1.Pod {
	p := runningPod("127.0.0.1")
	p.UID = types.UID(uid)
	p.Name = "p-" + uid[len(uid)-2:]
	return p
}

// A pod answering a body of 1 MiB is read up to MaxBody: bytes_in says the cap, and the prober
// holds no more than that per attempt.
func TestProberCapsTheResponseBody(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	port := serve(t, "127.0.0.1", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, big) })
	cfg := prober.DefaultConfig()
	cfg.Default.Port = port
	cfg.MaxBody = 1000
	out := make(chanSink, 10)
	p := prober.New(cfg, out, "lab", "prober/test", slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	p.Start(t.Context())
	t.Cleanup(p.Stop)
	p.Observe(runningPod("127.0.0.1"), false, nil)
	env := <-out
	r := env.Payload.(*events.Request)
	if r.BytesIn != 1000 || r.Status != 200 {
		t.Fatalf("bytes_in %d, status %d; want 1000 (the cap) and 200", r.BytesIn, r.Status)
	}
}

// With MaxPods probed, one more running pod waits (counted once), and is probed as soon as a
// probed pod goes.
func TestProberProbesAtMostMaxPods(t *testing.T) {
	var hits atomic.Int64
	port := serve(t, "127.0.0.1", func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) })
	cfg := prober.DefaultConfig()
	cfg.Default.Port = port
	cfg.MaxPods = 2
	reg := prometheus.NewRegistry()
	p := prober.New(cfg, make(chanSink), "lab", "prober/test", slog.New(slog.DiscardHandler), reg)
	p.Start(t.Context())
	t.Cleanup(p.Stop)
	pods := []*corev1.Pod{
		podOn("0f0e0d0c-0000-4000-8000-000000000001"),
		podOn("0f0e0d0c-0000-4000-8000-000000000002"),
		podOn("0f0e0d0c-0000-4000-8000-000000000003"),
	}
	for _, pod := range pods {
		p.Observe(pod, false, nil)
	}
	p.Observe(pods[2], false, nil) // an update of the waiting pod is not a second skip
	if a, w, s := metricstest.Registered(t, reg, "schedlens_collector_probes_active"), metricstest.Registered(t, reg, "schedlens_collector_probes_waiting"), metricstest.Registered(t, reg, "schedlens_collector_probes_skipped_total"); a != 2 || w != 1 || s != 1 {
		t.Fatalf("active %v, waiting %v, skipped %v; want 2, 1, 1", a, w, s)
	}
	p.Observe(pods[0], true, nil)
	if a, w := metricstest.Registered(t, reg, "schedlens_collector_probes_active"), metricstest.Registered(t, reg, "schedlens_collector_probes_waiting"); a != 2 || w != 0 {
		t.Fatalf("after a probed pod went: active %v, waiting %v; want 2, 0", a, w)
	}
	p.Observe(pods[1], true, nil)
	p.Observe(pods[2], true, nil)
	if a := metricstest.Registered(t, reg, "schedlens_collector_probes_active"); a != 0 {
		t.Fatalf("after every pod went: active %v, want 0", a)
	}
}

// A pod that answers with a redirect to another address does not send the prober there: the
// request goes to the pod's own IP and port only.
func TestProberDoesNotFollowRedirects(t *testing.T) {
	var elsewhere atomic.Int64
	other := serve(t, "127.0.0.2", func(w http.ResponseWriter, _ *http.Request) { elsewhere.Add(1) })
	port := serve(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.2:"+strconv.Itoa(other)+"/latest/meta-data", http.StatusFound)
	})
	cfg := prober.DefaultConfig()
	cfg.Default.Port = port
	cfg.Interval = 20 * time.Millisecond
	out := make(chanSink, 100)
	p := prober.New(cfg, out, "lab", "prober/test", slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	p.Start(t.Context())
	p.Observe(runningPod("127.0.0.1"), false, nil)
	for range 5 {
		env := <-out
		if r := env.Payload.(*events.Request); !strings.HasPrefix(r.Target, "http://127.0.0.1:"+strconv.Itoa(port)+"/") {
			t.Errorf("target %q, want the pod's own address", r.Target)
		}
	}
	p.Stop()
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect's address received %d requests, want 0", n)
	}
}
