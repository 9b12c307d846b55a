package correlator_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/metricstest"
)

// The stream keeps discard-old: when the correlator is away long enough for the stream's byte
// limit to discard messages it never consumed, the next correlator counts exactly those in
// schedlens_correlator_stream_lost_total (and logs them) instead of going on as if nothing
// happened.
func TestMessagesDiscardedBeforeDeliveryAreCounted(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	st, err := bus.EnsureStream(ctx, e.js, bus.StreamConfig{MaxBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	envs := eventgen.Generate(eventgen.Default())
	first := 20
	e.publish(envs[:first])
	cancel, _ := e.start(testConfig(), prometheus.NewRegistry())
	e.drained("correlator")
	cancel()
	time.Sleep(100 * time.Millisecond)

	// While no correlator runs, far more than 64 KiB arrive: the oldest unconsumed go.
	e.publish(envs[first:])
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	discarded := info.State.FirstSeq - uint64(first) - 1
	if discarded == 0 {
		t.Fatalf("the stream discarded nothing (first seq %d): the test needs a smaller limit", info.State.FirstSeq)
	}

	reg := prometheus.NewRegistry()
	e.start(testConfig(), reg)
	e.drained("correlator")
	if got := metricstest.Value(t, reg, "schedlens_correlator_stream_lost_total"); got != float64(discarded) {
		t.Errorf("stream_lost_total = %v, want %d (sequences %d..%d discarded unconsumed)", got, discarded, first+1, info.State.FirstSeq-1)
	}
	if got, want := e.stats().EventsTotal, int64(first)+int64(info.State.Msgs); got != want {
		t.Errorf("%d events stored, want %d (the first %d and the %d the stream still held)", got, want, first, info.State.Msgs)
	}
}

// Inventories published in parts (a large scope) go through the stream and the correlator as
// one inventory each: the stored timelines are align's over the same envelopes, and they end the
// same pods as the whole inventories would.
func TestChunkedInventoriesThroughTheCorrelator(t *testing.T) {
	t.Parallel()
	e := setup(t)
	envs := eventgen.Generate(eventgen.Default())
	split, _, err := eventgen.ChunkInventories(envs, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	parts := 0
	for _, env := range split {
		if inv, ok := env.Payload.(*events.Inventory); ok && inv.Parts > 0 {
			parts++
		}
	}
	if parts < 4 {
		t.Fatalf("%d inventory parts: the test needs several", parts)
	}
	// The last part of each inventory first: nothing may be applied until all are there.
	slices.Reverse(split)
	e.publish(split)
	e.start(testConfig(), prometheus.NewRegistry())
	e.drained("correlator")
	if got := e.stats().EventsTotal; got != int64(len(split)) {
		t.Errorf("%d events stored, want %d", got, len(split))
	}
	e.checkTimelines(split)
	whole := map[string]*string{}
	for _, env := range envs {
		if uid := env.PodUID(); uid != "" {
			tl, _ := align.Build(uid, envs, events.DefaultLabelKeys)
			whole[uid] = tl.EndedReason
		}
	}
	for uid, want := range whole {
		got, err := e.db.Timeline(context.Background(), uid)
		if err != nil {
			t.Fatal(err)
		}
		if (want == nil) != (got.EndedReason == nil) || (want != nil && *want != *got.EndedReason) {
			t.Errorf("pod %s ended %v with parts, %v with whole inventories", uid, got.EndedReason, want)
		}
	}
}
