// Package trace exports a run's timelines in the Chrome Trace Event format, which Perfetto and
// chrome://tracing open: a process per arm, a thread per pod, a slice per phase of the pod's life
// (pending, start, model_load, ready_to_first_success, serving), FailedScheduling and the end as
// instant events, a flow from preemptor to victim for each preemption, a counter per pod for GPU
// utilisation and the arm's service interruptions as slices on the arm's first thread.
// It is pure: a report.RunDetail in, the trace out.
package trace

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/report"
)

// Trace is a Chrome Trace Event document (the JSON object form).
type Trace struct {
	TraceEvents     []Event        `json:"traceEvents"`
	DisplayTimeUnit string         `json:"displayTimeUnit"`
	OtherData       map[string]any `json:"otherData"`
}

// Event is one trace event. Ts and Dur are microseconds from the run's start (OtherData "start").
type Event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   string         `json:"id,omitempty"`
	BP   string         `json:"bp,omitempty"`
	S    string         `json:"s,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// Phase names: the slices of a pod's thread, in order.
const (
	PhasePending             = "pending"
	PhaseStart               = "start"
	PhaseModelLoad           = "model_load"
	PhaseReadyToFirstSuccess = "ready_to_first_success"
	PhaseServing             = "serving"
)

// Categories of events.
const (
	CatPhase        = "phase"
	CatScheduling   = "scheduling"
	CatPreemption   = "preemption"
	CatGPU          = "gpu"
	CatInterruption = "interruption"
	CatNode         = "node"
)

// OutsideProcess names the process of pods preempted by the run's pods that are not its own.
const OutsideProcess = "outside the run (preempted)"

// InterruptionsThread is tid 0 of every arm's process: the arm's interruption windows.
const InterruptionsThread = "service interruptions"

// Build converts a run into a trace.
func Build(d report.RunDetail) Trace {
	b := &builder{origin: d.From, t: Trace{DisplayTimeUnit: "ms", TraceEvents: []Event{},
		OtherData: map[string]any{"experiment": d.Experiment, "run": d.Run, "namespace": d.Namespace, "start": d.From.Format(time.RFC3339Nano)}}}
	byArm := map[string][]align.Summary{}
	for _, p := range d.Pods {
		arm := ""
		if p.Experiment.Arm != nil {
			arm = *p.Experiment.Arm
		}
		byArm[arm] = append(byArm[arm], p)
	}
	arms := slices.Sorted(maps.Keys(byArm))
	where := map[string][2]int{} // pod UID → pid, tid
	windows := map[string][]align.Window{}
	for _, a := range d.Interruptions {
		windows[a.Arm] = a.Windows
	}
	pid := 0
	add := func(process string, pods []align.Summary, ws []align.Window) {
		pid++
		b.meta("process_name", pid, 0, process)
		b.meta("process_sort_index", pid, 0, pid)
		b.meta("thread_name", pid, 0, InterruptionsThread)
		for _, w := range ws {
			b.slice(w.Kind, CatInterruption, pid, 0, w.Start, w.End, map[string]any{"seconds": w.Seconds, "ready": w.Ready, "desired": w.Desired})
		}
		for i, p := range pods {
			tid := i + 1
			where[p.Pod.UID] = [2]int{pid, tid}
			b.meta("thread_name", pid, tid, p.Pod.Name)
			b.meta("thread_sort_index", pid, tid, tid)
			b.pod(p, pid, tid, d.FailedScheduling[p.Pod.UID], d.GPU[p.Pod.UID])
		}
	}
	for _, arm := range arms {
		add("arm "+arm, byArm[arm], windows[arm])
	}
	if len(d.Outside) > 0 {
		add(OutsideProcess, d.Outside, nil)
	}
	for _, c := range d.NodeChanges {
		b.add(Event{Name: c.Node + " " + c.Change, Cat: CatNode, Ph: "i", S: "g", Ts: b.ts(c.At), Args: map[string]any{"node": c.Node, "change": c.Change}})
	}
	// A flow from the preemptor's pending slice to the victim's last slice, just before the
	// victim ended (flow ends bind to the slice enclosing them).
	for _, p := range append(slices.Clone(d.Pods), d.Outside...) {
		if p.PreemptedBy == nil || p.Milestones.Ended == nil {
			continue
		}
		from, ok1 := where[*p.PreemptedBy]
		to, ok2 := where[p.Pod.UID]
		if !ok1 || !ok2 {
			continue
		}
		at := b.ts(*p.Milestones.Ended)
		id := "preemption/" + p.Pod.UID
		b.add(Event{Name: "preemption", Cat: CatPreemption, Ph: "s", ID: id, Pid: from[0], Tid: from[1], Ts: at - 2,
			Args: map[string]any{"preemptor": *p.PreemptedBy, "victim": p.Pod.UID}})
		b.add(Event{Name: "preemption", Cat: CatPreemption, Ph: "f", BP: "e", ID: id, Pid: to[0], Tid: to[1], Ts: at - 1,
			Args: map[string]any{"preemptor": *p.PreemptedBy, "victim": p.Pod.UID}})
	}
	slices.SortStableFunc(b.t.TraceEvents, func(x, y Event) int {
		if (x.Ph == "M") != (y.Ph == "M") { // metadata first
			if x.Ph == "M" {
				return -1
			}
			return 1
		}
		return cmp.Compare(x.Ts, y.Ts)
	})
	return b.t
}

type builder struct {
	origin time.Time
	t      Trace
}

func (b *builder) ts(t time.Time) float64 { return float64(t.Sub(b.origin).Microseconds()) }

func (b *builder) add(e Event) { b.t.TraceEvents = append(b.t.TraceEvents, e) }

func (b *builder) meta(name string, pid, tid int, v any) {
	key := "name"
	if name == "process_sort_index" || name == "thread_sort_index" {
		key = "sort_index"
	}
	b.add(Event{Name: name, Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{key: v}})
}

func (b *builder) slice(name, cat string, pid, tid int, from, to time.Time, args map[string]any) {
	dur := float64(to.Sub(from).Microseconds())
	if dur < 0 {
		dur = 0
	}
	b.add(Event{Name: name, Cat: cat, Ph: "X", Pid: pid, Tid: tid, Ts: b.ts(from), Dur: &dur, Args: args})
}

// pod adds a pod's phases: one slice per pair of consecutive milestones reached; the phase in
// which observation ended runs to the pod's end (or last observation) and is marked censored.
func (b *builder) pod(p align.Summary, pid, tid int, failures []report.SchedulingFailure, gpu []report.GPUPoint) {
	m := p.Milestones
	end := p.ObservedUntil
	if m.Ended != nil {
		end = m.Ended
	}
	steps := []struct {
		at    *time.Time
		phase string
	}{{m.Created, PhasePending}, {m.Scheduled, PhaseStart}, {m.Running, PhaseModelLoad}, {m.Ready, PhaseReadyToFirstSuccess}, {m.FirstSuccess, PhaseServing}}
	if steps[0].at == nil { // no creation time known: start at the first milestone seen
		for _, s := range steps[1:] {
			if s.at != nil {
				steps[0].at = s.at
				break
			}
		}
	}
	for i := 0; i < len(steps) && steps[i].at != nil; i++ {
		from := *steps[i].at
		args := map[string]any{"uid": p.Pod.UID}
		if p.Pod.Node != nil {
			args["node"] = *p.Pod.Node
		}
		var to *time.Time
		if i+1 < len(steps) {
			to = steps[i+1].at
		}
		if to == nil {
			to = end
			if i+1 < len(steps) {
				args["censored"] = true
			}
			if p.EndedReason != nil {
				args["ended_reason"] = *p.EndedReason
			}
		}
		if to == nil {
			to = &from
		}
		b.slice(steps[i].phase, CatPhase, pid, tid, from, *to, args)
		if i+1 < len(steps) && steps[i+1].at == nil {
			break
		}
	}
	for _, f := range failures {
		b.add(Event{Name: "FailedScheduling", Cat: CatScheduling, Ph: "i", S: "t", Pid: pid, Tid: tid, Ts: b.ts(f.At), Args: map[string]any{"note": f.Note}})
	}
	if m.Ended != nil {
		b.add(Event{Name: "ended", Cat: CatPhase, Ph: "i", S: "t", Pid: pid, Tid: tid, Ts: b.ts(*m.Ended),
			Args: map[string]any{"reason": p.EndedReason, "preempted_by": p.PreemptedBy}})
	}
	for _, g := range gpu {
		b.add(Event{Name: fmt.Sprintf("GPU util %s", p.Pod.Name), Cat: CatGPU, Ph: "C", Pid: pid, Ts: b.ts(g.At), Args: map[string]any{"util": g.Util}})
	}
}
