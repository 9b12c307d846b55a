package kube_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

func uidsN(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("0f0e0d0c-0000-4000-8000-%012d", i)
	}
	return out
}

// A scope larger than the chunk is published in parts: in order, at most chunk UIDs each, the
// same occurred_at, ids of the whole inventory with /part-i-of-n, and together exactly the UIDs.
func TestInventoryEnvelopesSplitsIntoParts(t *testing.T) {
	listedAt := time.Date(2026, 11, 30, 4, 34, 59, 987654000, time.UTC)
	uids := uidsN(7)
	whole, err := kube.InventoryEnvelope(uids, listedAt, meta)
	if err != nil {
		t.Fatal(err)
	}
	envs, err := kube.InventoryEnvelopes(uids, listedAt, meta, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 3 {
		t.Fatalf("%d envelopes for 7 UIDs in parts of 3, want 3", len(envs))
	}
	var union []string
	for i, env := range envs {
		inv := env.Payload.(*events.Inventory)
		if inv.Part != i+1 || inv.Parts != 3 || len(inv.PodUIDs) > 3 {
			t.Errorf("envelope %d: part %d of %d with %d UIDs", i, inv.Part, inv.Parts, len(inv.PodUIDs))
		}
		if want := fmt.Sprintf("%s/part-%d-of-3", whole.ID, i+1); env.ID != want {
			t.Errorf("id %s, want %s", env.ID, want)
		}
		if !env.OccurredAt.Equal(whole.OccurredAt) {
			t.Errorf("part %d occurred at %s, want %s", i+1, env.OccurredAt, whole.OccurredAt)
		}
		if _, err := events.Decode(env.Raw); err != nil {
			t.Errorf("part %d does not decode: %v", i+1, err)
		}
		union = append(union, inv.PodUIDs...)
	}
	if !slices.Equal(union, uids) {
		t.Errorf("the parts list %v, want %v", union, uids)
	}
	one, err := kube.InventoryEnvelopes(uids, listedAt, meta, 7)
	if err != nil || len(one) != 1 || one[0].ID != whole.ID || one[0].Payload.(*events.Inventory).Parts != 0 {
		t.Errorf("7 UIDs in parts of 7: %d envelopes (%v), want the whole inventory", len(one), err)
	}
}

// 30,000 pods — more than one NATS message of the default max_payload (1 MiB) holds — are
// published in parts that each fit.
func TestInventoryOfALargeScopeFitsTheDefaultPayload(t *testing.T) {
	const maxPayload = 1 << 20
	uids := uidsN(30_000)
	listedAt := time.Date(2026, 11, 30, 4, 34, 59, 0, time.UTC)
	whole, err := kube.InventoryEnvelope(uids, listedAt, meta)
	if err == nil && len(whole.Raw) <= maxPayload {
		t.Fatalf("the whole inventory is %d bytes: the test needs a scope beyond max_payload", len(whole.Raw))
	}
	envs, err := kube.InventoryEnvelopes(uids, listedAt, meta, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 3 {
		t.Errorf("%d parts, want 3 of at most %d UIDs", len(envs), kube.DefaultInventoryChunk)
	}
	for _, env := range envs {
		if len(env.Raw) > maxPayload {
			t.Errorf("%s is %d bytes, more than max_payload", env.ID, len(env.Raw))
		}
		if !strings.Contains(env.ID, "/part-") {
			t.Errorf("%s is not named as a part", env.ID)
		}
	}
}
