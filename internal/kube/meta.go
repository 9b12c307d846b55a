package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/internal/events"
)

// Meta is what every envelope from one collector shares.
type Meta struct {
	Cluster  string           // envelope cluster
	Source   string           // envelope source, e.g. "collector/<hostname>"
	Observed time.Time        // when the collector saw the object (envelope observed_at)
	Scope    events.Scope     // the collector's scope; copied into pod_status data.scope and inventory
	Labels   events.LabelKeys // experiment label keys (experiment/arm/run)
	// DRA resolves pods' ResourceClaims (PodEnvelope); nil where the cluster serves no DRA.
	DRA DRA
}

// envelope builds an envelope around payload and returns it exactly as events.Decode reads it
// back: it encodes the envelope and decodes the bytes, so Data, Payload and the times are what
// every consumer will see, and an envelope the correlator would dead-letter is an error here.
func envelope(kind events.Kind, id string, occurred time.Time, pod *events.PodRef, node string,
	exp *events.ExperimentRef, payload any, m Meta) (*events.Envelope, error) {
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", kind, err)
	}
	env := &events.Envelope{
		V:          events.Version,
		ID:         envelopeID(kind, id),
		Kind:       kind,
		Cluster:    m.Cluster,
		Source:     m.Source,
		OccurredAt: micro(occurred),
		ObservedAt: micro(m.Observed),
		Pod:        pod,
		Node:       node,
		Experiment: exp,
		Data:       data,
	}
	b, err := events.Encode(env)
	if err != nil {
		return nil, err
	}
	decoded, err := events.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", env.ID, err)
	}
	return decoded, nil
}

// envelopeID keeps id when it fits events.MaxIDLen and otherwise replaces it by a digest, which
// is as deterministic as the id itself.
func envelopeID(kind events.Kind, id string) string {
	if len(id) <= events.MaxIDLen {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return string(kind) + "/sha256/" + hex.EncodeToString(sum[:])
}

// micro is t as the envelope codec keeps it: microseconds, UTC.
func micro(t time.Time) time.Time {
	return t.Truncate(time.Microsecond).UTC()
}

// microPtr is micro for an optional Kubernetes time; nil when unset.
func microPtr(t *metav1.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	v := micro(t.Time)
	return &v
}

// experimentRef reads the experiment attribution from labels; nil when no experiment is named.
func experimentRef(labels map[string]string, keys events.LabelKeys) *events.ExperimentRef {
	name := labels[keys.Experiment]
	if keys.Experiment == "" || name == "" {
		return nil
	}
	ref := &events.ExperimentRef{Name: name}
	if keys.Arm != "" {
		ref.Arm = labels[keys.Arm]
	}
	if keys.Run != "" {
		ref.Run = labels[keys.Run]
	}
	return ref
}

// cloneMap copies a string map; nil when it is empty, as the codec would decode it.
func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// deletedSuffix is appended to the id of the snapshot taken when an object is deleted, which
// keeps the resourceVersion of its last state.
func deletedSuffix(deleted bool) string {
	if deleted {
		return "/deleted"
	}
	return ""
}

// joinID joins id parts with "/".
func joinID(parts ...string) string { return strings.Join(parts, "/") }
