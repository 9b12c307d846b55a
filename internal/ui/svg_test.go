package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A clock axis ticks on round times of day, about eight of them, labelled for its span.
func TestClockTicks(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		from, to string
		want     string
	}{
		{"2026-12-01T01:59:00Z", "2026-12-01T02:10:00Z", "02:00 02:02 02:04 02:06 02:08 02:10"},
		{"2026-12-01T02:00:00.250Z", "2026-12-01T02:00:30Z", "02:00:05 02:00:10 02:00:15 02:00:20 02:00:25 02:00:30"},
		{"2026-11-30T02:37:46Z", "2026-12-01T02:37:46Z", "03:00 06:00 09:00 12:00 15:00 18:00 21:00 00:00"},
		{"2026-11-24T00:00:00Z", "2026-12-01T00:00:00Z", "Nov 24 00:00, Nov 25 00:00, Nov 26 00:00, Nov 27 00:00, Nov 28 00:00, Nov 29 00:00, Nov 30 00:00, Dec 1 00:00"},
	} {
		from, to := at(tc.from), at(tc.to)
		var labels []string
		for _, x := range clockTicks(from, to, 8) {
			labels = append(labels, fmtClock(x, to.Sub(from)))
		}
		sep := " "
		if to.Sub(from) > 36*time.Hour {
			sep = ", "
		}
		if diff := cmp.Diff(tc.want, strings.Join(labels, sep)); diff != "" {
			t.Errorf("%s → %s (-want +got):\n%s", tc.from, tc.to, diff)
		}
	}
}
