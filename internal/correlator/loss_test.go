package correlator_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/eventgen"
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
	if got := counter(t, reg, "schedlens_correlator_stream_lost_total"); got != float64(discarded) {
		t.Errorf("stream_lost_total = %v, want %d (sequences %d..%d discarded unconsumed)", got, discarded, first+1, info.State.FirstSeq-1)
	}
	if got, want := e.stats().EventsTotal, int64(first)+int64(info.State.Msgs); got != want {
		t.Errorf("%d events stored, want %d (the first %d and the %d the stream still held)", got, want, first, info.State.Msgs)
	}
}
