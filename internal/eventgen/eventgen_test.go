package eventgen_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
)

func TestGenerateIsDeterministicAndValid(t *testing.T) {
	a := eventgen.Generate(eventgen.Default())
	b := eventgen.Generate(eventgen.Default())
	if len(a) == 0 {
		t.Fatal("no envelopes generated")
	}
	ids := map[string]bool{}
	kinds := map[events.Kind]int{}
	for i := range a {
		if diff := cmp.Diff(string(a[i].Raw), string(b[i].Raw)); diff != "" {
			t.Fatalf("envelope %d differs between two runs with one seed:\n%s", i, diff)
		}
		if ids[a[i].ID] {
			t.Fatalf("id %s generated twice", a[i].ID)
		}
		ids[a[i].ID] = true
		kinds[a[i].Kind]++
	}
	for _, k := range []events.Kind{events.KindPodStatus, events.KindK8sEvent, events.KindRequest} {
		if kinds[k] == 0 {
			t.Errorf("no %s envelopes generated", k)
		}
	}
}

// A busy cluster's mix: inventories now and then, never-scheduled pods deleted a few runs
// later, so the largest inventory does not grow with the number of runs; the prefix keeps two
// generated streams apart.
func TestBusyMixKeepsInventoriesBounded(t *testing.T) {
	largest := func(runs, oversizedRuns int) (inventories, most int) {
		cfg := eventgen.Default()
		cfg.Runs, cfg.InventoryEvery, cfg.OversizedRuns, cfg.IDPrefix = runs, 3, oversizedRuns, "x/"
		for _, env := range eventgen.Generate(cfg) {
			if env.ID[:2] != "x/" {
				t.Fatalf("id %q lacks the prefix", env.ID)
			}
			if inv, ok := env.Payload.(*events.Inventory); ok {
				inventories++
				most = max(most, len(inv.PodUIDs))
			}
		}
		return inventories, most
	}
	invs12, most12 := largest(12, 2)
	invs30, most30 := largest(30, 2)
	_, kept30 := largest(30, 0)
	if diff := cmp.Diff([]int{6, 12}, []int{invs12, invs30}); diff != "" {
		t.Errorf("inventories after runs 1, 2 and every third (-want +got):\n%s", diff)
	}
	if most30 != most12 || kept30 <= most30 {
		t.Errorf("largest inventory: %d pods over 12 runs, %d over 30 (want equal), %d over 30 keeping every pod (want more)", most12, most30, kept30)
	}
}
