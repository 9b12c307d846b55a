package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pipetest"
	"github.com/schedlens/schedlens/internal/trace"
)

// trace.json is valid Chrome Trace Event JSON whose threads are the run's pods (and the pods
// they preempted), whose phase slices follow each pod's milestones and whose flows link each
// preemptor to its victim, for a run stored by the real pipeline.
func TestRunTraceMatchesTimelines(t *testing.T) {
	p := pipetest.Start(t)
	p.Publish(eventgen.Generate(eventgen.Default()))
	srv := apitest.Serve(t, p.DB)

	var pods struct {
		Pods []align.Summary `json:"pods"`
	}
	apitest.GetJSON(t, srv.URL+"/v1/pods?experiment=day20&run=2&limit=1000", &pods)
	var all struct {
		Pods []align.Summary `json:"pods"`
	}
	apitest.GetJSON(t, srv.URL+"/v1/pods?limit=1000", &all)

	var tr trace.Trace
	apitest.GetJSON(t, srv.URL+"/v1/experiments/day20/runs/2/trace.json", &tr)
	if tr.DisplayTimeUnit == "" || len(tr.TraceEvents) == 0 {
		t.Fatalf("trace has no events or no displayTimeUnit: %+v", tr.OtherData)
	}
	threads := map[[2]int]string{}
	processes := map[int]string{}
	for _, e := range tr.TraceEvents {
		switch e.Ph {
		case "M":
			if e.Name == "thread_name" {
				threads[[2]int{e.Pid, e.Tid}] = e.Args["name"].(string)
			}
			if e.Name == "process_name" {
				processes[e.Pid] = e.Args["name"].(string)
			}
		case "X":
			if e.Dur == nil || *e.Dur < 0 {
				t.Errorf("slice %s without a duration", e.Name)
			}
		case "i", "s", "f", "C":
		default:
			t.Errorf("unexpected phase %q", e.Ph)
		}
	}

	// Threads: every pod of the run, and every pod it preempted.
	inRun := map[string]bool{}
	byUID := map[string]align.Summary{}
	var want []string
	for _, s := range pods.Pods {
		inRun[s.Pod.UID] = true
		want = append(want, s.Pod.Name)
	}
	var wantFlows [][2]string
	for _, s := range all.Pods {
		byUID[s.Pod.UID] = s
	}
	for _, s := range all.Pods {
		if s.PreemptedBy != nil && inRun[*s.PreemptedBy] {
			wantFlows = append(wantFlows, [2]string{byUID[*s.PreemptedBy].Pod.Name, s.Pod.Name})
			if !inRun[s.Pod.UID] {
				want = append(want, s.Pod.Name)
			}
		}
	}
	if len(wantFlows) == 0 {
		t.Fatal("the generated run has no preemption: the test would prove nothing")
	}
	var got []string
	for k, name := range threads {
		if k[1] != 0 {
			got = append(got, name)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("threads (-pods +trace):\n%s", diff)
	}

	// Flows: an s/f pair per preemption, from the preemptor's thread to the victim's.
	starts := map[string]trace.Event{}
	var gotFlows [][2]string
	for _, e := range tr.TraceEvents {
		switch e.Ph {
		case "s":
			starts[e.ID] = e
		case "f":
			s, ok := starts[e.ID]
			if !ok {
				t.Errorf("flow %s ends before it starts", e.ID)
				continue
			}
			gotFlows = append(gotFlows, [2]string{threads[[2]int{s.Pid, s.Tid}], threads[[2]int{e.Pid, e.Tid}]})
		}
	}
	slices.SortFunc(wantFlows, func(a, b [2]string) int { return strings.Compare(a[1], b[1]) })
	slices.SortFunc(gotFlows, func(a, b [2]string) int { return strings.Compare(a[1], b[1]) })
	if diff := cmp.Diff(wantFlows, gotFlows); diff != "" {
		t.Errorf("preemption flows [preemptor victim] (-timelines +trace):\n%s", diff)
	}

	// Slices: per pod, the phases reached, in milestone order, the last one censored when the
	// pod missed a milestone.
	phases := map[string][]string{}
	censored := map[string]bool{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" && e.Cat == trace.CatPhase {
			name := threads[[2]int{e.Pid, e.Tid}]
			phases[name] = append(phases[name], e.Name)
			if c, _ := e.Args["censored"].(bool); c {
				censored[name] = true
			}
		}
	}
	order := []string{trace.PhasePending, trace.PhaseStart, trace.PhaseModelLoad, trace.PhaseReadyToFirstSuccess, trace.PhaseServing}
	for _, s := range pods.Pods {
		n := 1
		for _, at := range []bool{s.Milestones.Scheduled != nil, s.Milestones.Running != nil, s.Milestones.Ready != nil, s.Milestones.FirstSuccess != nil} {
			if !at {
				break
			}
			n++
		}
		if diff := cmp.Diff(order[:n], phases[s.Pod.Name]); diff != "" {
			t.Errorf("pod %s phases (-milestones +trace):\n%s", s.Pod.Name, diff)
		}
		if want := len(s.Censored) > 0; censored[s.Pod.Name] != want {
			t.Errorf("pod %s: censored in trace %v, timeline censored %v", s.Pod.Name, censored[s.Pod.Name], s.Censored)
		}
	}

	resp, err := http.Get(srv.URL + "/v1/experiments/day20/runs/99/trace.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("unknown run: %d %s, want 404 problem+json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
