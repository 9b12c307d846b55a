// Package prober sends an experiment's fixed representative request to every pod in scope from
// the moment it is Running, at a constant rate, with vegeta's attacker, and turns each attempt
// into a request envelope: what the service felt, not what Kubernetes says.
package prober

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	vegeta "github.com/tsenart/vegeta/v12/lib"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlens/schedlens/internal/events"
)

// Request is the experiment's fixed representative request, as its definition gives it
// (events.FixedRequestOf checks it; its URL is always on the pod's own IP).
type Request = events.FixedRequest

// Refused stands for the request of an experiment whose fixed.request cannot be sent safely
// (RequestOf's error): the experiment's pods are not probed rather than probed with another
// request than the one the experiment named.
var Refused = &Request{}

// Config shapes the prober. An Interval of zero disables it.
type Config struct {
	Interval time.Duration // between requests to one pod (5 per second at 200ms)
	Timeout  time.Duration // per request
	// Default is sent to pods whose experiment definition names no request.
	Default Request
	// MaxBody is how much of each response body is read into memory (bytes_in counts up to
	// it); the rest is read and discarded within Timeout. Zero: DefaultMaxBody.
	MaxBody int64
	// MaxPods is how many pods are probed at once; pods beyond wait for a slot, counted in
	// schedlens_collector_probes_skipped_total. Zero: DefaultMaxPods.
	MaxPods int
}

const (
	// DefaultMaxBody is the response body read per probe: 64 KiB.
	DefaultMaxBody = 64 << 10
	// DefaultMaxPods is the pods probed at once by one collector: 500 (2,500 requests/s at
	// the default interval).
	DefaultMaxPods = 500
)

// DefaultConfig probes every pod 5 times a second with a 2 s timeout, up to 500 pods at once.
func DefaultConfig() Config {
	return Config{Interval: 200 * time.Millisecond, Timeout: 2 * time.Second, Default: Request{Method: "GET", Port: 8000, Path: "/"},
		MaxBody: DefaultMaxBody, MaxPods: DefaultMaxPods}
}

// Sink takes the request envelopes, waiting for room (the collector's publisher).
type Sink interface {
	Put(ctx context.Context, env *events.Envelope) error
}

// Prober sends the experiment's fixed request to every pod in scope from the moment it is
// Running with an IP (not only once Ready: time to first success is measured, not assumed)
// until it goes, at a constant rate, with vegeta's attacker (open loop: a slow pod does not slow
// the sending down, so queueing shows in the latencies instead of hiding in the rate). Each
// attempt becomes one request envelope: send time, latency, status, error class, serving pod.
type Prober struct {
	cfg     Config
	pub     Sink
	cluster string
	source  string
	logger  *slog.Logger
	m       *metrics

	mu     sync.Mutex
	probes map[types.UID]*probe
	// waiting are the live pods beyond MaxPods, started as slots free.
	waiting map[types.UID]waitingPod
	wg      sync.WaitGroup
	ctx     context.Context
}

type waitingPod struct {
	pod *corev1.Pod
	req *Request
}

type probe struct {
	ip       string
	attacker *vegeta.Attacker
	ready    readiness
}

// readiness remembers when the collector saw a pod become Ready and stop being Ready, so each
// result can say whether the pod was Ready when the request was sent (what a Service would have
// routed to users).
type readiness struct {
	mu      sync.Mutex
	changes []readyChange // in time order, the last few
}

type readyChange struct {
	at    time.Time
	ready bool
}

const keptReadyChanges = 16

// set records the pod's readiness as seen at t.
func (r *readiness) set(t time.Time, ready bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.changes); n > 0 && r.changes[n-1].ready == ready {
		return
	}
	r.changes = append(r.changes, readyChange{at: t, ready: ready})
	if len(r.changes) > keptReadyChanges {
		r.changes = slices.Delete(r.changes, 0, len(r.changes)-keptReadyChanges)
	}
}

// at reports whether the pod was Ready at t (false before anything was seen).
func (r *readiness) at(t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.changes) - 1; i >= 0; i-- {
		if !r.changes[i].at.After(t) {
			return r.changes[i].ready
		}
	}
	return false
}

// servingReady is what a Service routes to: the pod Ready and not terminating.
func servingReady(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// New returns a prober publishing through pub, registering its metrics with reg; Start it
// before Observe.
func New(cfg Config, pub Sink, cluster, source string, logger *slog.Logger, reg prometheus.Registerer) *Prober {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxPods <= 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	return &Prober{cfg: cfg, pub: pub, cluster: cluster, source: source, logger: logger, m: newMetrics(reg),
		probes: map[types.UID]*probe{}, waiting: map[types.UID]waitingPod{}}
}

type metrics struct {
	probesActive  prometheus.Gauge
	probesWaiting prometheus.Gauge
	probesSkipped prometheus.Counter
	probeResults  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	return &metrics{
		probesActive:  f.NewGauge(prometheus.GaugeOpts{Name: "schedlens_collector_probes_active", Help: "Pods the prober is sending the experiment's request to."}),
		probesWaiting: f.NewGauge(prometheus.GaugeOpts{Name: "schedlens_collector_probes_waiting", Help: "Running pods not probed because -probe-max-pods are probed already."}),
		probesSkipped: f.NewCounter(prometheus.CounterOpts{Name: "schedlens_collector_probes_skipped_total", Help: "Pods that found -probe-max-pods probed already (each counted once while it waits)."}),
		probeResults:  f.NewCounterVec(prometheus.CounterOpts{Name: "schedlens_collector_probe_requests_total", Help: "Probe attempts by error class (\"\" for success)."}, []string{"error"}),
	}
}

// Start sets the context probes run in; Stop ends them all.
func (p *Prober) Start(ctx context.Context) {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
}

// Observe starts probing a pod that runs with an IP and stops probing one that is gone,
// terminating or finished. req is the pod's experiment request (nil: the default). Beyond
// MaxPods probes, a pod waits (counted) and is started when a probe ends.
func (p *Prober) Observe(pod *corev1.Pod, deleted bool, req *Request) {
	if p.cfg.Interval <= 0 {
		return
	}
	live := !deleted && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != ""
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.waiting[pod.UID]; ok {
		delete(p.waiting, pod.UID)
		p.m.probesWaiting.Dec()
		if live && req != Refused {
			p.wait(pod, req, false)
			return
		}
	}
	cur := p.probes[pod.UID]
	if cur != nil {
		// Results still arriving from a stopped attack are matched against this too: a pod seen
		// deleted or terminating serves no user.
		cur.ready.set(time.Now(), live && servingReady(pod))
	}
	if cur != nil && (!live || cur.ip != pod.Status.PodIP) {
		p.stop(pod.UID, cur)
		cur = nil
		defer p.fill()
	}
	if !live || cur != nil || req == Refused {
		return
	}
	if len(p.probes) >= p.cfg.MaxPods {
		p.wait(pod, req, true)
		return
	}
	p.start(pod, req)
}

// wait keeps a pod for the next free slot; count says it is new to the wait.
func (p *Prober) wait(pod *corev1.Pod, req *Request, count bool) {
	if count {
		p.m.probesSkipped.Inc()
		p.logger.Debug("pod waits for a probe slot", "pod", pod.Namespace+"/"+pod.Name, "max_pods", p.cfg.MaxPods)
	}
	p.waiting[pod.UID] = waitingPod{pod: pod, req: req}
	p.m.probesWaiting.Inc()
}

// stop ends one probe (p.mu held).
func (p *Prober) stop(uid types.UID, pr *probe) {
	pr.attacker.Stop()
	delete(p.probes, uid)
	p.m.probesActive.Dec()
}

// fill starts waiting pods while slots are free (p.mu held).
func (p *Prober) fill() {
	for uid, w := range p.waiting {
		if len(p.probes) >= p.cfg.MaxPods {
			return
		}
		delete(p.waiting, uid)
		p.m.probesWaiting.Dec()
		p.start(w.pod, w.req)
	}
}

// start probes a live pod (p.mu held).
func (p *Prober) start(pod *corev1.Pod, req *Request) {
	if p.ctx == nil || p.ctx.Err() != nil {
		return
	}
	if req == nil {
		req = &p.cfg.Default
	}
	url, err := req.URL(pod.Status.PodIP)
	if err != nil {
		p.logger.Warn("not probing the pod", "pod", pod.Namespace+"/"+pod.Name, "error", err)
		return
	}
	target := vegeta.Target{Method: req.Method, URL: url, Body: []byte(req.Body)}
	if req.Body != "" {
		target.Header = map[string][]string{"Content-Type": {"application/json"}}
	}
	a := vegeta.NewAttacker(vegeta.Client(podClient(pod.Status.PodIP, req.Port)), vegeta.Timeout(p.cfg.Timeout), vegeta.Workers(2),
		vegeta.KeepAlive(true), vegeta.Redirects(0), vegeta.MaxBody(p.cfg.MaxBody))
	pr := &probe{ip: pod.Status.PodIP, attacker: a}
	pr.ready.set(time.Now(), servingReady(pod))
	p.probes[pod.UID] = pr
	p.m.probesActive.Inc()
	ref := events.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
	began := time.Now().UTC()
	rate := vegeta.ConstantPacer{Freq: 1, Per: p.cfg.Interval}
	results := a.Attack(vegeta.NewStaticTargeter(target), rate, 0, began.Format(time.RFC3339Nano))
	ctx := p.ctx
	node := pod.Spec.NodeName
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for res := range results {
			env, err := p.envelope(ref, node, began, res, pr.ready.at(res.Timestamp))
			if err != nil {
				p.logger.Warn("probe result", "pod", ref.Namespace+"/"+ref.Name, "error", err)
				continue
			}
			p.m.probeResults.WithLabelValues(errorClass(res)).Inc()
			if err := p.pub.Put(ctx, env); err != nil {
				a.Stop()
			}
		}
	}()
}

// ErrNotThePod is the error of a probe connection to anything but the pod's own address.
var ErrNotThePod = errors.New("prober: connection to another address than the pod's refused")

// podClient is the HTTP client of one pod's probe: no proxy (HTTP_PROXY would carry the request
// elsewhere), redirects not followed (vegeta.Redirects(0)), and a dialer that connects to the
// pod's IP and port only, whatever the request names.
func podClient(ip string, port int) *http.Client {
	want := net.JoinHostPort(ip, strconv.Itoa(port))
	d := &net.Dialer{KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != want {
				return nil, fmt.Errorf("%w: %s, not %s", ErrNotThePod, addr, want)
			}
			return d.DialContext(ctx, network, want)
		},
		MaxIdleConnsPerHost: 4,
		DisableCompression:  true, // the body read is the body sent: MaxBody bounds the bytes on the wire
	}}
}

// Stop stops every probe and waits for their last results to be queued.
func (p *Prober) Stop() {
	p.mu.Lock()
	for uid, pr := range p.probes {
		p.stop(uid, pr)
	}
	for uid := range p.waiting {
		delete(p.waiting, uid)
		p.m.probesWaiting.Dec()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// envelope turns one attempt into a request envelope. The id is deterministic per prober
// attack: pod, attack start and sequence number.
func (p *Prober) envelope(pod events.PodRef, node string, began time.Time, res *vegeta.Result, ready bool) (*events.Envelope, error) {
	class := errorClass(res)
	data := &events.Request{
		Target: res.URL, Status: int(res.Code), OK: class == "", LatencyMS: float64(res.Latency) / float64(time.Millisecond),
		BytesOut: int64(res.BytesOut), BytesIn: int64(res.BytesIn), Method: res.Method, Error: class, PodReady: &ready,
	}
	env := &events.Envelope{
		V: events.Version, Kind: events.KindRequest, Cluster: p.cluster, Source: p.source,
		ID:         fmt.Sprintf("request/%s/%s/%d/%d", p.source, pod.UID, began.UnixNano(), res.Seq),
		OccurredAt: res.Timestamp.UTC(), ObservedAt: time.Now().UTC(), Pod: &pod, Node: node, Payload: data,
	}
	b, err := events.Encode(env)
	if err != nil {
		return nil, err
	}
	return events.Decode(b)
}

// errorClass names why an attempt failed, "" when it succeeded (2xx/3xx): timeout,
// connection_refused, connection_reset, http_<code>, or error.
func errorClass(res *vegeta.Result) string {
	switch {
	case res.Error == "" && res.Code >= 200 && res.Code < 400:
		return ""
	case res.Code >= 400:
		return "http_" + strconv.Itoa(int(res.Code))
	}
	e := strings.ToLower(res.Error)
	switch {
	case strings.Contains(e, "timeout") || strings.Contains(e, "deadline exceeded"):
		return "timeout"
	case strings.Contains(e, "connection refused"):
		return "connection_refused"
	case strings.Contains(e, "connection reset") || strings.Contains(e, "broken pipe") || strings.Contains(e, "eof"):
		return "connection_reset"
	}
	return "error"
}

// RequestOf reads the request of an experiment definition (its fixed.request): nil when it
// names none, Refused with the reason when it cannot be sent safely; def fills what it leaves
// out.
func RequestOf(exp *events.Experiment, def Request) (*Request, error) {
	req, err := events.FixedRequestOf(exp, def)
	if err != nil {
		return Refused, err
	}
	return req, nil
}
