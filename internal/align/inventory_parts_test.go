package align_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
)

func part(p, n int, at time.Time, uids ...string) align.Inventory {
	inv := align.Inventory{Cluster: "lab", ScopeKey: "ai-lab", ListedAt: at, Part: p, Parts: n, UIDs: map[string]bool{}}
	for _, u := range uids {
		inv.UIDs[u] = true
	}
	return inv
}

// Whole inventories pass as they are; a chunked one becomes the union of its parts once all are
// there, and is left out while one is missing.
func TestWholeInventoriesUnitesCompleteParts(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	whole := part(0, 0, t0, "a")
	got := align.WholeInventories([]align.Inventory{
		part(2, 2, t0.Add(time.Minute), "c"), whole, part(1, 2, t0.Add(time.Minute), "b"),
		part(1, 3, t0.Add(2*time.Minute), "d"), part(3, 3, t0.Add(2*time.Minute), "f"), // part 2 of 3 missing
		part(1, 2, t0.Add(time.Minute), "b"), // a duplicate part
	})
	want := []align.Inventory{whole, {Cluster: "lab", ScopeKey: "ai-lab", ListedAt: t0.Add(time.Minute), UIDs: map[string]bool{"b": true, "c": true}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
