package align_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
)

func TestInterruptions(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	span := func(from, to float64) align.Span { return align.Span{From: at(from), To: at(to)} }
	every := func(from, to, step float64) []time.Time {
		var out []time.Time
		for s := from; s <= to+1e-9; s += step {
			out = append(out, at(s))
		}
		return out
	}
	type view struct {
		Kind           string
		Start, Seconds float64
		Ready, Desired int
	}
	views := func(ws []align.Window) []view {
		out := []view{}
		for _, w := range ws {
			v := view{Kind: w.Kind, Start: w.Start.Sub(t0).Seconds(), Seconds: w.Seconds}
			if w.Ready != nil {
				v.Ready, v.Desired = *w.Ready, *w.Desired
			}
			out = append(out, v)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		pods      [][]align.Span
		successes []time.Time
		want      []view
	}{
		{
			name:      "a surge-first rolling update never drops below the steady count",
			pods:      [][]align.Span{{span(0, 5)}, {span(0, 7)}, {span(4.8, 10)}, {span(6.8, 10)}},
			successes: every(0.2, 10, 0.2),
			want:      []view{},
		},
		{
			name:      "a drain: one pod evicted, its replacement Ready 1.5 s later",
			pods:      [][]align.Span{{span(0, 10)}, {span(0, 3)}, {span(4.5, 10)}},
			successes: every(0.2, 10, 0.2),
			want:      []view{{Kind: align.ReadyBelowDesired, Start: 3, Seconds: 1.5, Ready: 1, Desired: 2}},
		},
		{
			name:      "a node NotReady with both pods on it: no Ready pod and no success until it rejoins",
			pods:      [][]align.Span{{span(0, 3), span(5, 10)}, {span(0, 3), span(5.2, 10)}},
			successes: append(every(0.2, 3, 0.2), every(5.2, 10, 0.2)...),
			want: []view{
				{Kind: align.NoSuccess, Start: 3, Seconds: 2.2},
				{Kind: align.ReadyBelowDesired, Start: 3, Seconds: 2.2, Ready: 0, Desired: 2},
			},
		},
		{
			name:      "taking the service down at the end is no interruption",
			pods:      [][]align.Span{{span(0, 10)}, {span(0, 10.5)}},
			successes: every(0.2, 10, 0.2),
			want:      []view{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := views(align.Interruptions(tc.pods, tc.successes, time.Second))
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
