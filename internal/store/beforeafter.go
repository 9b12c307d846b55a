package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
)

// Side picks one side of a workload's before/after comparison: the pods of a revision (its
// number or its hash), or the pods created in [From, To).
type Side struct {
	Revision string
	From, To time.Time
}

// picks reports whether a pod of w is on the side.
func (s Side) picks(p report.WorkloadPod, w report.WorkloadWindow) bool {
	if s.Revision != "" {
		for _, r := range w.Revisions {
			if r.Hash == p.Revision && (s.Revision == r.Hash || s.Revision == r.Number) {
				return true
			}
		}
		return false
	}
	c := p.Milestones.Created
	return c != nil && !c.Before(s.From) && c.Before(s.To)
}

// BeforeAfter is an observational comparison of one workload at two times: the arm comparison's
// metrics, intervals and verdicts between the pods of two revisions or two windows.
type BeforeAfter struct {
	Workload   events.WorkloadRef `json:"workload"`
	Before     SideReport         `json:"before"`
	After      SideReport         `json:"after"`
	Comparison compare.Comparison `json:"comparison"`
	// Note says what an observational before/after cannot tell; Changed lists what schedlens
	// saw differ between the sides that could confound it.
	Note    string   `json:"note"`
	Changed []string `json:"changed"`
}

// SideReport says what one side held.
type SideReport struct {
	Revisions   []string   `json:"revisions"`
	From        *time.Time `json:"from"`
	To          *time.Time `json:"to"`
	Pods        int        `json:"pods"`
	Desired     int        `json:"desired"`
	Disruptions int        `json:"disruptions"`
	// RequestsPerSecond is the requests its pods served over its time (load).
	RequestsPerSecond *float64 `json:"requests_per_second"`
}

// BeforeAfterNote is the caveat every before/after comparison carries.
const BeforeAfterNote = "An observational before/after, not a randomised experiment: the two sides ran at different times, " +
	"so load, time of day, other workloads on the nodes, node pools and versions may differ and confound it. Each pod is one " +
	"replicate (pods assumed independent); interruption_s is the side's total, observed, not sampled. `changed` lists what " +
	"schedlens saw differ; run an experiment (arms interleaved, repeats) to attribute a difference to the change."

// WorkloadComparison compares the pods of w on the before side with those on the after side,
// both among its pods alive in [from, to], with the arm comparison's metrics and verdicts (arms
// "before", the baseline, and "after"; each pod a run). ErrNotFound when w had no pods in the
// window; *compare.BadBaselineError when a side picks no pod.
func (db *DB) WorkloadComparison(ctx context.Context, w events.WorkloadRef, from, to time.Time, before, after Side) (BeforeAfter, error) {
	out := BeforeAfter{Workload: w, Note: BeforeAfterNote, Changed: []string{}}
	ww, err := db.Workload(ctx, w, from, to)
	if err != nil {
		return out, err
	}
	in := compare.Input{Experiment: w.String(), Namespace: w.Namespace, Arms: map[string]map[string]compare.RunData{},
		Placement: map[string]*compare.ArmPlacement{}}
	var uids []string
	for _, p := range ww.Pods {
		uids = append(uids, p.Pod.UID)
	}
	latency, err := db.latenciesOf(ctx, uids)
	if err != nil {
		return out, err
	}
	caused := map[string]int{}
	for _, p := range ww.Pods {
		if p.PreemptedBy != nil {
			caused[*p.PreemptedBy]++
		}
	}
	nodes := map[string]bool{}
	sides := []struct {
		arm  string
		side Side
		rep  *SideReport
	}{{"before", before, &out.Before}, {"after", after, &out.After}}
	for _, s := range sides {
		runs := map[string]compare.RunData{}
		place := &compare.ArmPlacement{Nodes: map[string]int{}, GPUModels: map[string]int{}, Sharing: map[string]int{}, FailedScheduling: map[string]int{}}
		revs := map[string]bool{}
		var first, last time.Time
		requests := 0
		for _, p := range ww.Pods {
			if !s.side.picks(p, ww) {
				continue
			}
			runs[p.Pod.Name+"/"+p.Pod.UID] = compare.RunData{Pods: []compare.PodData{{Summary: p.Summary, Latency: latency[p.Pod.UID], PreemptionsCaused: caused[p.Pod.UID]}}}
			if p.Pod.Node != nil {
				place.Nodes[*p.Pod.Node]++
				nodes[*p.Pod.Node] = true
			}
			revs[p.Revision] = true
			requests += p.Counts.Requests
			if c := p.Milestones.Created; c != nil && (first.IsZero() || c.Before(first)) {
				first = *c
			}
			end := to
			if p.Milestones.Ended != nil {
				end = *p.Milestones.Ended
			}
			if end.After(last) {
				last = end
			}
		}
		if s.side.Revision == "" {
			first, last = s.side.From, s.side.To
		}
		s.rep.Pods, s.rep.Revisions = len(runs), slices.Sorted(maps.Keys(revs))
		if !first.IsZero() {
			s.rep.From, s.rep.To = &first, &last
			if secs := last.Sub(first).Seconds(); secs > 0 && requests > 0 {
				rate := float64(requests) / secs
				s.rep.RequestsPerSecond = &rate
			}
			s.rep.Desired = desiredAt(ww.Desired, first)
			for _, d := range ww.Disruptions {
				if !d.Start.Before(first) && d.Start.Before(last) {
					s.rep.Disruptions++
					for _, a := range d.Workloads {
						if a.Workload == w {
							for name, rd := range runs {
								rd.InterruptionS += a.Interruption.Seconds
								runs[name] = rd
							}
						}
					}
				}
			}
		}
		in.Arms[s.arm] = runs
		in.Placement[s.arm] = place
	}
	if len(in.Arms["before"]) == 0 || len(in.Arms["after"]) == 0 {
		return out, &compare.BadBaselineError{Experiment: w.String(), Baseline: "before", Arms: []string{"before", "after"}}
	}
	if in.Nodes, err = db.nodeInfos(ctx, slices.Sorted(maps.Keys(nodes))); err != nil {
		return out, err
	}
	if out.Comparison, err = compare.Build(in, "before"); err != nil {
		return out, err
	}
	out.Changed = changed(out)
	return out, nil
}

// desiredAt is the step line's value at t.
func desiredAt(line []report.CountPoint, t time.Time) int {
	n := 0
	for _, p := range line {
		if p.At.After(t) {
			break
		}
		n = p.Count
	}
	return n
}

// changed lists what differs between the two sides beyond the change itself.
func changed(b BeforeAfter) []string {
	out := []string{}
	var conds [2]compare.Conditions
	for _, a := range b.Comparison.Arms {
		switch a.Arm {
		case "before":
			conds[0] = a.Conditions
		case "after":
			conds[1] = a.Conditions
		}
	}
	if !slices.Equal(conds[0].NodePools, conds[1].NodePools) {
		out = append(out, fmt.Sprintf("node pools: %v before, %v after", conds[0].NodePools, conds[1].NodePools))
	}
	if !slices.Equal(conds[0].KubeletVersions, conds[1].KubeletVersions) {
		out = append(out, fmt.Sprintf("kubelet versions: %v before, %v after", conds[0].KubeletVersions, conds[1].KubeletVersions))
	}
	if b.Before.Desired != b.After.Desired {
		out = append(out, fmt.Sprintf("desired replicas: %d before, %d after", b.Before.Desired, b.After.Desired))
	}
	if r0, r1 := b.Before.RequestsPerSecond, b.After.RequestsPerSecond; r0 != nil && r1 != nil && (*r1 > *r0*1.2 || *r1 < *r0/1.2) {
		out = append(out, fmt.Sprintf("load: %.3g requests/s before, %.3g after", *r0, *r1))
	}
	if b.Before.Disruptions != b.After.Disruptions {
		out = append(out, fmt.Sprintf("disruptions: %d before, %d after", b.Before.Disruptions, b.After.Disruptions))
	}
	if f0, f1 := b.Before.From, b.After.From; f0 != nil && f1 != nil {
		h0, h1 := f0.Hour(), f1.Hour()
		if h0 != h1 {
			out = append(out, fmt.Sprintf("time of day: from %02d:00 UTC before, %02d:00 UTC after", h0, h1))
		}
	}
	return out
}

// latenciesOf reads the latency histogram of each pod.
func (db *DB) latenciesOf(ctx context.Context, uids []string) (map[string]map[int32]int64, error) {
	return scanLatencies(db.pool.Query(ctx, `SELECT pod_uid, bucket, count FROM pod_latency WHERE pod_uid = ANY($1)`, uids))
}
