// Package summary keeps request results as per-pod time buckets: counts, errors by class, the
// served/pre-Ready split, the first and last success, and the successful requests' latency as a
// DDSketch (github.com/DataDog/sketches-go) — a quantile read from it is within
// RelativeAccuracy of the exact one, however many results it holds. The store makes buckets
// of the results it no longer keeps raw (docs/operations.md#summaries). Pure: no I/O.
package summary

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"

	"github.com/schedlens/schedlens/internal/events"
)

// Width is a bucket's length: a bucket holds the results sent in [Start, Start+Width).
const Width = 10 * time.Second

// RelativeAccuracy bounds a quantile read from a bucket's sketch (or a merge of several): the
// value v returned for quantile q is within RelativeAccuracy·x of the exact x, the result of
// rank ⌊q·(n−1)⌋ among the n latencies (DDSketch's guarantee; TestQuantilesWithinTheBound).
const RelativeAccuracy = 0.01

// MaxErrorClasses bounds the error classes a bucket names; further classes count as "other".
const MaxErrorClasses = 8

// Bucket is the results of one pod sent in one Width.
type Bucket struct {
	PodUID string
	Start  time.Time
	// Requests counts every result; Errors those that failed; PreReady those sent while the
	// pod was not Ready (events.Request.Served is false) and PreReadyErrors the failed ones.
	Requests, Errors, PreReady, PreReadyErrors int64
	ErrorClasses                               map[string]int64
	// FirstSuccess and LastSuccess are the first and last successful result's send times (zero:
	// none succeeded): a gap between successes that crosses buckets is read exactly.
	FirstSuccess, LastSuccess time.Time
	// Latency holds the successful results' latency in milliseconds.
	Latency *ddsketch.DDSketch
}

func indexMapping() mapping.IndexMapping {
	m, err := mapping.NewLogarithmicMapping(RelativeAccuracy)
	if err != nil {
		panic(err) // a constant accuracy in (0, 1) cannot fail
	}
	return m
}

// NewSketch is an empty latency sketch.
func NewSketch() *ddsketch.DDSketch {
	return ddsketch.NewDDSketch(indexMapping(), store.NewSparseStore(), store.NewSparseStore())
}

// ErrorClass names why a result failed: its error (the prober's classes: timeout,
// connection_refused, …), else http_<status>, else "error".
func ErrorClass(r *events.Request) string {
	switch {
	case r.Error != "":
		if len(r.Error) > 64 {
			return r.Error[:64]
		}
		return r.Error
	case r.Status != 0:
		return fmt.Sprintf("http_%d", r.Status)
	}
	return "error"
}

// Add counts one result sent at at.
func (b *Bucket) Add(at time.Time, r *events.Request) {
	b.Requests++
	served := r.Served()
	if !served {
		b.PreReady++
	}
	if !r.OK {
		b.Errors++
		if !served {
			b.PreReadyErrors++
		}
		class := ErrorClass(r)
		if _, known := b.ErrorClasses[class]; !known && len(b.ErrorClasses) >= MaxErrorClasses {
			class = "other"
		}
		if b.ErrorClasses == nil {
			b.ErrorClasses = map[string]int64{}
		}
		b.ErrorClasses[class]++
		return
	}
	if b.FirstSuccess.IsZero() || at.Before(b.FirstSuccess) {
		b.FirstSuccess = at
	}
	if at.After(b.LastSuccess) {
		b.LastSuccess = at
	}
	if b.Latency == nil {
		b.Latency = NewSketch()
	}
	// A sketch takes values ≥ 0; a latency is one.
	_ = b.Latency.Add(math.Max(r.LatencyMS, 0))
}

// EncodeLatency is the latency sketch in sketches-go's compact encoding, without its index
// mapping (always RelativeAccuracy's); nil when no result succeeded.
func (b *Bucket) EncodeLatency() []byte {
	if b.Latency == nil {
		return nil
	}
	var out []byte
	b.Latency.Encode(&out, true)
	return out
}

// DecodeLatency reads a sketch EncodeLatency wrote.
func DecodeLatency(enc []byte) (*ddsketch.DDSketch, error) {
	s, err := ddsketch.DecodeDDSketch(enc, store.SparseStoreConstructor, indexMapping())
	if err != nil {
		return nil, fmt.Errorf("decode latency sketch: %w", err)
	}
	return s, nil
}

// Buckets groups results into buckets.
type Buckets struct {
	byKey map[key]*Bucket
}

type key struct {
	uid   string
	start int64
}

// Add counts one result of pod uid sent at at.
func (bs *Buckets) Add(uid string, at time.Time, r *events.Request) {
	if bs.byKey == nil {
		bs.byKey = map[key]*Bucket{}
	}
	start := at.UTC().Truncate(Width)
	k := key{uid, start.UnixNano()}
	b := bs.byKey[k]
	if b == nil {
		b = &Bucket{PodUID: uid, Start: start}
		bs.byKey[k] = b
	}
	b.Add(at, r)
}

// List is every bucket, by pod then start.
func (bs *Buckets) List() []*Bucket {
	keys := slices.SortedFunc(maps.Keys(bs.byKey), func(a, b key) int {
		if a.uid != b.uid {
			if a.uid < b.uid {
				return -1
			}
			return 1
		}
		return int(a.start - b.start)
	})
	out := make([]*Bucket, len(keys))
	for i, k := range keys {
		out[i] = bs.byKey[k]
	}
	return out
}
