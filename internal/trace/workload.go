package trace

import (
	"cmp"
	"slices"
	"time"

	"github.com/schedlens/schedlens/internal/report"
)

// CatDisruption is the category of a workload trace's disruptions.
const CatDisruption = "disruption"

// DisruptionsProcess names the process of a workload trace that holds its disruptions, one
// thread per disruption.
const DisruptionsProcess = "disruptions"

// BuildWorkload converts a workload's window into a trace: a process per revision (in the order
// they first ran) with a thread per pod, as Build does for arms; the workload's interruptions
// (its share of each disruption) on the revision processes' first thread; and a process of the
// disruptions, each a slice from its start to its end (or the window's end) with what it cost.
func BuildWorkload(w report.WorkloadWindow) Trace {
	b := &builder{origin: w.From, t: Trace{DisplayTimeUnit: "ms", TraceEvents: []Event{},
		OtherData: map[string]any{"workload": w.Workload.WorkloadRef.String(), "start": w.From.Format(time.RFC3339Nano), "end": w.To.Format(time.RFC3339Nano)}}}
	pid := 1
	b.meta("process_name", pid, 0, DisruptionsProcess)
	b.meta("process_sort_index", pid, 0, pid)
	for i, d := range w.Disruptions {
		tid := i + 1
		end := w.To
		if d.End != nil {
			end = *d.End
		}
		args := map[string]any{"id": d.ID, "node": d.Node, "pods": d.Pods}
		for _, a := range d.Workloads {
			if a.Workload == w.Workload.WorkloadRef {
				args["interruption_seconds"], args["fewest_ready"], args["recovery_seconds"] = a.Interruption.Seconds, a.Interruption.FewestReady, a.RecoverySeconds
				for _, win := range a.Interruption.Windows {
					b.slice(win.Kind, CatInterruption, pid, tid, win.Start, win.End, map[string]any{"seconds": win.Seconds, "ready": win.Ready, "desired": win.Desired})
				}
			}
		}
		b.meta("thread_name", pid, tid, d.Kind+" "+d.Node)
		b.slice(d.Kind, CatDisruption, pid, tid, d.Start, end, args)
	}
	byRev := map[string][]report.WorkloadPod{}
	for _, p := range w.Pods {
		byRev[p.Revision] = append(byRev[p.Revision], p)
	}
	for _, r := range w.Revisions {
		pid++
		name := "revision " + r.Hash
		if r.Number != "" {
			name = "revision " + r.Number + " (" + r.Hash + ")"
		}
		b.meta("process_name", pid, 0, name)
		b.meta("process_sort_index", pid, 0, pid)
		for i, p := range byRev[r.Hash] {
			tid := i + 1
			b.meta("thread_name", pid, tid, p.Pod.Name)
			b.meta("thread_sort_index", pid, tid, tid)
			b.pod(p.Summary, pid, tid, nil, nil)
		}
	}
	slices.SortStableFunc(b.t.TraceEvents, func(x, y Event) int {
		if (x.Ph == "M") != (y.Ph == "M") {
			if x.Ph == "M" {
				return -1
			}
			return 1
		}
		return cmp.Compare(x.Ts, y.Ts)
	})
	return b.t
}
