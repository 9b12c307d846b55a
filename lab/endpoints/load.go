package endpoints

import (
	"sync"
	"time"

	"github.com/schedlens/schedlens/lab/sim"
)

// loadWindow is how far back utilisation looks: DCGM samples GPU utilisation over about a second.
const loadWindow = time.Second

// gpuKey names what a request keeps busy: a physical GPU, or one MIG instance of it.
type gpuKey struct {
	node string
	gpu  int
	mig  int // GPU_I_ID, or -1 for the whole GPU
}

// keyOf is the GPU (or MIG instance) pod p runs on; ok is false for a pod without a GPU.
func keyOf(p sim.Pod) (gpuKey, bool) {
	if p.GPUModel == "" {
		return gpuKey{}, false
	}
	k := gpuKey{node: p.Node, gpu: p.GPUIndex, mig: -1}
	if p.Sharing == sharingMIG {
		k.mig = p.MIGIndex
	}
	return k, true
}

// interval is one busy period: at least one request was in flight from start to end.
type interval struct{ start, end time.Time }

// gpuLoad is the recent activity of one GPU or MIG instance.
type gpuLoad struct {
	inflight  int
	busySince time.Time  // when inflight last went from 0 to 1
	busy      []interval // finished busy periods that overlap the window
	served    []time.Time
}

// loadStats is the activity of one GPU or MIG instance over the last loadWindow.
type loadStats struct {
	busy     float64 // fraction of the window with at least one request in flight, 0..1
	inflight int
	served   int // requests finished in the window
}

// loadTracker counts in-flight and served requests per GPU over a sliding window. Requests of
// every pod sharing a GPU count towards the same GPU: its busy time is the union of theirs.
type loadTracker struct {
	now func() time.Time

	mu sync.Mutex
	m  map[gpuKey]*gpuLoad
}

func newLoadTracker(now func() time.Time) *loadTracker {
	return &loadTracker{now: now, m: make(map[gpuKey]*gpuLoad)}
}

// begin records a request starting on k; the returned func records its end.
func (t *loadTracker) begin(k gpuKey) (end func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.m[k]
	if l == nil {
		l = &gpuLoad{}
		t.m[k] = l
	}
	now := t.now()
	if l.inflight == 0 {
		l.busySince = now
	}
	l.inflight++
	return func() { t.end(k) }
}

func (t *loadTracker) end(k gpuKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.m[k]
	now := t.now()
	l.inflight--
	l.served = append(l.served, now)
	if l.inflight == 0 {
		l.busy = append(l.busy, interval{l.busySince, now})
	}
	l.prune(now)
}

// stats reports the activity of k over the window ending now.
func (t *loadTracker) stats(k gpuKey) loadStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.m[k]
	if l == nil {
		return loadStats{}
	}
	now := t.now()
	l.prune(now)
	from := now.Add(-loadWindow)
	var busy time.Duration
	for _, iv := range l.busy {
		busy += iv.end.Sub(later(iv.start, from))
	}
	if l.inflight > 0 {
		busy += now.Sub(later(l.busySince, from))
	}
	frac := min(max(float64(busy)/float64(loadWindow), 0), 1)
	if l.inflight == 0 && len(l.busy) == 0 && len(l.served) == 0 {
		delete(t.m, k)
	}
	return loadStats{busy: frac, inflight: l.inflight, served: len(l.served)}
}

// prune drops what ended before the window.
func (l *gpuLoad) prune(now time.Time) {
	from := now.Add(-loadWindow)
	i := 0
	for i < len(l.busy) && !l.busy[i].end.After(from) {
		i++
	}
	l.busy = l.busy[i:]
	j := 0
	for j < len(l.served) && !l.served[j].After(from) {
		j++
	}
	l.served = l.served[j:]
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
