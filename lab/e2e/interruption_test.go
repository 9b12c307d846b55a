package e2e

import (
	"context"
	"encoding/json"
	"math"
	"strings"
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

// A rolling update, a drain and a node that rejoins, run by the experiment runner: the API's
// interruption windows match what happened to the pods — none for the surge-first rollout, one
// per evicted pod for the drain (from its termination to its replacement's readiness, within
// one probe interval), and one while the node was away.
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
	var expected []float64
	var podList struct {
		Pods []align.Summary `json:"pods"`
	}
	e.get("/v1/pods?experiment=disrupt&arm=drain&limit=100", &podList)
	byName := map[string]align.Summary{}
	for _, p := range podList.Pods {
		byName[p.Pod.Name] = p
	}
	for name, p := range byName {
		if !strings.HasSuffix(name, "-r") {
			continue
		}
		old := e.timeline(types.UID(byName[strings.TrimSuffix(name, "-r")].Pod.UID))
		repl := e.timeline(types.UID(p.Pod.UID))
		expected = append(expected, readyObserved(t, repl).Sub(terminating(t, old)).Seconds())
		// Both pods' timelines carry the window they took part in.
		if len(old.Interruptions) == 0 || len(repl.Interruptions) == 0 {
			t.Errorf("%s / %s timelines: interruptions %v / %v, want the drain window on both", old.Pod.Name, repl.Pod.Name, old.Interruptions, repl.Interruptions)
		}
	}
	if len(expected) == 0 {
		t.Fatalf("no replacement pods among %v", keys(byName))
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
	// The node was NotReady for 2 s: the window is at least that, less a probe interval; how much
	// longer depends on how loaded the machine is (logged).
	if len(rejoin) == 0 || rejoin[0].Seconds < 1.5 {
		t.Errorf("node rejoin: windows %+v, want one of at least about the 2 s the node was NotReady", arms["node-rejoin"])
	} else {
		t.Logf("node rejoin: window %.3fs (node NotReady for 2 s)", rejoin[0].Seconds)
	}
	var nf struct{}
	if code := e.get("/v1/experiments/disrupt/runs/9/interruptions", &nf); code != 404 {
		t.Errorf("unknown run: HTTP %d, want 404", code)
	}
	if code := e.get("/v1/experiments/disrupt/runs/1/interruptions?min_gap=soon", &nf); code != 400 {
		t.Errorf("bad min_gap: HTTP %d, want 400", code)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
