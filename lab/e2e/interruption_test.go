package e2e

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/lab/experiment"
)

// readyObserved is when the pod was first seen Ready (µs), from its timeline's snapshots.
func readyObserved(t *testing.T, tl align.Timeline) time.Time {
	t.Helper()
	for _, ev := range tl.Events {
		if ev.Kind != events.KindPodStatus {
			continue
		}
		var p events.PodStatus
		if err := json.Unmarshal(ev.Data, &p); err != nil {
			t.Fatal(err)
		}
		if c := p.Condition("Ready"); c != nil && c.Status == "True" {
			return ev.OccurredAt
		}
	}
	t.Fatalf("%s never seen Ready", tl.Pod.Name)
	return time.Time{}
}

// terminating is when the pod was first seen terminating (it left the Service then).
func terminating(t *testing.T, tl align.Timeline) time.Time {
	t.Helper()
	for _, ev := range tl.Events {
		var p events.PodStatus
		if ev.Kind == events.KindPodStatus && json.Unmarshal(ev.Data, &p) == nil && (p.DeletionTimestamp != nil || p.Deleted) {
			return ev.OccurredAt
		}
	}
	t.Fatalf("%s never seen terminating", tl.Pod.Name)
	return time.Time{}
}

// A rolling update, a drain and a node that fails and rejoins, run by the experiment runner
// through the real controllers: the API's interruption windows match what happened to the pods
// — none for the surge-first rollout, one per evicted pod for the drain (from its termination to
// its replacement's readiness, within one probe interval), and one while the failed node's pods
// were not Ready and not yet replaced.
func TestInterruptionWindowsMatchDisruptions(t *testing.T) {
	e := newEnv(t)
	def, err := experiment.Parse([]byte(`
name: disrupt
fixed: {image: nvcr.io/nvidia/tritonserver:25.01-py3, model: llama-3-8b, pods: 2, request: {method: POST, port: 8000, path: /v2/models/model/infer}}
repeats: 1
arms: [{name: control, nodeSelector: {lab.schedlens.io/pool: a100}}]
disruptions: [rolling-update, drain, node-rejoin]
`))
	if err != nil {
		t.Fatal(err)
	}
	r := &experiment.Runner{Client: client, Nodes: kubelt, Namespace: e.ns, Hold: time.Second}
	if err := r.Run(context.Background(), def); err != nil {
		t.Fatal(err)
	}
	e.settle()
	var resp struct {
		Arms []report.ArmInterruptions `json:"arms"`
	}
	if code := e.get("/v1/experiments/disrupt/runs/1/interruptions", &resp); code != 200 {
		t.Fatalf("interruptions: HTTP %d", code)
	}
	arms := map[string][]align.Window{}
	for _, a := range resp.Arms {
		arms[a.Arm] = a.Windows
	}
	// Readiness never drops below what the arm held in a surge-first rolling update or an
	// undisturbed arm. (no_success windows follow request latencies, which a loaded machine
	// stretches past the 1 s gap: they are logged, not asserted.)
	for _, arm := range []string{"rolling-update", "control"} {
		for _, w := range arms[arm] {
			if w.Kind == align.ReadyBelowDesired {
				t.Errorf("%s: window %+v; want no ready_below_desired window", arm, w)
			} else {
				t.Logf("%s: %s window of %.3fs", arm, w.Kind, w.Seconds)
			}
		}
	}

	// The drain: each evicted pod and its replacement.
	var drainWindows []align.Window
	for _, w := range arms["drain"] {
		if w.Kind == align.ReadyBelowDesired {
			drainWindows = append(drainWindows, w)
		}
	}
	var podList struct {
		Pods []align.Summary `json:"pods"`
	}
	e.get("/v1/pods?experiment=disrupt&arm=drain&limit=100", &podList)
	// The drain's pods are the Deployment's: the evicted ones ended "evicted"; the ReplicaSet
	// created the replacements after the first eviction. Paired in order: the n-th evicted pod
	// to terminate and the n-th replacement created.
	var evicted, replacements []align.Timeline
	var firstEnd time.Time
	for _, p := range podList.Pods {
		if p.EndedReason != nil && *p.EndedReason == align.EndEvicted {
			tl := e.timeline(types.UID(p.Pod.UID))
			evicted = append(evicted, tl)
			if at := terminating(t, tl); firstEnd.IsZero() || at.Before(firstEnd) {
				firstEnd = at
			}
		}
	}
	for _, p := range podList.Pods {
		if c := p.Milestones.Created; c != nil && !firstEnd.IsZero() && c.After(firstEnd) {
			replacements = append(replacements, e.timeline(types.UID(p.Pod.UID)))
		}
	}
	slices.SortFunc(evicted, func(a, b align.Timeline) int { return terminating(t, a).Compare(terminating(t, b)) })
	slices.SortFunc(replacements, func(a, b align.Timeline) int { return a.Milestones.Created.Compare(*b.Milestones.Created) })
	if len(evicted) == 0 || len(replacements) != len(evicted) {
		t.Fatalf("drain: %d evicted pods and %d replacements among %d pods; want one replacement per evicted pod", len(evicted), len(replacements), len(podList.Pods))
	}
	var expected []float64
	for i, old := range evicted {
		repl := replacements[i]
		expected = append(expected, readyObserved(t, repl).Sub(terminating(t, old)).Seconds())
		// Both pods' timelines carry the window they took part in.
		if len(old.Interruptions) == 0 || len(repl.Interruptions) == 0 {
			t.Errorf("%s / %s timelines: interruptions %v / %v, want the drain window on both", old.Pod.Name, repl.Pod.Name, old.Interruptions, repl.Interruptions)
		}
	}
	// Evicted pods on one node go together: their windows merge when they overlap.
	if len(drainWindows) == 0 {
		t.Fatalf("drain: no ready_below_desired window; arms %+v", resp.Arms)
	}
	longest, want := 0.0, 0.0
	for _, w := range drainWindows {
		longest = math.Max(longest, w.Seconds)
	}
	for _, x := range expected {
		want = math.Max(want, x)
	}
	if math.Abs(longest-want) > 0.2 {
		t.Errorf("drain window %.3fs, the pods say %.3fs (evicted pod terminating → replacement Ready): more than one probe interval apart", longest, want)
	}
	t.Logf("drain: window %.3fs vs %.3fs from the pods' timelines", longest, want)

	var rejoin []align.Window
	for _, w := range arms["node-rejoin"] {
		if w.Kind == align.ReadyBelowDesired {
			rejoin = append(rejoin, w)
		}
	}
	// The node's heartbeats stopped: about 4 s later the node lifecycle controller marked it
	// NotReady and its pods not Ready, 2 s later (their toleration) the taint-eviction
	// controller deleted them and the ReplicaSet created replacements. The window runs from the
	// pods not Ready to the replacements Ready: at least the 2 s toleration, less a probe
	// interval; how much longer depends on how loaded the machine is (logged).
	if len(rejoin) == 0 || rejoin[0].Seconds < 1.5 {
		t.Errorf("node rejoin: windows %+v, want one of at least about the 2 s the pods tolerate the unreachable node", arms["node-rejoin"])
	} else {
		t.Logf("node rejoin: window %.3fs", rejoin[0].Seconds)
	}
	var nf struct{}
	if code := e.get("/v1/experiments/disrupt/runs/9/interruptions", &nf); code != 404 {
		t.Errorf("unknown run: HTTP %d, want 404", code)
	}
	if code := e.get("/v1/experiments/disrupt/runs/1/interruptions?min_gap=soon", &nf); code != 400 {
		t.Errorf("bad min_gap: HTTP %d, want 400", code)
	}
}
