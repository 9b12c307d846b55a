package ui

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"
)

// svg accumulates SVG markup; every text and attribute value goes through esc.
type svg struct{ strings.Builder }

func (s *svg) f(format string, args ...any) { fmt.Fprintf(&s.Builder, format, args...) }

func esc(s string) string { return html.EscapeString(s) }

// n formats a coordinate compactly.
func n(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// Milestone marker shapes: distinct shapes as well as colours, so they read in grey and print.
func (s *svg) marker(milestone string, x, y float64, title string, t float64) {
	attrs := fmt.Sprintf(`class="ms ms-%s" data-milestone="%s" data-t="%s"`, milestone, milestone, strconv.FormatFloat(t, 'f', 6, 64))
	if title != "" {
		title = "<title>" + esc(title) + "</title>"
	}
	switch milestone {
	case "created":
		s.f(`<circle %s cx="%s" cy="%s" r="3">%s</circle>`, attrs, n(x), n(y), title)
	case "scheduled":
		s.f(`<path %s d="M%s %sl3.5 6h-7z">%s</path>`, attrs, n(x), n(y-3.5), title)
	case "running":
		s.f(`<rect %s x="%s" y="%s" width="6" height="6">%s</rect>`, attrs, n(x-3), n(y-3), title)
	case "ready":
		s.f(`<path %s d="M%s %sl4 4-4 4-4-4z">%s</path>`, attrs, n(x), n(y-4), title)
	case "first_success":
		s.f(`<path %s d="M%s %sl1.2 2.6 2.8.3-2.1 1.9.6 2.8-2.5-1.4-2.5 1.4.6-2.8-2.1-1.9 2.8-.3z">%s</path>`, attrs, n(x), n(y-4.2), title)
	case "ended":
		s.f(`<path %s d="M%s %sl6 6m0-6l-6 6">%s</path>`, attrs, n(x-3), n(y-3), title)
	case "gated":
		// A gate lifting: a bar over a gap.
		s.f(`<path %s d="M%s %sh7v2h-7z">%s</path>`, attrs, n(x-3.5), n(y-4), title)
	case "claim_allocated":
		s.f(`<path %s d="M%s %sl3.5 3.5-3.5 3.5-3.5-3.5z">%s</path>`, attrs, n(x), n(y-3.5), title)
	}
}

// ticks picks round tick values for the span [lo, hi] (about count of them).
func ticks(lo, hi float64, count int) []float64 {
	span := hi - lo
	if span <= 0 || count < 1 {
		return []float64{lo}
	}
	raw := span / float64(count)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	return out
}

// fmtOffset renders seconds from a run's start for an axis whose window spans span seconds,
// in one unit for the whole axis.
func fmtOffset(s, span float64) string {
	if math.Abs(s) < 1e-9 {
		return "0s"
	}
	switch {
	case span >= 3*3600:
		return fmt.Sprintf("%+.1fh", s/3600)
	case span >= 300:
		return fmt.Sprintf("%+.1fm", s/60)
	case span >= 20:
		return fmt.Sprintf("%+.0fs", s)
	default:
		return fmt.Sprintf("%+.1fs", s)
	}
}

func sec(from, t time.Time) float64 { return t.Sub(from).Seconds() }

// clockTicks picks round times of day in [from, to] (about count of them).
func clockTicks(from, to time.Time, count int) []time.Time {
	span := to.Sub(from)
	if span <= 0 || count < 1 {
		return []time.Time{from}
	}
	// Each step divides a day, so ticks fall on round times of day (UTC).
	steps := []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if s*time.Duration(count) >= span {
			step = s
			break
		}
	}
	for step*time.Duration(count) < span { // longer than count days: whole days
		step += 24 * time.Hour
	}
	var out []time.Time
	t := from.UTC().Truncate(step)
	if t.Before(from) {
		t = t.Add(step)
	}
	for ; !t.After(to); t = t.Add(step) {
		out = append(out, t)
	}
	return out
}

// fmtClock labels a clock tick for an axis spanning span.
func fmtClock(t time.Time, span time.Duration) string {
	t = t.UTC()
	switch {
	case span >= 36*time.Hour:
		return t.Format("Jan 2 15:04")
	case span >= 10*time.Minute:
		return t.Format("15:04")
	}
	return t.Format("15:04:05")
}
