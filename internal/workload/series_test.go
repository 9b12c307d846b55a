package workload

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
)

// shortfallsEvery is shortfalls as it was before stop: every instant of both series from from
// to to sorted afresh, every window to the end. The reference shortfalls must equal.
func shortfallsEvery(ready, desired series, from, to time.Time) []shortfall {
	times := []time.Time{from}
	for _, s := range [][]step{ready.steps, desired.steps} {
		for _, st := range s {
			if st.at.After(from) && st.at.Before(to) {
				times = append(times, st.at)
			}
		}
	}
	slices.SortFunc(times, time.Time.Compare)
	times = slices.CompactFunc(times, time.Time.Equal)
	var out []shortfall
	var cur *shortfall
	for _, t := range times {
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
	}
	if cur != nil {
		cur.End, cur.Seconds, cur.open = to, to.Sub(cur.Start).Seconds(), true
		out = append(out, *cur)
	}
	return out
}

// shortfalls equals the reference on random series — steps on a coarse grid, so the two series
// often change at one instant and a series sometimes twice at one —, windows cut at a random
// stop: those that begin by stop, in full, and none after.
func TestShortfallsEqualsEveryInstant(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 27))
	base := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	at := func() time.Time { return base.Add(time.Duration(rng.IntN(60)) * time.Second) }
	random := func(max int) series {
		s := series{init: rng.IntN(max + 1)}
		for range rng.IntN(30) {
			s.steps = append(s.steps, step{at(), rng.IntN(max + 1)})
		}
		slices.SortStableFunc(s.steps, func(a, b step) int { return a.at.Compare(b.at) })
		return s
	}
	windows := 0
	for i := range 5000 {
		ready, desired := random(5), random(5)
		from, to := at(), at()
		if to.Before(from) {
			from, to = to, from
		}
		want := shortfallsEvery(ready, desired, from, to)
		if diff := cmp.Diff(want, shortfalls(ready, desired, from, to, time.Time{}), cmp.AllowUnexported(shortfall{})); diff != "" {
			t.Fatalf("case %d, no stop (-every instant +shortfalls):\n%s", i, diff)
		}
		stop := at()
		var cut []shortfall
		for _, w := range want {
			if !w.Start.After(stop) {
				cut = append(cut, w)
			}
		}
		if diff := cmp.Diff(cut, shortfalls(ready, desired, from, to, stop), cmp.AllowUnexported(shortfall{})); diff != "" {
			t.Fatalf("case %d, stop %s (-every instant, cut +shortfalls):\n%s", i, stop.Format(time.TimeOnly), diff)
		}
		windows += len(want)
	}
	if windows < 1000 {
		t.Fatalf("only %d windows in 5,000 cases: the cases test little", windows)
	}
}

// The cost of a disruption's shortfalls in a long window: ready and desired changing 20,000
// times over a day (5,000 pods), a disruption of 10 minutes early in it.
func BenchmarkShortfalls(b *testing.B) {
	base := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	var ready, desired series
	desired.init = 5000
	ready.init = 5000
	for i := range 20000 {
		ready.steps = append(ready.steps, step{base.Add(time.Duration(i) * 4 * time.Second), 4999 + i%2})
	}
	from, stop, to := base.Add(time.Hour), base.Add(time.Hour+10*time.Minute), base.Add(24*time.Hour)
	b.Run("to the window's end", func(b *testing.B) {
		for b.Loop() {
			_ = shortfallsEvery(ready, desired, from, to)
		}
	})
	b.Run("to the disruption's end", func(b *testing.B) {
		for b.Loop() {
			_ = shortfalls(ready, desired, from, to, stop)
		}
	})
}
