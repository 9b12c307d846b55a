// Package eventstest puts test envelopes through the wire format, for tests of the code that
// builds envelopes (the collector's converters, the GPU sampling) and of the code that reads them.
package eventstest

import (
	"testing"

	"github.com/schedlens/schedlens/internal/events"
)

// RoundTrip encodes env and decodes it again, the way an envelope reaches every reader, failing
// the test when either step fails: the result has Raw and Data set and times as on the wire.
func RoundTrip(t testing.TB, env *events.Envelope) *events.Envelope {
	t.Helper()
	b, err := events.Encode(env)
	if err != nil {
		t.Fatalf("encode %s: %v", env.ID, err)
	}
	got, err := events.Decode(b)
	if err != nil {
		t.Fatalf("decode %s: %v\n%s", env.ID, err, b)
	}
	return got
}
