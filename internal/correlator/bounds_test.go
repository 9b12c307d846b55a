package correlator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/events"
)

// Hostile but well-formed envelopes — a far-future observed_at that would pin a definition
// forever, an over-long string, a count beyond 32 bits — are dead letters with the bound they
// break, and the valid envelopes beside them are stored: a definition whose repeats lies beyond
// 32 bits among them, since a definition keeps such a value as it came and names it.
func TestOutOfBoundsEnvelopesAreDeadLettered(t *testing.T) {
	t.Parallel()
	e := setup(t)
	good := `{"v":1,"id":"%s","kind":"experiment","cluster":"lab","source":"collector/lab-0",
		"occurred_at":"2026-11-30T04:20:00Z","observed_at":%q,"experiment":{"name":"day20"},
		"data":{"name":"day20","change":%q,"repeats":%d}}`
	bad := []struct {
		name, kind, body, wantErr string
	}{
		{"far-future observed_at", "experiment", fmt.Sprintf(good, "exp-future", "2126-11-30T04:20:00Z", "x", 3),
			"invalid envelope: observed_at: 2126-11-30T04:20:00Z is more than 1h0m0s ahead of the receive time"},
		{"over-long string", "experiment", fmt.Sprintf(good, "exp-long", "2026-11-30T04:20:00Z", strings.Repeat("x", events.MaxStringLen+1), 3),
			"invalid envelope: data.change: longer than 65536 bytes"},
		{"count beyond 32 bits", "k8s_event", `{"v":1,"id":"ev-count","kind":"k8s_event","cluster":"lab","source":"collector/lab-0",
			"occurred_at":"2026-11-30T04:20:00Z","observed_at":"2026-11-30T04:20:00Z","data":{"reason":"FailedScheduling","count":2147483648}}`,
			"invalid envelope: data.count: larger than 2147483647"},
	}
	for i, b := range bad {
		e.publishRaw("schedlens.v1.lab."+b.kind, fmt.Sprintf("bounds-%d", i), b.body)
	}
	var valid []*events.Envelope
	for _, body := range []string{
		fmt.Sprintf(good, "exp-ok", "2026-11-30T04:20:00Z", "priority", 3),
		fmt.Sprintf(good, "exp-repeats", "2026-11-30T04:20:00Z", "priority", int64(1)<<31),
	} {
		env, err := events.Decode([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		valid = append(valid, env)
	}
	e.publish(valid)

	e.start(testConfig(), prometheus.NewRegistry())
	e.drained("correlator")

	if st := e.stats(); st.EventsTotal != int64(len(valid)) || st.DeadLettersTotal != int64(len(bad)) {
		t.Fatalf("events %d, dead letters %d; want %d and %d", st.EventsTotal, st.DeadLettersTotal, len(valid), len(bad))
	}
	dls := e.deadLetters(10)
	for i, b := range bad {
		if !strings.HasPrefix(dls[i].Error, b.wantErr) {
			t.Errorf("%s: dead letter error %q, want it to start with %q", b.name, dls[i].Error, b.wantErr)
		}
	}
}
