package correlator

import "testing"

func TestUnconsumedBytesScalesTheStreamByTheBacklog(t *testing.T) {
	for _, tc := range []struct {
		bytes, msgs, unconsumed uint64
		want                    float64
	}{
		{1000, 10, 0, 0},
		{1000, 10, 5, 500},
		{1000, 10, 10, 1000},
		{1000, 10, 25, 1000}, // pending counted beyond what the stream holds: at most all of it
		{0, 0, 3, 0},
	} {
		if got := unconsumedBytes(tc.bytes, tc.msgs, tc.unconsumed); got != tc.want {
			t.Errorf("unconsumedBytes(%d, %d, %d) = %v, want %v", tc.bytes, tc.msgs, tc.unconsumed, got, tc.want)
		}
	}
}
