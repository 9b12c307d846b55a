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
	inv := events.Inventory{Scope: cloneScope(m.Scope), PodUIDs: sorted}
	env, err := envelope(events.KindInventory, id, listed, nil, "", nil, &inv, m)
	if err != nil {
		return nil, fmt.Errorf("inventory of %s: %w", m.Scope.Key(), err)
	}
	return env, nil
}

func cloneScope(s events.Scope) events.Scope {
	return events.Scope{Namespaces: slices.Clone(s.Namespaces), Selector: s.Selector}
}
