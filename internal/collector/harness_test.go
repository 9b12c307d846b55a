package collector_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/collector"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/prober"
	"github.com/schedlens/schedlens/internal/publisher"
	"github.com/schedlens/schedlens/internal/testenv"
)

// cluster is a fake API server (client-go's fake clientset) whose pod list can be held and
// whose pod watch can be broken, to force the relist a real watch sees after an outage.
type cluster struct {
	client *fake.Clientset
	rv     atomic.Int64

	mu        sync.Mutex
	podWatch  *breakableWatch
	listGate  chan struct{} // when set, pod lists wait until it is closed
	listBlock chan struct{} // receives when a pod list is waiting at the gate
}

func newCluster(t *testing.T, objs ...runtime.Object) *cluster {
	t.Helper()
	c := &cluster{client: fake.NewClientset(objs...), listBlock: make(chan struct{}, 1)}
	c.rv.Store(10_000)
	c.client.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		wa := a.(k8stesting.WatchActionImpl)
		w, err := c.client.Tracker().Watch(a.GetResource(), a.GetNamespace(), wa.ListOptions)
		if err != nil {
			return true, nil, err
		}
		bw := newBreakableWatch(w)
		c.mu.Lock()
		c.podWatch = bw
		c.mu.Unlock()
		return true, bw, nil
	})
	c.client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		c.mu.Lock()
		gate := c.listGate
		c.mu.Unlock()
		if gate != nil {
			c.listBlock <- struct{}{}
			<-gate
		}
		return false, nil, nil // fall through to the tracker
	})
	return c
}

// nextRV returns a fresh resourceVersion: the fake tracker keeps the one an object carries.
func (c *cluster) nextRV() string { return fmt.Sprint(c.rv.Add(1)) }

// relist breaks the pod watch with 410 Gone, as an API server does when the watch fell too far
// behind, and holds the informer's relist until during returns: what during does to pods is
// seen only through the list. The fake client holds its lock while the list waits, so during
// must use the tracker, not the client.
func (c *cluster) relist(t *testing.T, during func()) {
	t.Helper()
	gate := make(chan struct{})
	c.mu.Lock()
	c.listGate = gate
	w := c.podWatch
	c.mu.Unlock()
	if w == nil {
		t.Fatal("no pod watch to break")
	}
	w.fail()
	select {
	case <-c.listBlock:
	case <-time.After(10 * time.Second):
		t.Fatal("the informer did not relist after its watch failed")
	}
	during()
	c.mu.Lock()
	c.listGate = nil
	c.mu.Unlock()
	close(gate)
}

// breakableWatch forwards a tracker watch and can end it with an error event.
type breakableWatch struct {
	inner  watch.Interface
	out    chan watch.Event
	stop   chan struct{}
	once   sync.Once
	broken atomic.Bool
}

func newBreakableWatch(inner watch.Interface) *breakableWatch {
	w := &breakableWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.out)
		for {
			select {
			case ev, ok := <-inner.ResultChan():
				if !ok || w.broken.Load() {
					return
				}
				select {
				case w.out <- ev:
				case <-w.stop:
					return
				}
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

func (w *breakableWatch) fail() {
	w.broken.Store(true)
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}
	go func() {
		select {
		case w.out <- watch.Event{Type: watch.Error, Object: gone}:
		case <-w.stop:
		}
	}()
}

func (w *breakableWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

func (w *breakableWatch) ResultChan() <-chan watch.Event { return w.out }

// running is a collector under test with its publisher.
type running struct {
	c      *collector.Collector
	pub    *publisher.Publisher
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

type testOpts struct {
	buffer       int
	asyncTimeout time.Duration
	namespaces   []string       // default ai-lab
	probe        *prober.Config // default: no prober
	invChunk     int            // most UIDs per inventory envelope (0: the default)
	// selector is the pod selector; nil: the experiment label is set, the scope the recorded
	// cluster's tests were written for (one of its pods is outside it).
	selector *string
}

// startCollector runs a collector against the fake cluster, publishing to the NATS server at
// url, and waits until it is ready.
func startCollector(t *testing.T, k *cluster, url string, o testOpts) *running {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	nc, err := bus.Connect(url, "collector-test", logger, nats.RetryOnFailedConnect(true), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if o.asyncTimeout == 0 {
		o.asyncTimeout = 2 * time.Second
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(o.asyncTimeout))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	pcfg := publisher.DefaultConfig()
	pcfg.RetryMin, pcfg.RetryMax = 20*time.Millisecond, 200*time.Millisecond
	if o.buffer > 0 {
		pcfg.Buffer = o.buffer
	}
	ensure := func(ctx context.Context) error { _, err := bus.EnsureStream(ctx, js, bus.StreamConfig{}); return err }
	pub := publisher.New(js, ensure, pcfg, logger, reg)
	cfg := collector.DefaultConfig()
	cfg.Cluster, cfg.Source = "lab", "collector/test"
	cfg.Namespaces = []string{"ai-lab"}
	if o.namespaces != nil {
		cfg.Namespaces = o.namespaces
	}
	cfg.Selector = events.LabelExperiment
	if o.selector != nil {
		cfg.Selector = *o.selector
	}
	cfg.PendingTTL = 500 * time.Millisecond
	// The recorded pods have cluster IPs (10.244.x): never probe or scrape them from a test.
	cfg.Probe.Interval = 0
	if o.probe != nil {
		cfg.Probe = *o.probe
	}
	cfg.InventoryChunk = o.invChunk
	cfg.DCGM.Interval = 0
	c, err := collector.New(k.client, pub, cfg, logger, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{c: c, pub: pub, reg: reg, cancel: cancel, done: make(chan error, 2)}
	pubCtx, stopPub := context.WithCancel(context.Background())
	pubDone := make(chan error, 1)
	go func() { pubDone <- pub.Run(pubCtx) }()
	go func() {
		err := c.Run(ctx)
		stopPub()
		r.done <- errors.Join(err, <-pubDone)
	}()
	t.Cleanup(func() { r.stop(t) })
	waitFor(t, 10*time.Second, "collector ready", func() bool { return c.Ready() == nil })
	return r
}

func (r *running) stop(t *testing.T) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("collector: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("collector did not stop")
	}
}

// streamEnvelopes reads every envelope in the SCHEDLENS stream of the server at url.
func streamEnvelopes(t *testing.T, url string) []*events.Envelope {
	t.Helper()
	nc, js := natstest.Connect(t, url)
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, bus.StreamName)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*events.Envelope
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		msg, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("get message %d: %v", seq, err)
		}
		env, err := events.Decode(msg.Data)
		if err != nil {
			t.Fatalf("message %d does not decode: %v\n%s", seq, err, msg.Data)
		}
		if got := msg.Header.Get(jetstream.MsgIDHeader); got != env.ID {
			t.Errorf("message %d: Nats-Msg-Id %q, envelope id %q", seq, got, env.ID)
		}
		out = append(out, env)
	}
	return out
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	if !testenv.Until(d, 20*time.Millisecond, ok) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// recorded reads a List recorded from a real API server in testdata.
func recorded[T any](t *testing.T, file string) []T {
	t.Helper()
	b, err := os.ReadFile("../kube/testdata/" + file) // the recordings package kube keeps
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Items []T }
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return list.Items
}

// recordedCluster holds the recorded nodes, pods and events, plus an experiment ConfigMap and a
// pod (with an event) outside the collector's scope.
func recordedCluster(t *testing.T) (*cluster, []corev1.Pod) {
	t.Helper()
	var objs []runtime.Object
	for _, n := range recorded[corev1.Node](t, "nodes.list.json") {
		objs = append(objs, &n)
	}
	pods := recorded[corev1.Pod](t, "pods.list.json")
	for i := range pods {
		objs = append(objs, &pods[i])
	}
	for _, e := range recorded[eventsv1.Event](t, "events.list.json") {
		objs = append(objs, &e)
	}
	outside := pods[0].DeepCopy()
	outside.Name, outside.UID, outside.Labels = "unrelated", "0f0f0f0f-0000-4000-8000-000000000001", map[string]string{"app": "other"}
	objs = append(objs, outside, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "unrelated.1", Namespace: "ai-lab", UID: "0f0f0f0f-0000-4000-8000-000000000002", ResourceVersion: "5"},
		EventTime:  metav1.NewMicroTime(time.Date(2026, 11, 30, 4, 32, 0, 0, time.UTC)),
		Reason:     "Scheduled", Note: "Successfully assigned ai-lab/unrelated to gpu-node-1", Type: "Normal",
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "ai-lab", Name: "unrelated", UID: outside.UID},
	}, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "day20", Namespace: "ai-lab", UID: "0f0f0f0f-0000-4000-8000-000000000003", ResourceVersion: "7",
			Labels: map[string]string{events.LabelExperiment: "day20"}},
		Data: map[string]string{"change": "required node affinity", "repeats": "3", "arms": "control, affinity", "baseline": "control"},
	})
	return newCluster(t, objs...), pods
}
