package collector_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natstest"
)

// With the inventory chunk forced down to 5 UIDs, the recorded scope's 13 pods are published
// as one inventory in 3 parts: the same list time, parts 1 to 3, together every pod once.
func TestInventoryIsPublishedInParts(t *testing.T) {
	srv := natstest.Start(t)
	k, pods := recordedCluster(t)
	startCollector(t, k, srv.URL(), testOpts{invChunk: 5})
	var invs []*events.Envelope
	waitFor(t, 10*time.Second, "an inventory in 3 parts", func() bool {
		invs = inventoriesIn(streamEnvelopes(t, srv.URL()))
		return len(invs) >= 3
	})
	var union, want []string
	for i, env := range invs[:3] {
		inv := env.Payload.(*events.Inventory)
		if inv.Parts != 3 || inv.Part != i+1 || len(inv.PodUIDs) > 5 || !env.OccurredAt.Equal(invs[0].OccurredAt) {
			t.Errorf("inventory envelope %d: part %d of %d, %d UIDs, listed %s", i, inv.Part, inv.Parts, len(inv.PodUIDs), env.OccurredAt)
		}
		union = append(union, inv.PodUIDs...)
	}
	for _, p := range pods {
		want = append(want, string(p.UID))
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, union); diff != "" {
		t.Errorf("the parts' UIDs (-pods +parts):\n%s", diff)
	}
}
