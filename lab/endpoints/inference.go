package endpoints

import (
	"encoding/json"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schedlens/schedlens/internal/wait"
	"github.com/schedlens/schedlens/lab/sim"
)

// maxBody is how much of a request body is read (and discarded) before answering.
const maxBody = 1 << 20

// podEndpoint is the inference server of one pod.
type podEndpoint struct {
	s   *Server
	pod atomic.Pointer[sim.Pod] // as of the latest reconcile

	mu  sync.Mutex
	rng *rand.Rand
}

func newPodEndpoint(s *Server, p sim.Pod) *podEndpoint {
	h := fnv.New64a()
	_, _ = io.WriteString(h, p.UID)
	e := &podEndpoint{s: s, rng: rand.New(rand.NewPCG(s.cfg.Seed, h.Sum64()))}
	e.pod.Store(&p)
	return e
}

// inferResponse is the body of a served request.
type inferResponse struct {
	Model     string  `json:"model"`
	Pod       string  `json:"pod"`
	Namespace string  `json:"namespace"`
	Node      string  `json:"node"`
	GPU       string  `json:"gpu,omitempty"`
	Sharing   string  `json:"sharing,omitempty"`
	LatencyMS float64 `json:"latency_ms"`
}

// errorResponse is the body of a refused request.
type errorResponse struct {
	Error string `json:"error"`
	Pod   string `json:"pod"`
}

func (e *podEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := *e.pod.Load()
	h := w.Header()
	h.Set("X-Pod-Name", p.Name)
	h.Set("X-Pod-UID", p.UID)
	h.Set("X-Node", p.Node)
	if r.URL.Path != e.s.cfg.Path {
		writeJSON(w, http.StatusNotFound, errorResponse{Error: "not found", Pod: p.Name})
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxBody))

	if !p.Ready {
		// the kubelet may have marked it Ready since the last reconcile
		if fresh, ok := e.s.lookupPod(p.UID); ok {
			p = fresh
		}
	}
	if !p.Ready || !p.Running {
		d := e.draw(func(rng *rand.Rand) time.Duration {
			return time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Millisecond)))
		})
		if wait.Sleep(r.Context(), d) {
			writeJSON(w, http.StatusServiceUnavailable, errorResponse{Error: "model not ready", Pod: p.Name})
		}
		return
	}

	if k, ok := keyOf(p); ok {
		end := e.s.load.begin(k)
		defer end()
	}
	d := e.draw(func(rng *rand.Rand) time.Duration { return Latency(p, rng) })
	if !wait.Sleep(r.Context(), d) {
		return // the client went away or the pod stopped
	}
	writeJSON(w, http.StatusOK, inferResponse{
		Model:     e.s.model,
		Pod:       p.Name,
		Namespace: p.Namespace,
		Node:      p.Node,
		GPU:       p.GPUModel,
		Sharing:   p.Sharing,
		LatencyMS: float64(d.Microseconds()) / 1000,
	})
}

// draw runs f with the pod's generator: requests of one pod are served concurrently.
func (e *podEndpoint) draw(f func(*rand.Rand) time.Duration) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return f(e.rng)
}

// lookupPod returns the pod with uid from a fresh snapshot of the Source.
func (s *Server) lookupPod(uid string) (sim.Pod, bool) {
	for _, p := range s.src.Pods() {
		if p.UID == uid {
			return p, true
		}
	}
	return sim.Pod{}, false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v) // the response types always marshal
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// modelFromPath returns the model name of a KServe v2 path (/v2/models/<name>/infer), or "model".
func modelFromPath(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "models" && parts[i+1] != "" {
			return parts[i+1]
		}
	}
	return "model"
}
