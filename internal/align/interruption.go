package align

import (
	"slices"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/events"
)

// Interruption kinds.
const (
	// NoSuccess: no request to the service succeeded for longer than the allowed gap.
	NoSuccess = "no_success"
	// ReadyBelowDesired: fewer pods were Ready than the service's steady count.
	ReadyBelowDesired = "ready_below_desired"
)

// Span is a time a pod was Ready.
type Span struct{ From, To time.Time }

// Window is one service interruption.
type Window struct {
	Kind    string    `json:"kind"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	// Ready is the fewest Ready pods during a ReadyBelowDesired window, of Desired.
	Ready   *int `json:"ready,omitempty"`
	Desired *int `json:"desired,omitempty"`
}

// ReadySpans reads when a pod was Ready from its snapshots (any order): from the observation of
// a snapshot showing Ready=True until one showing it not Ready, terminating (a deletion
// timestamp: the pod leaves the Service's endpoints) or deleted. A pod still Ready at its last
// snapshot stays Ready until end.
func ReadySpans(snapshots []*events.Envelope, end time.Time) []Span {
	snaps := slices.Clone(snapshots)
	slices.SortFunc(snaps, func(a, b *events.Envelope) int { return a.OccurredAt.Compare(b.OccurredAt) })
	var spans []Span
	var from time.Time
	for _, env := range snaps {
		p, ok := env.Payload.(*events.PodStatus)
		if !ok {
			continue
		}
		c := p.Condition("Ready")
		ready := c != nil && c.Status == "True" && p.Phase == events.PhaseRunning && p.DeletionTimestamp == nil && !p.Deleted
		switch {
		case ready && from.IsZero():
			from = env.OccurredAt
		case !ready && !from.IsZero():
			spans = append(spans, Span{from, env.OccurredAt})
			from = time.Time{}
		}
	}
	if !from.IsZero() && end.After(from) {
		spans = append(spans, Span{from, end})
	}
	return spans
}

// Edge is one pod becoming Ready (Delta +1) or ceasing to be (−1) at At.
type Edge struct {
	At    time.Time
	Delta int
}

// ReadyEdges are the starts and ends of the pods' Ready spans in time order. At equal times,
// losses come before gains: a replacement Ready at the very instant its predecessor left is no
// overlap.
func ReadyEdges(pods [][]Span) []Edge {
	var edges []Edge
	for _, spans := range pods {
		for _, s := range spans {
			if s.To.After(s.From) {
				edges = append(edges, Edge{s.From, +1}, Edge{s.To, -1})
			}
		}
	}
	slices.SortFunc(edges, func(a, b Edge) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return a.Delta - b.Delta
	})
	return edges
}

// Interruptions finds a service's interruptions from its pods' Ready spans and the send times
// of its successful requests:
//   - ReadyBelowDesired: the desired count is the largest Ready count the service held without a
//     break for at least minGap; every time the count drops below it and comes back is a
//     window. Drops that never come back (the service was taken down) are not interruptions.
//   - NoSuccess: between the first and the last success, every gap between consecutive
//     successes longer than minGap.
func Interruptions(pods [][]Span, successes []time.Time, minGap time.Duration) []Window {
	var out []Window
	edges := ReadyEdges(pods)
	// The desired count is the largest one the service held without a break for at least
	// minGap: a surge pod during a rolling update is Ready only for moments.
	desired := 0
	for n := 1; ; n++ {
		longest, count := time.Duration(0), 0
		var since time.Time
		for i, e := range edges {
			count += e.Delta
			if i+1 < len(edges) && edges[i+1].At.Equal(e.At) {
				continue // settle every change at one instant first
			}
			switch {
			case count >= n && since.IsZero():
				since = e.At
			case count < n && !since.IsZero():
				longest = max(longest, e.At.Sub(since))
				since = time.Time{}
			}
		}
		if longest < minGap {
			break
		}
		desired = n
	}
	if desired > 0 {
		count := 0
		reached := false
		var start time.Time
		lowest := 0
		for _, e := range edges {
			count += e.Delta
			switch {
			case count >= desired:
				if !start.IsZero() {
					d, r := desired, lowest
					out = append(out, Window{Kind: ReadyBelowDesired, Start: start, End: e.At, Seconds: e.At.Sub(start).Seconds(), Ready: &r, Desired: &d})
					start = time.Time{}
				}
				reached = true
			case reached && start.IsZero():
				start, lowest = e.At, count
			case !start.IsZero():
				lowest = min(lowest, count)
			}
		}
	}
	ok := slices.Clone(successes)
	slices.SortFunc(ok, time.Time.Compare)
	for i := 1; i < len(ok); i++ {
		if gap := ok[i].Sub(ok[i-1]); gap > minGap {
			out = append(out, Window{Kind: NoSuccess, Start: ok[i-1], End: ok[i], Seconds: gap.Seconds()})
		}
	}
	slices.SortFunc(out, func(a, b Window) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return out
}

// DefaultMinGap is the gap without a successful request that timelines count as an
// interruption.
const DefaultMinGap = time.Second

// ServiceInterruptions computes the interruptions of the service formed by the pods of one
// experiment arm in one run, from all events (any order, duplicates allowed): each pod's Ready
// spans until its end (or last event) and the successful requests it served.
func ServiceInterruptions(envs []*events.Envelope, keys events.LabelKeys, exp events.ExperimentRef, minGap time.Duration) []Window {
	facts := map[string]*Facts{}
	snaps := map[string][]*events.Envelope{}
	ok := map[string][]time.Time{}
	var invs []Inventory
	seen := map[string]bool{}
	for _, env := range envs {
		if inv, isInv := InventoryOf(env); isInv {
			invs = append(invs, inv)
			continue
		}
		uid := env.PodUID()
		if uid == "" || seen[env.ID] {
			continue
		}
		seen[env.ID] = true
		f, _ := FactsOf(env, keys)
		if facts[uid] == nil {
			facts[uid] = &Facts{}
		}
		facts[uid].Merge(f)
		switch p := env.Payload.(type) {
		case *events.PodStatus:
			snaps[uid] = append(snaps[uid], env)
		case *events.Request:
			if p.OK {
				ok[uid] = append(ok[uid], env.OccurredAt)
			}
		}
	}
	var spans [][]Span
	var successes []time.Time
	whole := WholeInventories(invs)
	for uid, f := range facts {
		if f.Experiment != exp {
			continue
		}
		f.ApplyInventories(whole)
		s := Derive(*f)
		end := f.LastSeen
		if s.Milestones.Ended != nil {
			end = *s.Milestones.Ended
		}
		spans = append(spans, ReadySpans(snaps[uid], end))
		successes = append(successes, ok[uid]...)
	}
	return Interruptions(spans, successes, minGap)
}

// Overlapping keeps the windows that overlap [from, to].
func Overlapping(ws []Window, from, to time.Time) []Window {
	out := []Window{}
	for _, w := range ws {
		if w.End.After(from) && w.Start.Before(to) {
			out = append(out, w)
		}
	}
	return out
}
