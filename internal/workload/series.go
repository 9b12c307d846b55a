package workload

import (
	"slices"
	"time"

	"github.com/schedlens/schedlens/internal/align"
)

// step is a value that holds from at on.
type step struct {
	at time.Time
	v  int
}

// series is a count over time: init before its first step, then each step's value from its
// time on. Steps are in time order; at one instant the last step wins.
type series struct {
	init  int
	steps []step
}

// at is the value at t.
func (s series) at(t time.Time) int {
	i, found := slices.BinarySearchFunc(s.steps, t, func(st step, t time.Time) int { return st.at.Compare(t) })
	for found && i+1 < len(s.steps) && s.steps[i+1].at.Equal(t) {
		i++
	}
	if found {
		return s.steps[i].v
	}
	if i == 0 {
		return s.init
	}
	return s.steps[i-1].v
}

// readySeries is how many of the spans' pods were Ready over time (align.ReadyEdges, every
// change at one instant settled into one step).
func readySeries(spans [][]align.Span) series {
	edges := align.ReadyEdges(spans)
	var out series
	n := 0
	for i, e := range edges {
		n += e.Delta
		if i+1 < len(edges) && edges[i+1].At.Equal(e.At) {
			continue // settle every change at one instant first
		}
		out.steps = append(out.steps, step{e.At, n})
	}
	return out
}

// shortfall is a time the ready count was below the desired one.
type shortfall struct {
	align.Window
	open bool // still short at the end of observation
}

// shortfalls are the times in [from, to] when ready was below desired (desired > 0), each with
// the fewest Ready; a window still short at to is open. With stop set, no window beginning after
// stop is looked for (one under way then is followed to its end): a disruption's shortfalls are
// read to its end, not to the end of the window (at 5,000 pods the scan to the window's end for
// every disruption was most of the run page's detection).
func shortfalls(ready, desired series, from, to, stop time.Time) []shortfall {
	// The instants either series changes at in (from, to), merged in order: from first.
	after := func(s series) int {
		i, _ := slices.BinarySearchFunc(s.steps, from, func(st step, t time.Time) int {
			if st.at.After(t) {
				return 1
			}
			return -1
		})
		return i
	}
	ri, di := after(ready), after(desired)
	var out []shortfall
	var cur *shortfall
	for t := from; ; {
		if cur == nil && !stop.IsZero() && t.After(stop) {
			return out
		}
		r, d := ready.at(t), desired.at(t)
		short := d > 0 && r < d
		switch {
		case short && cur == nil:
			rr, dd := r, d
			cur = &shortfall{Window: align.Window{Kind: align.ReadyBelowDesired, Start: t, Ready: &rr, Desired: &dd}}
		case short:
			if r < *cur.Ready {
				*cur.Ready = r
			}
			if d > *cur.Desired {
				*cur.Desired = d
			}
		case cur != nil:
			cur.End, cur.Seconds = t, t.Sub(cur.Start).Seconds()
			out = append(out, *cur)
			cur = nil
		}
		for ri < len(ready.steps) && !ready.steps[ri].at.After(t) {
			ri++
		}
		for di < len(desired.steps) && !desired.steps[di].at.After(t) {
			di++
		}
		next := to
		if ri < len(ready.steps) && ready.steps[ri].at.Before(next) {
			next = ready.steps[ri].at
		}
		if di < len(desired.steps) && desired.steps[di].at.Before(next) {
			next = desired.steps[di].at
		}
		if !next.Before(to) {
			break
		}
		t = next
	}
	if cur != nil {
		cur.End, cur.Seconds, cur.open = to, to.Sub(cur.Start).Seconds(), true
		out = append(out, *cur)
	}
	return out
}

// inferredDesired is the desired count of a workload whose controller was not observed: the
// count of Ready pods it held the longest in all (a rollout's surge and a disruption's dip are
// moments; the steady count is what it keeps), the larger on a tie.
func inferredDesired(ready series, to time.Time) int {
	held := map[int]time.Duration{}
	for i, st := range ready.steps {
		end := to
		if i+1 < len(ready.steps) {
			end = ready.steps[i+1].at
		}
		if st.v > 0 && end.After(st.at) {
			held[st.v] += end.Sub(st.at)
		}
	}
	best := 0
	for n, d := range held {
		if d > held[best] || d == held[best] && n > best {
			best = n
		}
	}
	return best
}
