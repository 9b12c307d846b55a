package workload_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/workload"
)

var t0 = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)

// at is t0 plus s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func ptr[T any](v T) *T { return &v }

var infer = events.WorkloadRef{Namespace: "prod", Kind: "Deployment", Name: "infer"}

// pod is a pod of a workload: created, scheduled on node, Ready from ready until notReady (0:
// still), ended at end (0: alive) for reason.
type pod struct {
	name, node, rev                 string
	w                               events.WorkloadRef
	created, ready, notReady, ended float64
	reason                          string
	target                          string
	targetAt                        float64
	preemptedBy                     string
}

func (p pod) build() workload.Pod {
	w := p.w
	if w == (events.WorkloadRef{}) {
		w = infer
	}
	uid := "uid-" + p.name
	s := align.Summary{Pod: align.PodInfo{Namespace: w.Namespace, Name: p.name, UID: uid, Node: ptr(p.node)}}
	s.Milestones.Created = ptr(at(p.created))
	s.Milestones.Scheduled = ptr(at(p.created + 0.5))
	if p.ready > 0 {
		s.Milestones.Running, s.Milestones.Ready = ptr(at(p.ready-3)), ptr(at(p.ready))
		s.Durations.Pending, s.Durations.ModelLoad = ptr(0.5), ptr(3.0)
	}
	if p.ended > 0 {
		s.Milestones.Ended, s.EndedReason = ptr(at(p.ended)), ptr(p.reason)
	}
	if p.preemptedBy != "" {
		s.PreemptedBy = ptr(p.preemptedBy)
	}
	out := workload.Pod{Summary: s, Workload: w, Revision: p.rev}
	if p.ready > 0 {
		until := at(10_000)
		switch {
		case p.notReady > 0:
			until = at(p.notReady)
		case p.ended > 0:
			until = at(p.ended)
		}
		out.Ready = []align.Span{{From: at(p.ready), To: until}}
	}
	if p.target != "" {
		out.Target = &workload.Target{Reason: p.target, At: at(p.targetAt)}
	}
	return out
}

func deployment(s float64, replicas int32, revision string) workload.State {
	return workload.State{At: at(s), Status: events.WorkloadStatus{Kind: "Deployment", Namespace: "prod", Name: "infer", Replicas: &replicas, Revision: revision}}
}

func replicaSet(s float64, hash, revision string) workload.State {
	return workload.State{At: at(s), Status: events.WorkloadStatus{Kind: "ReplicaSet", Namespace: "prod", Name: "infer-" + hash, TemplateHash: hash,
		Revision: revision, Owner: &events.Owner{Kind: "Deployment", Name: "infer"}}}
}

func node(s float64, name, change string) report.NodeChange {
	return report.NodeChange{At: at(s), Node: name, Change: change}
}

// steady is the Deployment prod/infer at revision 1 (hash h1): three pods Ready from 10 s.
func steady() []pod {
	return []pod{
		{name: "a", node: "n1", rev: "h1", created: 1, ready: 10},
		{name: "b", node: "n2", rev: "h1", created: 1, ready: 10},
		{name: "c", node: "n3", rev: "h1", created: 1, ready: 10},
	}
}

func observed(extra ...workload.State) []workload.State {
	return append([]workload.State{deployment(0, 3, "1"), replicaSet(0, "h1", "1")}, extra...)
}

// found is what a test reads of a disruption: its facts in seconds from t0, and per workload
// what it cost.
type found struct {
	Kind, Node string
	Start      float64
	End        *float64
	Stalled    bool
	Revision   string
	Preemptor  string
	Pods       string
	Workloads  []cost
}

type cost struct {
	Workload        string
	Desired, Fewest int
	Interruption    float64
	Recovery        *float64
	NoSuccess       *float64
	Replacements    string
}

func since(t *time.Time) *float64 {
	if t == nil {
		return nil
	}
	s := t.Sub(t0).Seconds()
	return &s
}

func read(ds []report.Disruption) []found {
	out := []found{}
	for _, d := range ds {
		f := found{Kind: d.Kind, Node: d.Node, Start: d.Start.Sub(t0).Seconds(), End: since(d.End), Stalled: d.Stalled,
			Pods: strings.ReplaceAll(strings.Join(d.Pods, ","), "uid-", "")}
		if d.Revision != nil {
			f.Revision = fmt.Sprintf("%s→%s (%s)", d.From.Hash, d.Revision.Hash, d.Revision.Number)
		}
		if d.Preemptor != nil {
			f.Preemptor = d.Preemptor.Name
		}
		for _, a := range d.Workloads {
			var repl []string
			for _, r := range a.Replacements {
				repl = append(repl, r.Name)
			}
			f.Workloads = append(f.Workloads, cost{Workload: a.Workload.String(), Desired: a.Desired, Fewest: a.Interruption.FewestReady,
				Interruption: a.Interruption.Seconds, Recovery: a.RecoverySeconds, NoSuccess: a.Interruption.NoSuccessSeconds, Replacements: strings.Join(repl, ",")})
		}
		out = append(out, f)
	}
	return out
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pods   []pod
		states []workload.State
		nodes  []report.NodeChange
		want   []found
	}{
		{
			name: "rollout, from the Deployment's revision, surge keeps every pod Ready",
			pods: append(steady(),
				pod{name: "d", node: "n1", rev: "h2", created: 100, ready: 110},
				pod{name: "e", node: "n2", rev: "h2", created: 101, ready: 112},
				pod{name: "f", node: "n3", rev: "h2", created: 102, ready: 114}),
			states: observed(deployment(100, 3, "2"), replicaSet(100, "h2", "2")),
			want: []found{{Kind: "rollout", Start: 100, End: ptr(114.0), Revision: "h1→h2 (2)", Pods: "d,e,f",
				Workloads: []cost{{Workload: "prod/Deployment/infer", Desired: 3, Fewest: 3, Recovery: ptr(0.0), Replacements: "d,e,f"}}}},
		},
		{
			name: "rollout replacing pods one at a time, old ones ending as new ones are Ready",
			pods: []pod{
				{name: "a", node: "n1", rev: "h1", created: 1, ready: 10, ended: 100, reason: "deleted"},
				{name: "b", node: "n2", rev: "h1", created: 1, ready: 10, ended: 110, reason: "deleted"},
				{name: "d", node: "n1", rev: "h2", created: 100, ready: 110},
				{name: "e", node: "n2", rev: "h2", created: 110, ready: 120},
			},
			states: []workload.State{deployment(0, 2, "1"), deployment(100, 2, "2")},
			want: []found{{Kind: "rollout", Start: 100, End: ptr(120.0), Revision: "h1→h2 (2)", Pods: "a,b,d,e",
				Workloads: []cost{{Workload: "prod/Deployment/infer", Desired: 2, Fewest: 1, Interruption: 20, Recovery: ptr(20.0), Replacements: "d,e"}}}},
		},
		{
			name: "rollout found from the pods alone, no controller observed",
			pods: []pod{
				{name: "a", node: "n1", rev: "h1", created: 1, ready: 10, ended: 111, reason: "deleted"},
				{name: "b", node: "n2", rev: "h1", created: 1, ready: 10, ended: 113, reason: "deleted"},
				{name: "c", node: "n3", rev: "h1", created: 1, ready: 10, ended: 115, reason: "deleted"},
				{name: "d", node: "n1", rev: "h2", created: 100, ready: 110},
				{name: "e", node: "n2", rev: "h2", created: 101, ready: 112},
				{name: "f", node: "n3", rev: "h2", created: 102, ready: 114},
			},
			want: []found{{Kind: "rollout", Start: 100, End: ptr(114.0), Revision: "h1→h2 ()", Pods: "a,b,c,d,e,f",
				Workloads: []cost{{Workload: "prod/Deployment/infer", Desired: 3, Fewest: 3, Recovery: ptr(0.0), Replacements: "d,e,f"}}}},
		},
		{
			name: "rollout that stalls: ProgressDeadlineExceeded",
			pods: append(steady(), pod{name: "d", node: "n1", rev: "h2", created: 100}),
			states: observed(deployment(100, 3, "2"), replicaSet(100, "h2", "2"),
				workload.State{At: at(700), Status: events.WorkloadStatus{Kind: "Deployment", Namespace: "prod", Name: "infer", Replicas: ptr[int32](3), Revision: "2",
					Conditions: []events.Condition{{Type: "Progressing", Status: "False", Reason: "ProgressDeadlineExceeded"}}}}),
			want: []found{{Kind: "rollout", Start: 100, End: ptr(700.0), Stalled: true, Revision: "h1→h2 (2)", Pods: "d",
				Workloads: []cost{{Workload: "prod/Deployment/infer", Desired: 3, Fewest: 3, Recovery: ptr(0.0), Replacements: "d"}}}},
		},
		{
			name:   "not a rollout: a new state of the same revision, and the first revision's pods",
			pods:   steady(),
			states: observed(deployment(50, 3, "1")),
			want:   []found{},
		},
		{
			name: "drain: cordon, an eviction, a replacement elsewhere, uncordon",
			pods: append(steady()[1:],
				pod{name: "a", node: "n1", rev: "h1", created: 1, ready: 10, notReady: 201.5, ended: 202, reason: "evicted", target: workload.TargetEviction, targetAt: 201},
				pod{name: "g", node: "n2", rev: "h1", created: 202, ready: 210}),
			states: observed(),
			nodes:  []report.NodeChange{node(200, "n1", report.NodeCordoned), node(300, "n1", report.NodeUncordoned)},
			want: []found{{Kind: "drain", Node: "n1", Start: 200, End: ptr(300.0), Pods: "a",
				Workloads: []cost{{Workload: "prod/Deployment/infer", Desired: 3, Fewest: 2, Interruption: 8.5, Recovery: ptr(10.0), Replacements: "g"}}}},
		},
		{
			name:   "not a drain: a cordon without evictions",
			pods:   steady(),
			states: observed(),
			nodes:  []report.NodeChange{node(200, "n1", report.NodeCordoned), node(300, "n1", report.NodeUncordoned)},
			want:   []found{},
		},
		{
			name: "not a drain: a pod deleted from a cordoned node (not evicted)",
			pods: append(steady()[1:],
				pod{name: "a", node: "n1", rev: "h1", created: 1, ready: 10, ended: 202, reason: "deleted"}),
			states: observed(),
			nodes:  []report.NodeChange{node(200, "n1", report.NodeCordoned)},
			want:   []found{},
		},
		{
			name: "node failure: NotReady, taint-based eviction, a replacement, Ready again",
			pods: []pod{
				{name: "a", node: "n1", rev: "h1", created: 1, ready: 10},
				{name: "b", node: "n2", rev: "h1", created: 1, ready: 10, notReady: 400.5, ended: 405, reason: "evicted", target: workload.TargetTaint, targetAt: 405},
				{name: "c", node: "n3", rev: "h1", created: 1, ready: 10},
				{name: "h", node: "n1", rev: "h1", created: 405, ready: 415},
			},
			states: observed(),
			nodes:  []report.NodeChange{node(400, "n2", report.NodeNotReady), node(500, "n2", report.NodeReady)},
			want: []found{{Kind: "node_failure", Node: "n2", Start: 400, End: ptr(500.0), Pods: "b",
				Workloads: []cost{{Workload: "prod/Deployment/infer", Desired: 3, Fewest: 2, Interruption: 14.5, Recovery: ptr(15.0), Replacements: "h"}}}},
		},
		{
			name:   "not a node failure: a NotReady node none of the pods ran on",
			pods:   steady(),
			states: observed(),
			nodes:  []report.NodeChange{node(400, "n9", report.NodeNotReady), node(500, "n9", report.NodeReady)},
			want:   []found{},
		},
		{
			name: "preemption: two pods of a batch job preempted for one inference pod, the job short until the end",
			pods: []pod{
				{name: "p", node: "n1", rev: "h1", created: 598, ready: 610},
				{name: "x", node: "n1", w: events.WorkloadRef{Namespace: "prod", Kind: "Job", Name: "batch"}, created: 1, ready: 5, ended: 600.2, reason: "preempted",
					target: workload.TargetPreemption, targetAt: 600, preemptedBy: "uid-p"},
				{name: "y", node: "n1", w: events.WorkloadRef{Namespace: "prod", Kind: "Job", Name: "batch"}, created: 1, ready: 5, ended: 600.4, reason: "preempted",
					target: workload.TargetPreemption, targetAt: 600.1, preemptedBy: "uid-p"},
			},
			want: []found{{Kind: "preemption", Node: "n1", Start: 600, End: ptr(600.4), Preemptor: "p", Pods: "x,y",
				Workloads: []cost{{Workload: "prod/Job/batch", Desired: 2, Fewest: 0, Interruption: 9399.8, Replacements: ""}}}},
		},
		{
			name: "not a preemption: pods deleted",
			pods: []pod{
				{name: "x", node: "n1", w: events.WorkloadRef{Namespace: "prod", Kind: "Job", Name: "batch"}, created: 1, ready: 5, ended: 600.2, reason: "deleted"},
			},
			want: []found{},
		},
		{
			name:   "scale up: 3 → 4, the fourth pod Ready 10 s later",
			pods:   append(steady(), pod{name: "d", node: "n1", rev: "h1", created: 700, ready: 710}),
			states: observed(deployment(700, 4, "1")),
			want: []found{{Kind: "scale", Start: 700, End: ptr(710.0), Pods: "",
				Workloads: []cost{{Workload: "prod/Deployment/infer", Desired: 4, Fewest: 3, Interruption: 10, Recovery: ptr(10.0), Replacements: "d"}}}},
		},
		{
			name:   "not a scale: a status update that keeps the replicas",
			pods:   steady(),
			states: observed(deployment(700, 3, "1"), deployment(701, 3, "1")),
			want:   []found{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := workload.Input{States: tc.states, Nodes: tc.nodes, From: t0, To: at(10_000)}
			for _, p := range tc.pods {
				in.Pods = append(in.Pods, p.build())
			}
			if diff := cmp.Diff(tc.want, read(workload.Detect(in))); diff != "" {
				t.Errorf("Detect (-want +got):\n%s", diff)
			}
		})
	}
}

// A workload's summary counts its pods still Ready at the end of observation as Ready (their
// spans end there: that is no loss), and its Ready line does not drop there either.
func TestSummaryReadyAtTheEnd(t *testing.T) {
	in := workload.Input{States: observed(), From: t0, To: at(100)}
	for _, p := range steady() {
		b := p.build()
		b.Ready = []align.Span{{From: at(p.ready), To: at(100)}}
		in.Pods = append(in.Pods, b)
	}
	got := workload.Summaries(in, nil)
	if len(got) != 1 || got[0].Ready != 3 || got[0].Desired != 3 {
		t.Fatalf("Summaries = %+v, want infer with 3 Ready of 3", got)
	}
	line := workload.Ready(in, infer)
	if last := line[len(line)-1]; last.Count != 3 {
		t.Errorf("Ready line ends at %d (%v), want 3", last.Count, line)
	}
}
