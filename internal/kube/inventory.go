package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/schedlens/schedlens/internal/events"
)

// InventoryEnvelope lists the pods in scope after a full list started at listedAt: id
// "inventory/<cluster>/<first 32 hex of sha256(scope key, sorted uids)>/<listedAt RFC 3339 nano>",
// occurred_at listedAt (a pod last seen before it and not listed was deleted unobserved),
// observed_at m.Observed, data the scope and the sorted, de-duplicated UIDs.
func InventoryEnvelope(uids []string, listedAt time.Time, m Meta) (*events.Envelope, error) {
	envs, err := InventoryEnvelopes(uids, listedAt, m, max(len(uids), 1)) // one envelope, whatever its size
	if err != nil {
		return nil, err
	}
	return envs[0], nil
}

// DefaultInventoryChunk is how many UIDs one inventory envelope carries at most: 10,000 UIDs
// are ~390 KB of JSON, well under NATS' default max_payload of 1 MiB (which holds ~27,000).
const DefaultInventoryChunk = 10_000

// InventoryEnvelopes is InventoryEnvelope for a scope of any size: when the sorted UIDs are more
// than chunk (≤ 0: DefaultInventoryChunk), they are split in order into Parts envelopes of at
// most chunk UIDs each, part i of n with id "<the whole inventory's id>/part-<i>-of-<n>" and the
// same occurred_at, which the correlator applies as one inventory once all are stored.
func InventoryEnvelopes(uids []string, listedAt time.Time, m Meta, chunk int) ([]*events.Envelope, error) {
	if chunk <= 0 {
		chunk = DefaultInventoryChunk
	}
	sorted := slices.Clone(uids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	if sorted == nil {
		sorted = []string{} // an empty scope is a statement too: every pod in it is gone
	}
	h := sha256.New()
	h.Write([]byte(m.Scope.Key()))
	for _, uid := range sorted {
		h.Write([]byte{'\n'})
		h.Write([]byte(uid))
	}
	listed := micro(listedAt)
	id := joinID(string(events.KindInventory), m.Cluster, hex.EncodeToString(h.Sum(nil))[:32], listed.Format(time.RFC3339Nano))
	if len(sorted) <= chunk {
		inv := events.Inventory{Scope: cloneScope(m.Scope), PodUIDs: sorted}
		env, err := envelope(events.KindInventory, id, listed, nil, "", nil, &inv, m)
		if err != nil {
			return nil, fmt.Errorf("inventory of %s: %w", m.Scope.Key(), err)
		}
		return []*events.Envelope{env}, nil
	}
	n := (len(sorted) + chunk - 1) / chunk
	if n > events.MaxInventoryParts {
		return nil, fmt.Errorf("inventory of %s: %d pods in parts of %d are more than %d parts", m.Scope.Key(), len(sorted), chunk, events.MaxInventoryParts)
	}
	envs := make([]*events.Envelope, 0, n)
	for i := range n {
		inv := events.Inventory{Scope: cloneScope(m.Scope), PodUIDs: sorted[i*chunk : min((i+1)*chunk, len(sorted))], Part: i + 1, Parts: n}
		env, err := envelope(events.KindInventory, fmt.Sprintf("%s/part-%d-of-%d", id, i+1, n), listed, nil, "", nil, &inv, m)
		if err != nil {
			return nil, fmt.Errorf("inventory of %s, part %d of %d: %w", m.Scope.Key(), i+1, n, err)
		}
		envs = append(envs, env)
	}
	return envs, nil
}

func cloneScope(s events.Scope) events.Scope {
	return events.Scope{Namespaces: slices.Clone(s.Namespaces), Selector: s.Selector}
}
