package prober_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/metricstest"
	"github.com/schedlens/schedlens/internal/prober"
)

// sink takes the prober's envelopes; the first one closes got.
type sink struct {
	once sync.Once
	got  chan *events.Envelope
}

func (s *sink) Put(_ context.Context, env *events.Envelope) error {
	s.once.Do(func() { s.got <- env })
	return nil
}

// definition decodes an experiment definition whose fixed.request is request.
func definition(t *testing.T, request string) *events.Experiment {
	t.Helper()
	var exp events.Experiment
	if err := json.Unmarshal([]byte(`{"name":"day20","fixed":{"request":`+request+`}}`), &exp); err != nil {
		t.Fatal(err)
	}
	return &exp
}

func runningPod(ip string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ai-lab", Name: "p", UID: "0f0e0d0c-0000-4000-8000-000000000001"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// The experiment's fixed request is what reaches the pod, on the pod's own IP; one that cannot
// be sent safely (a path naming another host) is refused and the pod is not probed at all.
func TestProberSendsTheExperimentsRequestOrNone(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	seen := make(chan string, 100)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Method + " " + r.Host + " " + r.URL.RequestURI()
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	def := prober.DefaultConfig().Default
	good, err := prober.RequestOf(definition(t, `{"method":"post","port":`+strconv.Itoa(port)+`,"path":"/v2/models/model/infer"}`), def)
	if err != nil {
		t.Fatalf("a safe request refused: %v", err)
	}
	bad, err := prober.RequestOf(definition(t, `{"port":`+strconv.Itoa(port)+`,"path":"//169.254.169.254/latest/meta-data"}`), def)
	if err == nil || bad != prober.Refused {
		t.Fatalf("a path naming another host: %+v, %v; want Refused and an error", bad, err)
	}
	if none, err := prober.RequestOf(&events.Experiment{Name: "plain"}, def); none != nil || err != nil {
		t.Fatalf("a definition without a request: %+v, %v; want nil, nil (the default)", none, err)
	}

	reg := prometheus.NewRegistry()
	out := &sink{got: make(chan *events.Envelope, 1)}
	cfg := prober.DefaultConfig()
	p := prober.New(cfg, out, "lab", "prober/test", slog.New(slog.DiscardHandler), reg)
	p.Start(t.Context())
	t.Cleanup(p.Stop)

	p.Observe(runningPod("127.0.0.1"), false, bad)
	if n := metricstest.Registered(t, reg, "schedlens_collector_probes_active"); n != 0 {
		t.Fatalf("%v probes active for a refused request, want 0", n)
	}
	p.Observe(runningPod("127.0.0.1"), false, good)
	if n := metricstest.Registered(t, reg, "schedlens_collector_probes_active"); n != 1 {
		t.Fatalf("%v probes active for the experiment's request, want 1", n)
	}
	want := "POST 127.0.0.1:" + strconv.Itoa(port) + " /v2/models/model/infer"
	if got := <-seen; got != want {
		t.Errorf("the pod received %q, want %q", got, want)
	}
	if env := <-out.got; env.Kind != events.KindRequest {
		t.Errorf("published a %s envelope, want a request", env.Kind)
	}
}
