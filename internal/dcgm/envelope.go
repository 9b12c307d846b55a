package dcgm

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/events"
)

// Resolver maps a pod's namespace and name to its UID: the collector's pod cache. dcgm-exporter
// names pods but a pod_status history is keyed by UID, so a gpu_sample needs one to be attributed.
type Resolver interface {
	PodUID(namespace, name string) (uid string, ok bool)
}

// Envelopes turns the samples of one scrape taken at `at` into gpu_sample envelopes.
//
// The id is "gpu_sample/<node>/<uuid>[/<mig id>]/<at unix nanos>[/<namespace>/<pod>[/<container>]]":
// deterministic from the scrape alone (node, GPU UUID, MIG instance, scrape time and the pod
// labels, never the resolver's answer), so a restart or a second collector reading the same
// data produces the same ids. The pod part keeps apart the series a time-sliced GPU has for each
// of its pods, which would otherwise share an id and be deduplicated into one. An id longer than
// events.MaxIDLen is replaced by "gpu_sample/sha256/<hex of the long id>".
//
// Times are truncated to the microsecond (what events.Decode and Postgres keep) and made UTC,
// and the id uses the truncated scrape time, so an envelope equals its decoded copy. The node is
// the sample's (its hostname label) or fallbackNode when the label is absent. The pod is set
// only when res resolves the sample's pod to a UID; otherwise the sample is still published,
// without a pod: the GPU's utilisation matters even when attribution fails, and GPUSample has
// no field for an unresolved pod name.
//
// A sample that cannot become a valid envelope (no node, no metrics, neither UUID nor GPU
// index) is left out and reported in the returned error; the others are still returned.
//
// The samples' period is unknown here (data.period_s is left out, which the correlator counts
// as one second); EnvelopesEvery sets it.
func Envelopes(samples []Sample, cluster, source, fallbackNode string, at, observed time.Time, res Resolver) ([]*events.Envelope, error) {
	return EnvelopesEvery(0, samples, cluster, source, fallbackNode, at, observed, res)
}

// EnvelopesEvery is Envelopes for samples taken every period (the scrape or query interval):
// each stands for that much GPU time, written to data.period_s, from which the correlator sums
// a pod's GPU seconds. A period that is not positive is left out, as in Envelopes.
func EnvelopesEvery(period time.Duration, samples []Sample, cluster, source, fallbackNode string, at, observed time.Time, res Resolver) ([]*events.Envelope, error) {
	if len(samples) == 0 {
		return nil, nil
	}
	switch {
	case cluster == "":
		return nil, errors.New("gpu_sample envelopes: no cluster")
	case source == "":
		return nil, errors.New("gpu_sample envelopes: no source")
	case at.IsZero():
		return nil, errors.New("gpu_sample envelopes: no scrape time")
	case observed.IsZero():
		return nil, errors.New("gpu_sample envelopes: no observation time")
	}
	occurred := at.Truncate(time.Microsecond).UTC()
	seen := observed.Truncate(time.Microsecond).UTC()

	out := make([]*events.Envelope, 0, len(samples))
	var errs []error
	for _, s := range samples {
		env, err := envelope(s, cluster, source, fallbackNode, occurred, seen, period, res)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, env)
	}
	return out, errors.Join(errs...)
}

func envelope(s Sample, cluster, source, fallbackNode string, at, observed time.Time, period time.Duration, res Resolver) (*events.Envelope, error) {
	node := s.Node
	if node == "" {
		node = fallbackNode
	}
	switch {
	case node == "":
		return nil, fmt.Errorf("gpu %s (%s): no hostname label and no fallback node", s.GPU, s.UUID)
	case s.UUID == "" && s.GPU == "":
		return nil, fmt.Errorf("sample on node %s: neither UUID nor gpu index", node)
	case len(s.Metrics) == 0:
		return nil, fmt.Errorf("gpu %s (%s) on node %s: no metrics", s.GPU, s.UUID, node)
	}
	payload := &events.GPUSample{
		GPU:        s.GPU,
		UUID:       s.UUID,
		Model:      s.Model,
		MIGProfile: s.MIGProfile,
		Metrics:    maps.Clone(s.Metrics),
		DRA:        s.DRA,
	}
	if s.SharedBy > 1 {
		payload.SharedBy = s.SharedBy
	}
	if period > 0 {
		payload.PeriodS = period.Seconds()
	}
	env := &events.Envelope{
		V:          events.Version,
		ID:         sampleID(s, node, at),
		Kind:       events.KindGPUSample,
		Cluster:    cluster,
		Source:     source,
		OccurredAt: at,
		ObservedAt: observed,
		Pod:        resolve(s.Pod, res),
		Node:       node,
		Payload:    payload,
	}
	// Encoded and decoded again, as the collector's other envelopes are: what the correlator
	// would dead-letter (a hostname beyond the codec's bounds, say) is an error here.
	b, err := events.Encode(env)
	if err != nil {
		return nil, fmt.Errorf("encode gpu %s (%s) sample: %w", s.GPU, s.UUID, err)
	}
	decoded, err := events.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("gpu %s (%s) on node %s: %w", s.GPU, s.UUID, node, err)
	}
	return decoded, nil
}

// sampleID is the envelope id of a sample scraped at `at` (see Envelopes).
func sampleID(s Sample, node string, at time.Time) string {
	device := s.UUID
	if device == "" {
		device = "gpu" + s.GPU
	}
	parts := []string{"gpu_sample", node, device}
	if s.MIGID != "" {
		parts = append(parts, s.MIGID)
	}
	parts = append(parts, strconv.FormatInt(at.UnixNano(), 10))
	if s.Pod != nil && s.Pod.Name != "" {
		parts = append(parts, s.Pod.Namespace, s.Pod.Name)
		if s.Container != "" {
			parts = append(parts, s.Container)
		}
	}
	id := strings.Join(parts, "/")
	if len(id) > events.MaxIDLen {
		sum := sha256.Sum256([]byte(id))
		return "gpu_sample/sha256/" + hex.EncodeToString(sum[:])
	}
	return id
}

// resolve returns the full reference of the pod a sample names, or nil when there is none or
// its namespace or UID is unknown (a UID that is not one would make the envelope invalid: it
// counts as unknown).
func resolve(p *events.PodRef, res Resolver) *events.PodRef {
	if p == nil || p.Name == "" || p.Namespace == "" || res == nil {
		return nil
	}
	uid, ok := res.PodUID(p.Namespace, p.Name)
	if !ok || !events.ValidUID(uid) {
		return nil
	}
	return &events.PodRef{Namespace: p.Namespace, Name: p.Name, UID: uid}
}
