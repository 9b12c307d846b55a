// Package window reads the time windows that reads of workloads and disruptions cover, as the
// API and the web UI take them from a query string: each bound RFC 3339, "now", or a time before
// now ("-6h", "-90m", "-2d"), the last Default when none is given, at most Max long.
package window

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Default is the window a read covers when from is not given: the Default before to.
const Default = 24 * time.Hour

// Max bounds a window: a read looks at every pod alive in it.
const Max = 31 * 24 * time.Hour

// ParseTime reads a window bound: RFC 3339, "now", or a duration before now ("-6h", "-90m",
// "-2d"; d is 24 hours).
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "now":
		return now, nil
	case strings.HasPrefix(s, "-"):
		d, err := parseAgo(s[1:])
		if err != nil {
			return time.Time{}, err
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want RFC 3339 (2026-12-01T02:00:00Z), now, or a time before now (-6h, -90m, -2d), got %q", s)
	}
	return t.UTC(), nil
}

func parseAgo(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil || days < 0 {
			return 0, fmt.Errorf("want a number of days before now, got %q", "-"+s)
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration before now (-6h, -90m, -2d), got %q", "-"+s)
	}
	return d, nil
}

// Parse reads a window from its bounds as ParseTime does; to "" is now, from "" is Default
// before to. A bad bound, an empty window or one longer than Max is an error that says which.
func Parse(from, to string, now time.Time) (time.Time, time.Time, error) {
	end := now
	if to != "" {
		t, err := ParseTime(to, now)
		if err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("to: %w", err)
		}
		end = t
	}
	start := end.Add(-Default)
	if from != "" {
		t, err := ParseTime(from, now)
		if err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("from: %w", err)
		}
		start = t
	}
	switch {
	case !start.Before(end):
		return time.Time{}, time.Time{}, fmt.Errorf("from (%s) must be before to (%s)", start.Format(time.RFC3339), end.Format(time.RFC3339))
	case end.Sub(start) > Max:
		return time.Time{}, time.Time{}, fmt.Errorf("a window is at most %s; this one is %s", Max, end.Sub(start).Round(time.Second))
	}
	return start, end, nil
}
