package store_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

// withDefaultExperiment is a new store holding eventgen's default experiment, stored in
// batches of size, and the experiment's envelopes.
func withDefaultExperiment(t *testing.T, size int) (*store.DB, []*events.Envelope) {
	t.Helper()
	db := pgtest.DB(t)
	envs := eventgen.Generate(eventgen.Default())
	ingestInBatches(t, db, envs, size)
	return db, envs
}

// copyAt is a copy of env under id, about pod, that occurred (and was observed) at at, with its
// raw bytes encoded again to match.
func copyAt(tb testing.TB, env *events.Envelope, id string, pod *events.PodRef, at time.Time) *events.Envelope {
	tb.Helper()
	c := *env
	c.ID, c.Pod, c.OccurredAt, c.ObservedAt = id, pod, at, at
	raw, err := events.Encode(&c)
	if err != nil {
		tb.Fatal(err)
	}
	c.Raw = raw
	return &c
}

// shuffle puts envs in the order the generator seeded with (seed1, seed2) gives, in place.
func shuffle(envs []*events.Envelope, seed1, seed2 uint64) {
	rand.New(rand.NewPCG(seed1, seed2)).Shuffle(len(envs), func(i, j int) { envs[i], envs[j] = envs[j], envs[i] })
}

// checkAgainstAlign fails the test for every pod of uids whose timeline in db is not the one
// align builds from envs (event data compared as canonical JSON); where says which case it is.
func checkAgainstAlign(t *testing.T, where string, db *store.DB, envs []*events.Envelope, uids []string) {
	t.Helper()
	got := timelines(t, db, uids)
	for _, uid := range uids {
		want, ok := align.Build(uid, envs, events.DefaultLabelKeys)
		if !ok {
			t.Fatalf("%s: align found no events for %s", where, uid)
		}
		if diff := cmp.Diff(normalize(want), normalize(got[uid])); diff != "" {
			t.Errorf("%s: pod %s (%s): store and align disagree (-align +store):\n%s", where, uid, want.Pod.Name, diff)
		}
	}
}

// endedUnobserved counts the timelines that ended deleted_unobserved: those an inventory ended.
func endedUnobserved(tls map[string]align.Timeline) int {
	n := 0
	for _, tl := range tls {
		if tl.EndedReason != nil && *tl.EndedReason == "deleted_unobserved" {
			n++
		}
	}
	return n
}

// canonicalJSON re-encodes a JSON document with sorted keys and no spacing.
func canonicalJSON(b []byte) json.RawMessage {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return b
	}
	out, _ := json.Marshal(v)
	return out
}
