package prober_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/prober"
	"github.com/schedlens/schedlens/internal/publisher"
)

// BenchmarkProber1000 probes 50 pods (each its own 127.0.1.x listener) 20 times a second each —
// 1,000 requests/s in all — for 5 s, publishing every attempt to JetStream, and compares the
// latency the prober measured with the time the server spent (the baseline measured in the
// same run): the difference is the prober's own overhead.
//
//	go test ./internal/prober -run '^$' -bench Prober1000 -benchtime 1x
func BenchmarkProber1000(b *testing.B) {
	const pods, interval, length, work = 50, 50 * time.Millisecond, 5 * time.Second, 20 * time.Millisecond
	var mu sync.Mutex
	var served []time.Duration
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		start := time.Now()
		time.Sleep(work)
		w.WriteHeader(http.StatusOK)
		mu.Lock()
		served = append(served, time.Since(start))
		mu.Unlock()
	})
	var ips []string
	for i := range pods {
		ip := fmt.Sprintf("127.0.1.%d", i+1)
		l, err := net.Listen("tcp", ip+":18080")
		if err != nil {
			b.Fatalf("listen on %s: %v", ip, err)
		}
		srv := &http.Server{Handler: handler}
		go srv.Serve(l)
		b.Cleanup(func() { srv.Close() })
		ips = append(ips, ip)
	}

	js := natstest.Start(b).Stream()
	reg := prometheus.NewRegistry()
	pub := publisher.New(js, nil, publisher.DefaultConfig(), slog.New(slog.DiscardHandler), reg)
	pubCtx, stopPub := context.WithCancel(context.Background())
	pubDone := make(chan error, 1)
	go func() { pubDone <- pub.Run(pubCtx) }()

	cfg := prober.Config{Interval: interval, Timeout: 2 * time.Second}
	p := prober.New(cfg, pub, "bench", "prober/bench", slog.New(slog.DiscardHandler), reg)
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		p.Start(ctx)
		mu.Lock()
		served = served[:0]
		mu.Unlock()
		begin := time.Now()
		var podObjs []*corev1.Pod
		for i, ip := range ips {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("pod-%d", i), UID: types.UID(fmt.Sprintf("0f0f0f0f-0000-4000-8000-%012d", i))},
				Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
			}
			podObjs = append(podObjs, pod)
			p.Observe(pod, false, &prober.Request{Method: "GET", Port: 18080, Path: "/"})
		}
		time.Sleep(length)
		for _, pod := range podObjs {
			p.Observe(pod, true, nil)
		}
		p.Stop()
		elapsed := time.Since(begin)
		cancel()
		for pub.Buffered() > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		envs := streamRequests(b, js)
		var measured []float64
		okN := 0
		for _, e := range envs {
			r := e.Payload.(*events.Request)
			if r.OK {
				okN++
				measured = append(measured, r.LatencyMS)
			}
		}
		mu.Lock()
		var base []float64
		for _, d := range served {
			base = append(base, float64(d)/float64(time.Millisecond))
		}
		mu.Unlock()
		slices.Sort(measured)
		slices.Sort(base)
		q := func(xs []float64, p float64) float64 {
			if len(xs) == 0 {
				return 0
			}
			return xs[min(len(xs)-1, int(p*float64(len(xs))))]
		}
		_ = elapsed
		// The achieved rate: each pod's sends per second over its own sending window, summed.
		type span struct {
			first, last time.Time
			n           int
		}
		spans := map[string]*span{}
		for _, e := range envs {
			sp := spans[e.Pod.UID]
			if sp == nil {
				sp = &span{first: e.OccurredAt, last: e.OccurredAt}
				spans[e.Pod.UID] = sp
			}
			sp.n++
			if e.OccurredAt.Before(sp.first) {
				sp.first = e.OccurredAt
			}
			if e.OccurredAt.After(sp.last) {
				sp.last = e.OccurredAt
			}
		}
		var rate float64
		for _, sp := range spans {
			if sp.n > 1 {
				rate += float64(sp.n-1) / sp.last.Sub(sp.first).Seconds()
			}
		}
		b.ReportMetric(rate, "req/s")
		b.ReportMetric(float64(len(envs)), "published")
		b.ReportMetric(float64(okN)/float64(max(len(envs), 1)), "ok-ratio")
		b.ReportMetric(q(measured, 0.5), "prober-p50-ms")
		b.ReportMetric(q(measured, 0.99), "prober-p99-ms")
		b.ReportMetric(q(base, 0.5), "server-p50-ms")
		b.ReportMetric(q(base, 0.99), "server-p99-ms")
		b.ReportMetric(q(measured, 0.5)-q(base, 0.5), "overhead-p50-ms")
		b.ReportMetric(q(measured, 0.99)-q(base, 0.99), "overhead-p99-ms")
	}
	stopPub()
	<-pubDone
}

// streamRequests reads every request envelope in the stream.
func streamRequests(b *testing.B, js jetstream.JetStream) []*events.Envelope {
	ctx := context.Background()
	cons, err := js.OrderedConsumer(ctx, bus.StreamName, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"schedlens.v1.bench.request"}})
	if err != nil {
		b.Fatal(err)
	}
	var out []*events.Envelope
	for {
		batch, err := cons.FetchNoWait(1000)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for msg := range batch.Messages() {
			env, err := events.Decode(msg.Data())
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, env)
			n++
		}
		if n == 0 {
			return out
		}
	}
}
