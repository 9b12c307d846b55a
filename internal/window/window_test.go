package window_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/window"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		from, to string
		want     string // "from → to", or the error
	}{
		{"", "", "2026-11-30T12:00:00Z → 2026-12-01T12:00:00Z"},
		{"-6h", "now", "2026-12-01T06:00:00Z → 2026-12-01T12:00:00Z"},
		{"-2d", "-1d", "2026-11-29T12:00:00Z → 2026-11-30T12:00:00Z"},
		{"", "2026-12-01T02:00:00+01:00", "2026-11-30T01:00:00Z → 2026-12-01T01:00:00Z"},
		{"2026-12-01T02:00:00.5Z", "-90m", "2026-12-01T02:00:00.5Z → 2026-12-01T10:30:00Z"},
		{"yesterday", "", `from: want RFC 3339 (2026-12-01T02:00:00Z), now, or a time before now (-6h, -90m, -2d), got "yesterday"`},
		{"", "-xh", `to: want a duration before now (-6h, -90m, -2d), got "-xh"`},
		{"-1h", "-2h", "from (2026-12-01T11:00:00Z) must be before to (2026-12-01T10:00:00Z)"},
		{"-40d", "", "a window is at most 744h0m0s; this one is 960h0m0s"},
	} {
		from, to, err := window.Parse(tc.from, tc.to, now)
		got := from.Format(time.RFC3339Nano) + " → " + to.Format(time.RFC3339Nano)
		if err != nil {
			got = err.Error()
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Parse(%q, %q) (-want +got):\n%s", tc.from, tc.to, diff)
		}
	}
}
