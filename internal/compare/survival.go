package compare

import (
	"cmp"
	"slices"
)

// censoredTime is one pod's wait: until it was scheduled (event), or until its observation
// ended while it still waited (censored: the wait is at least t).
type censoredTime struct {
	t     float64
	event bool
}

// survival is a Kaplan–Meier estimate of a waiting-time distribution from censored times.
type survival struct {
	times  []censoredTime // sorted by time, events before censorings at equal times
	steps  []kmStep       // the estimate after each distinct event time
	maxAll float64
	anyCen bool
}

type kmStep struct {
	t float64
	f float64 // 1 − S(t): the share of pods scheduled by t
}

// kaplanMeier computes the product-limit estimate (Kaplan and Meier, 1958). Without censoring
// it is the empirical distribution, so its quantiles equal the empirical ones. ts is sorted in
// place.
func kaplanMeier(ts []censoredTime) survival {
	slices.SortFunc(ts, func(a, b censoredTime) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		// At equal times events come first: a pod censored at t was still waiting at t.
		switch {
		case a.event == b.event:
			return 0
		case a.event:
			return -1
		}
		return 1
	})
	s := survival{times: ts}
	atRisk := len(ts)
	surv := 1.0
	for i := 0; i < len(ts); {
		j, d := i, 0
		for j < len(ts) && ts[j].t == ts[i].t {
			if ts[j].event {
				d++
			} else {
				s.anyCen = true
			}
			j++
		}
		if d > 0 {
			surv *= 1 - float64(d)/float64(atRisk)
			s.steps = append(s.steps, kmStep{t: ts[i].t, f: 1 - surv})
		}
		atRisk -= j - i
		s.maxAll = max(s.maxAll, ts[i].t)
		i = j
	}
	return s
}

// quantile is the smallest time by which a share p of the pods had been scheduled. When
// censoring leaves the estimate short of p, the quantile is only known to exceed the longest
// observed wait: that wait is returned as a lower bound.
func (s survival) quantile(p float64) (v float64, lowerBound bool) {
	for _, st := range s.steps {
		if st.f >= p-1e-12 {
			return st.t, false
		}
	}
	return s.maxAll, true
}

// max is the longest wait; a lower bound when any pod was censored (it may wait longer still).
func (s survival) max() (float64, bool) {
	return s.maxAll, s.anyCen
}
