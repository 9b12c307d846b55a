package compare

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sync"
)

// runMemo keeps the per-run results of the bootstrap (newArmSample) across comparisons: a
// comparison of a 300-run experiment repeats 400 resamples of every run, and between two
// requests usually only the run in progress changed. A run's values and within-run variances
// are a function of exactly its pods' values, the number of resamples and the generator's state
// before it, so they are keyed by all three (as bytes, not a hash: two keys are equal only when
// the inputs are) with the generator's state after it: a hit gives what computing would,
// bit for bit.
var runMemo = &memo{m: map[string]runMemoEntry{}}

// memoMaxEntries bounds the memo (a key is about a hundred bytes per pod, a value a few hundred
// bytes; an experiment of 300 runs and 4 arms takes 1,200): when full, it starts over.
const memoMaxEntries = 5000

type runMemoEntry struct {
	point    []float64
	lower    []bool
	censored int
	wvar     []float64
	wdf      int
	state    []byte // the generator's state after the run
}

type memo struct {
	mu sync.Mutex
	m  map[string]runMemoEntry
}

// memoOff is for tests and benchmarks: the bootstrap is computed every time.
var memoOff bool

func (m *memo) get(key string) (runMemoEntry, bool) {
	if m == nil || memoOff {
		return runMemoEntry{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[key]
	return e, ok
}

func (m *memo) put(key string, e runMemoEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.m) >= memoMaxEntries {
		clear(m.m)
	}
	m.m[key] = e
}

// runKey is every input of one run's bootstrap: the resamples, the generator's state and the
// frame (each pod's values, the latency buckets, the interruption), as bytes.
func runKey(f *runFrame, replicates int, src *rand.PCG) string {
	state, err := src.MarshalBinary()
	if err != nil {
		panic(err) // PCG's MarshalBinary cannot fail
	}
	b := make([]byte, 0, 64+len(state)+len(f.pods)*(120+8*len(f.buckets))+4*len(f.buckets))
	u := func(x uint64) { b = binary.LittleEndian.AppendUint64(b, x) }
	fl := func(x float64) { u(math.Float64bits(x)) }
	bl := func(x bool) {
		if x {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	u(uint64(replicates))
	u(uint64(len(state)))
	b = append(b, state...)
	fl(f.interruption)
	u(uint64(len(f.buckets)))
	for _, k := range f.buckets {
		b = binary.LittleEndian.AppendUint32(b, uint32(k))
	}
	u(uint64(len(f.pods)))
	for i := range f.pods {
		p := &f.pods[i]
		fl(p.pending)
		bl(p.hasPending)
		bl(p.scheduled)
		fl(p.gated)
		bl(p.ungated)
		fl(p.wait)
		bl(p.hasWait)
		fl(p.start)
		fl(p.load)
		fl(p.ttfs)
		bl(p.preempted)
		u(uint64(p.caused))
		u(uint64(p.restarts))
		u(uint64(p.served))
		u(uint64(p.servedErrors))
		u(uint64(p.preReadyErrors))
		fl(p.gpuSeconds)
		fl(p.gpuWeighted)
		fl(p.gpuIdle)
		bl(p.hasGPU)
		bl(p.latency != nil)
		u(uint64(len(p.latency)))
		for _, n := range p.latency {
			u(uint64(n))
		}
	}
	return string(b)
}
