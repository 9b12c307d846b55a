package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/lab/disrupt"
	"github.com/schedlens/schedlens/lab/stack"
)

// recorder keeps, from watches, what the controllers did that the scenario's report does not
// say: why each pod was disrupted (its DisruptionTarget condition), and every change of each
// node's Ready condition.
type recorder struct {
	mu        sync.Mutex
	disrupted map[string]string // pod → node/reason of its DisruptionTarget condition
	ready     map[string][]string
	readyAt   map[string][]time.Time
	// serving is every pod's own Ready transitions as this watch saw them: Ready (Running,
	// Ready=True, not terminating) or not, by pod UID, in order.
	serving map[string][]transition
}

// transition is a pod becoming Ready (true) or ceasing to be, when the test's watch saw it.
type transition struct {
	at    time.Time
	ready bool
}

func record(t *testing.T, ns string) *recorder {
	t.Helper()
	r := &recorder{disrupted: map[string]string{}, ready: map[string][]string{}, readyAt: map[string][]time.Time{}, serving: map[string][]transition{}}
	ctx, cancel := context.WithCancel(context.Background())
	pods := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	nodes := informers.NewSharedInformerFactory(client, 0)
	onPod := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		r.saw(string(p.UID), p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && ready(p))
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
				r.mu.Lock()
				r.disrupted[p.Name] = p.Spec.NodeName + "/" + c.Reason
				r.mu.Unlock()
			}
		}
	}
	onNode := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		for _, c := range n.Status.Conditions {
			if c.Type != corev1.NodeReady {
				continue
			}
			r.mu.Lock()
			if s := r.ready[n.Name]; len(s) == 0 || s[len(s)-1] != string(c.Status) {
				r.ready[n.Name] = append(s, string(c.Status))
				r.readyAt[n.Name] = append(r.readyAt[n.Name], time.Now())
			}
			r.mu.Unlock()
		}
	}
	for inf, f := range map[cache.SharedIndexInformer]func(any){pods.Core().V1().Pods().Informer(): onPod, nodes.Core().V1().Nodes().Informer(): onNode} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: f, UpdateFunc: func(_, o any) { f(o) }}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pods.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok {
			r.saw(string(p.UID), false)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	pods.Start(ctx.Done())
	nodes.Start(ctx.Done())
	for _, ok := range nodes.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatal("node informer did not sync")
		}
	}
	t.Cleanup(func() {
		cancel()
		pods.Shutdown()
		nodes.Shutdown()
	})
	return r
}

// saw records a pod's readiness when it changed.
func (r *recorder) saw(uid string, ready bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts := r.serving[uid]
	if (len(ts) == 0 && ready) || len(ts) > 0 && ts[len(ts)-1].ready != ready {
		r.serving[uid] = append(ts, transition{time.Now(), ready})
	}
}

// shortfall is what the pods' own Ready transitions say a disruption from start to end (nil:
// open) cost a workload that wants desired pods: the seconds of every time with fewer Ready that
// began in it (docs/workloads.md), and when it had them again (the start when it never had fewer).
func (r *recorder) shortfall(start time.Time, end *time.Time, desired int) (seconds float64, recovered time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, ts := range r.serving {
		for _, tr := range ts {
			d := -1
			if tr.ready {
				d = 1
			}
			edges = append(edges, edge{tr.at, d})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int { return a.at.Compare(b.at) })
	n, short := 0, time.Time{}
	recovered = start
	for _, e := range edges {
		n += e.delta
		switch {
		case e.at.Before(start):
		case n < desired && short.IsZero():
			if end != nil && e.at.After(*end) {
				return seconds, recovered // began after the disruption: someone else's
			}
			short = e.at
		case n >= desired && !short.IsZero():
			seconds += e.at.Sub(short).Seconds()
			recovered, short = e.at, time.Time{}
		}
	}
	return seconds, recovered
}

// The workload scenario of the demo takes an unlabelled Deployment through a rollout, a drain
// and a node failure, and each went through the real controllers: a new ReplicaSet of the new
// image, pods evicted by the Eviction API from the drained node, pods deleted by the
// taint-eviction controller from the failed node, which went NotReady and then Ready again.
func TestWorkloadThroughRealControllers(t *testing.T) {
	ctx := context.Background()
	ns := "e2e-workload"
	rec := record(t, ns)
	// schedlens watching the namespace, as a collector with its defaults would; the api computes
	// its workload metrics every second.
	e := newEnvIn(t, ns, func(o *stack.Options) { o.WorkloadMetricsInterval = time.Second })
	t.Cleanup(func() { deleteNamespace(t, ns) }) // before the pipeline's cleanup: the ReplicaSet would bring its pods back
	w := &disrupt.Workload{Client: client, Nodes: kubelt, Namespace: ns, Progress: func(step string, d time.Duration) {
		t.Logf("%-12s done at %5.2fs", step, d.Seconds())
	}}
	rep, err := w.Run(ctx)
	if err != nil {
		t.Fatalf("workload scenario: %v (report so far %+v)", err, rep)
	}
	if len(rep.Disruptions) != 3 {
		t.Fatalf("disruptions %+v, want 3", rep.Disruptions)
	}
	rollout, drain, failure := rep.Disruptions[0], rep.Disruptions[1], rep.Disruptions[2]
	since := func(at time.Time) string { return fmt.Sprintf("%.2fs", at.Sub(failure.Start).Seconds()) }
	t.Logf("created → ready %.2fs; rollout %.2fs; drain %.2fs (evicted → replacements Ready %.2fs); whole scenario %.2fs",
		rep.Ready.Sub(rep.Created).Seconds(), rollout.End.Sub(rollout.Start).Seconds(), drain.End.Sub(drain.Start).Seconds(),
		drain.Recovered.Sub(drain.Evicted).Seconds(), rep.Finished.Sub(rep.Created).Seconds())
	t.Logf("node failure of %s, after its last heartbeat: NotReady %s, pods deleted %s, replacements Ready %s, rejoined and evicted pods gone %s",
		failure.Node, since(failure.NotReady), since(failure.Evicted), since(failure.Recovered), since(failure.End))

	// What happened, as the report says it and in order.
	var got []string
	for _, d := range rep.Disruptions {
		got = append(got, fmt.Sprintf("%s node=%q pods=%d replacements=%d", d.Kind, d.Node, len(d.Pods), len(d.Replacements)))
	}
	want := []string{
		fmt.Sprintf("%s node=%q pods=3 replacements=3", report.DisruptionRollout, ""),
		fmt.Sprintf("%s node=%q pods=%d replacements=%d", report.DisruptionDrain, drain.Node, len(drain.Pods), len(drain.Pods)),
		fmt.Sprintf("%s node=%q pods=%d replacements=%d", report.DisruptionNodeFailure, failure.Node, len(failure.Pods), len(failure.Pods)),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("disruptions (-want +got):\n%s", diff)
	}
	order := []struct {
		what string
		at   time.Time
	}{
		{"created", rep.Created}, {"ready", rep.Ready},
		{"rollout start", rollout.Start}, {"rollout recovered", rollout.Recovered}, {"rollout end", rollout.End},
		{"drain start", drain.Start}, {"drain evicted", drain.Evicted}, {"drain recovered", drain.Recovered}, {"drain end", drain.End},
		{"failure start", failure.Start}, {"failure not ready", failure.NotReady}, {"failure evicted", failure.Evicted},
		{"failure recovered", failure.Recovered}, {"failure end", failure.End}, {"finished", rep.Finished},
	}
	for i := 1; i < len(order); i++ {
		if order[i].at.IsZero() || order[i].at.Before(order[i-1].at) {
			t.Errorf("%s at %s, before %s at %s", order[i].what, order[i].at.Format(time.StampMicro), order[i-1].what, order[i-1].at.Format(time.StampMicro))
		}
	}

	// The rollout: a second ReplicaSet, of the new image, holds every replica.
	rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sets []string
	for _, rs := range rss.Items {
		sets = append(sets, fmt.Sprintf("%s revision=%s replicas=%d image=%s", rs.Name, rs.Annotations["deployment.kubernetes.io/revision"],
			*rs.Spec.Replicas, rs.Spec.Template.Spec.Containers[0].Image))
	}
	slices.Sort(sets)
	wantSets := []string{
		rollout.FromReplicaSet + " revision=1 replicas=0 image=nvcr.io/nvidia/tritonserver:25.01-py3",
		rollout.ToReplicaSet + " revision=2 replicas=3 image=nvcr.io/nvidia/tritonserver:25.02-py3",
	}
	slices.Sort(wantSets)
	if diff := cmp.Diff(wantSets, sets); diff != "" {
		t.Errorf("replicasets (-want +got):\n%s", diff)
	}

	checkExported(t, e, checkDetected(t, e, rec, rep))

	// The evictions, with the reasons the API server and the taint-eviction controller gave.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	wantDisrupted := map[string]string{}
	for _, p := range drain.Pods {
		wantDisrupted[p] = drain.Node + "/EvictionByEvictionAPI"
	}
	for _, p := range failure.Pods {
		wantDisrupted[p] = failure.Node + "/DeletionByTaintManager"
	}
	if diff := cmp.Diff(wantDisrupted, rec.disrupted); diff != "" {
		t.Errorf("pods' DisruptionTarget node/reason (-want +got):\n%s", diff)
	}
	// The failed node went NotReady (Unknown: no heartbeats) and Ready again, once; no other
	// node flapped.
	for node, changes := range rec.ready {
		want := "True"
		if node == failure.Node {
			want = "True Unknown True"
		}
		if got := strings.Join(changes, " "); got != want {
			t.Errorf("node %s Ready: %s, want %s", node, got, want)
		}
	}
}

// deleteNamespace deletes a namespace and waits until its pods are gone (the namespace itself
// takes 5 s more: the namespace controller's fixed grace).
func deleteNamespace(t *testing.T, ns string) {
	ctx := context.Background()
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete namespace %s: %v", ns, err)
		return
	}
	waitFor(t, 60*time.Second, "the namespace's pods to go", func() bool {
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
}

// checkDetected holds schedlens to what happened: GET /v1/disruptions lists exactly the
// rollout, the drain and the node failure, on their nodes, each touching the Deployment alone,
// with interruption seconds and recovery within 100 ms of what the pods' own Ready transitions
// (the test's watch) give; the workload's before/after of its two revisions answers. It returns
// the disruptions the API listed.
func checkDetected(t *testing.T, e *env, rec *recorder, rep *disrupt.WorkloadReport) []report.Disruption {
	t.Helper()
	e.settle()
	q := url.Values{"namespace": {e.ns}, "from": {rep.Created.Add(-time.Minute).UTC().Format(time.RFC3339)}, "to": {"now"}}.Encode()
	var page struct {
		Disruptions []report.Disruption `json:"disruptions"`
	}
	if code := e.get("/v1/disruptions?"+q, &page); code != http.StatusOK {
		t.Fatalf("GET /v1/disruptions: HTTP %d", code)
	}
	var got, want []string
	for i := len(page.Disruptions) - 1; i >= 0; i-- { // oldest first, as the report
		d := page.Disruptions[i]
		var ws []string
		for _, a := range d.Workloads {
			ws = append(ws, a.Workload.String())
		}
		got = append(got, fmt.Sprintf("%s node=%q workloads=%v", d.Kind, d.Node, ws))
	}
	for _, d := range rep.Disruptions {
		want = append(want, fmt.Sprintf("%s node=%q workloads=[%s/Deployment/%s]", d.Kind, d.Node, e.ns, rep.Deployment))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("/v1/disruptions (-want +got):\n%s", diff)
	}
	for i := range page.Disruptions {
		d := page.Disruptions[len(page.Disruptions)-1-i]
		a := d.Workloads[0]
		seconds, recovered := rec.shortfall(d.Start, d.End, a.Desired)
		recovery := recovered.Sub(d.Start).Seconds()
		t.Logf("%s on %q: interruption %.3f s (pods' own transitions %.3f s), fewest Ready %d of %d, recovery %v s (%.3f s), no success %v s, %d replacements",
			d.Kind, d.Node, a.Interruption.Seconds, seconds, a.Interruption.FewestReady, a.Desired, deref64(a.RecoverySeconds), recovery,
			deref64(a.Interruption.NoSuccessSeconds), len(a.Replacements))
		if math.Abs(a.Interruption.Seconds-seconds) > 0.1 {
			t.Errorf("%s: interruption %.3f s, the pods' own Ready transitions give %.3f s", d.Kind, a.Interruption.Seconds, seconds)
		}
		if a.RecoverySeconds == nil || math.Abs(*a.RecoverySeconds-recovery) > 0.1 {
			t.Errorf("%s: recovery %v s, the pods' own Ready transitions give %.3f s", d.Kind, a.RecoverySeconds, recovery)
		}
	}
	var ba struct {
		Comparison struct {
			Arms []struct {
				Arm     string `json:"arm"`
				Verdict string `json:"verdict"`
			} `json:"arms"`
		} `json:"comparison"`
		Note string `json:"note"`
	}
	if code := e.get("/v1/workloads/"+e.ns+"/Deployment/"+rep.Deployment+"/compare?before=1&after=2&"+q, &ba); code != http.StatusOK || len(ba.Comparison.Arms) != 2 || ba.Note == "" {
		t.Errorf("before/after of the rollout: HTTP %d, %+v", code, ba)
	}
	return page.Disruptions
}

func deref64(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
