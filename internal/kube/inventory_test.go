package kube_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

func TestInventoryEnvelope(t *testing.T) {
	var uids []string
	for _, pod := range recordedPods(t) {
		uids = append(uids, string(pod.UID))
	}
	listedAt := time.Date(2026, 11, 30, 4, 34, 59, 987654321, time.UTC)
	sorted := []string{
		"27c08d72-0f36-4a29-b452-2cd95154cfd5", // background-3
		"2d9be9b7-b860-476f-aba0-1897b5056825", // background-7
		"36de4a47-53de-4b49-acb0-2c6682025a00", // background-1
		"448e7f19-ce23-45d7-88f7-62be84ed6b52", // oversized-1
		"6ee92199-b806-4aed-80ba-6687a24a01b2", // priority-1
		"7e3f0371-0c75-4622-8452-24e3d1004cd3", // control-2
		"86d48a5e-36d8-47cf-a53f-189646994e7a", // background-4
		"8cf05df4-0368-4bb3-96b1-a018597cdeb0", // control-1
		"a9443f32-e509-4c68-8249-a842d389003b", // background-8
		"ad0d8ea6-2497-4235-8af4-24ff23cc181f", // background-6
		"d7bd0260-c9be-44ad-9773-e24fa3798ab1", // background-2
		"f4c1a56b-3fdb-4005-87d7-d308a5de534b", // affinity-2
		"f5f34b45-149d-4f6e-b4cc-c816a06e80d3", // affinity-1
	}

	env, err := kube.InventoryEnvelope(uids, listedAt, meta)
	if err != nil {
		t.Fatal(err)
	}
	want := head{
		// sha256 of the scope key, then each sorted UID after a newline; the first 32 hex digits.
		ID:         "inventory/lab/1aab1aed48ad2d89aa247db90d0aa44f/2026-11-30T04:34:59.987654Z",
		Kind:       "inventory",
		OccurredAt: "2026-11-30T04:34:59.987654Z", // when the list started, to the microsecond
		ObservedAt: "2026-11-30T04:35:00.123456Z",
	}
	if diff := cmp.Diff(want, headOf(env)); diff != "" {
		t.Errorf("envelope (-want +got):\n%s", diff)
	}
	wantData := &events.Inventory{
		Scope:   events.Scope{Namespaces: []string{"ai-lab"}, Selector: "schedlens.io/experiment"},
		PodUIDs: sorted,
	}
	if diff := cmp.Diff(wantData, env.Payload); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	checkRoundTrip(t, env)

	t.Run("order and duplicates do not matter", func(t *testing.T) {
		shuffled := append(slices.Clone(uids), uids[3], uids[0])
		slices.Reverse(shuffled)
		again, err := kube.InventoryEnvelope(shuffled, listedAt, meta)
		if err != nil {
			t.Fatal(err)
		}
		if again.ID != env.ID {
			t.Errorf("id = %q, want %q", again.ID, env.ID)
		}
	})
	t.Run("another scope is another inventory", func(t *testing.T) {
		m := meta
		m.Scope = events.Scope{Selector: "schedlens.io/experiment"}
		other, err := kube.InventoryEnvelope(uids, listedAt, m)
		if err != nil {
			t.Fatal(err)
		}
		if other.ID == env.ID {
			t.Errorf("same id %q for scopes %q and %q", env.ID, meta.Scope.Key(), m.Scope.Key())
		}
	})
	t.Run("an empty scope lists no pods", func(t *testing.T) {
		empty, err := kube.InventoryEnvelope(nil, listedAt, meta)
		if err != nil {
			t.Fatal(err)
		}
		if got := empty.Payload.(*events.Inventory).PodUIDs; got == nil || len(got) != 0 {
			t.Errorf("pod_uids = %#v, want an empty list", got)
		}
		checkRoundTrip(t, empty)
	})
	t.Run("an invalid uid is an error", func(t *testing.T) {
		if _, err := kube.InventoryEnvelope([]string{"nope"}, listedAt, meta); err == nil {
			t.Error("no error")
		}
	})
}
