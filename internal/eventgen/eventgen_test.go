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
