package collector_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/metricstest"
	"github.com/schedlens/schedlens/internal/natstest"
)

const ns = "ai-lab"

func (c *cluster) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := c.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	return p
}

// updatePod changes a pod as the API server would: a new resourceVersion with every write.
func (c *cluster) updatePod(t *testing.T, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	p := c.pod(t, name).DeepCopy()
	mutate(p)
	p.ResourceVersion = c.nextRV()
	out, err := c.client.CoreV1().Pods(ns).Update(context.Background(), p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update pod %s: %v", name, err)
	}
	return out
}

func (c *cluster) updateEvent(t *testing.T, name string, mutate func(*eventsv1.Event)) {
	t.Helper()
	e, err := c.client.EventsV1().Events(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get event %s: %v", name, err)
	}
	e = e.DeepCopy()
	mutate(e)
	e.ResourceVersion = c.nextRV()
	if _, err := c.client.EventsV1().Events(ns).Update(context.Background(), e, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update event %s: %v", name, err)
	}
}

func (c *cluster) updateNode(t *testing.T, name string, mutate func(*corev1.Node)) {
	t.Helper()
	n, err := c.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", name, err)
	}
	n = n.DeepCopy()
	mutate(n)
	n.ResourceVersion = c.nextRV()
	if _, err := c.client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update node %s: %v", name, err)
	}
}

func setReady(p *corev1.Pod, status corev1.ConditionStatus, at time.Time) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status = status
			p.Status.Conditions[i].LastTransitionTime = metav1.NewTime(at)
		}
	}
}

// byKind counts envelopes per kind.
func byKind(envs []*events.Envelope) map[events.Kind]int {
	out := map[events.Kind]int{}
	for _, e := range envs {
		out[e.Kind]++
	}
	return out
}

func ids(envs []*events.Envelope, kind events.Kind) []string {
	var out []string
	for _, e := range envs {
		if e.Kind == kind {
			out = append(out, e.ID)
		}
	}
	slices.Sort(out)
	return out
}

// checkNoDoubles fails when the stream holds the same fact twice under different ids: the same
// pod state (UID, resourceVersion, deleted), event occurrence (UID, count) or node state.
func checkNoDoubles(t *testing.T, envs []*events.Envelope) {
	t.Helper()
	seen := map[string]string{}
	for _, e := range envs {
		var key string
		switch p := e.Payload.(type) {
		case *events.PodStatus:
			key = fmt.Sprintf("pod %s rv %s deleted %v", e.Pod.UID, p.ResourceVersion, p.Deleted)
		case *events.K8sEvent:
			key = fmt.Sprintf("event %s count %d", p.EventUID, p.Count)
		case *events.NodeStatus:
			key = fmt.Sprintf("node %s rv %s", e.Node, strings.Split(e.ID, "/")[2])
		default:
			continue
		}
		if prev, dup := seen[key]; dup {
			t.Errorf("%s published twice: ids %s and %s", key, prev, e.ID)
		}
		seen[key] = e.ID
	}
}

func inventoriesIn(envs []*events.Envelope) []*events.Envelope {
	var out []*events.Envelope
	for _, e := range envs {
		if e.Kind == events.KindInventory {
			out = append(out, e)
		}
	}
	return out
}

func TestCollectorOnFakeCluster(t *testing.T) {
	srv := natstest.Start(t)
	k, pods := recordedCluster(t)
	r := startCollector(t, k, srv.URL(), testOpts{})

	// The recorded state: 13 pods in scope, 16 events of which 2 are about a pod deleted before
	// the collector started (the preemption victim: nothing in scope says it was ours) and one
	// about a pod outside the selector, 6 nodes, one experiment ConfigMap, one inventory.
	want := map[events.Kind]int{events.KindPodStatus: 13, events.KindK8sEvent: 14, events.KindNodeStatus: 6, events.KindExperiment: 1, events.KindInventory: 1}
	var envs []*events.Envelope
	waitFor(t, 10*time.Second, "the recorded state", func() bool {
		envs = streamEnvelopes(t, srv.URL())
		return cmp.Equal(byKind(envs), want)
	})
	checkRBAC(t, k.client.Actions())
	waitFor(t, 5*time.Second, "events about unknown pods to expire", func() bool {
		return metricstest.Value(t, r.reg, "schedlens_collector_events_unattributed_total") == 3
	})
	var scoped []string
	for _, p := range pods {
		scoped = append(scoped, string(p.UID))
		if id := fmt.Sprintf("pod_status/%s/%s", p.UID, p.ResourceVersion); !slices.Contains(ids(envs, events.KindPodStatus), id) {
			t.Errorf("no snapshot %s", id)
		}
	}
	slices.Sort(scoped)
	inv := inventoriesIn(envs)[0].Payload.(*events.Inventory)
	if diff := cmp.Diff(scoped, slices.Sorted(slices.Values(inv.PodUIDs))); diff != "" {
		t.Errorf("inventory pod UIDs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(events.Scope{Namespaces: []string{ns}, Selector: events.LabelExperiment}, inv.Scope); diff != "" {
		t.Errorf("inventory scope (-want +got):\n%s", diff)
	}
	for _, e := range envs {
		if e.Pod != nil && e.Pod.Name == "unrelated" {
			t.Errorf("published %s about a pod outside the selector", e.ID)
		}
	}

	// Changes while watching.
	var fsName string
	for _, e := range recorded[eventsv1.Event](t, "events.list.json") {
		if strings.HasPrefix(e.Name, "day20-oversized-1.") && e.Reason == events.ReasonFailedScheduling {
			fsName = e.Name
		}
	}
	if fsName == "" {
		t.Fatalf("no FailedScheduling event for the oversized pod in the recording")
	}
	seriesAt := time.Date(2026, 11, 30, 4, 40, 0, 123456000, time.UTC)
	k.updateEvent(t, fsName, func(e *eventsv1.Event) {
		e.Series = &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(seriesAt)}
	})
	k.updateEvent(t, fsName, func(e *eventsv1.Event) { e.Annotations = map[string]string{"touched": "yes"} }) // count unchanged
	k.updateNode(t, "gpu-node-1", func(n *corev1.Node) {
		for i := range n.Status.Conditions {
			n.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(seriesAt)
		}
	})
	k.updateNode(t, "gpu-node-2", func(n *corev1.Node) { n.Spec.Unschedulable = true })
	flapAt := time.Date(2026, 11, 30, 4, 41, 0, 0, time.UTC)
	flapped := k.updatePod(t, "day20-control-1", func(p *corev1.Pod) { setReady(p, corev1.ConditionFalse, flapAt) })
	// An event about a new pod arrives before the pod itself (separate watches).
	newPod := pods[0].DeepCopy()
	newPod.Name, newPod.UID, newPod.ResourceVersion = "day20-control-3", "0f0f0f0f-0000-4000-8000-0000000000aa", k.nextRV()
	newPod.Labels = map[string]string{events.LabelExperiment: "day20", events.LabelArm: "control", events.LabelRun: "2"}
	if _, err := k.client.EventsV1().Events(ns).Create(context.Background(), &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "day20-control-3.1", Namespace: ns, UID: "0f0f0f0f-0000-4000-8000-0000000000ab", ResourceVersion: k.nextRV()},
		EventTime:  metav1.NewMicroTime(flapAt), Reason: "Scheduled", Type: "Normal", Action: "Binding", ReportingController: "default-scheduler",
		Note:      "Successfully assigned ai-lab/day20-control-3 to gpu-node-1",
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: newPod.Name, UID: newPod.UID},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := k.client.CoreV1().Pods(ns).Create(context.Background(), newPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deletedPod := k.pod(t, "day20-control-2")
	if err := k.client.CoreV1().Pods(ns).Delete(context.Background(), deletedPod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	wantNew := []string{
		"k8s_event/" + string(k8sEventUID(t, k, fsName)) + "/3",
		"k8s_event/0f0f0f0f-0000-4000-8000-0000000000ab/1",
		fmt.Sprintf("pod_status/%s/%s", flapped.UID, flapped.ResourceVersion),
		fmt.Sprintf("pod_status/%s/%s", newPod.UID, newPod.ResourceVersion),
		fmt.Sprintf("pod_status/%s/%s/deleted", deletedPod.UID, deletedPod.ResourceVersion),
	}
	before := len(envs)
	waitFor(t, 10*time.Second, "the changes", func() bool {
		envs = streamEnvelopes(t, srv.URL())
		return containsIDs(envs, wantNew) && byKind(envs)[events.KindNodeStatus] == 8
	})
	time.Sleep(200 * time.Millisecond) // anything published in excess would show now
	envs = streamEnvelopes(t, srv.URL())
	if got := len(envs) - before; got != len(wantNew)+2 {
		t.Errorf("%d new envelopes, want %d (the changes and a node_status per node write, nothing for the event touch):\n%v", got, len(wantNew)+2, idsOf(envs[before:]))
	}
	for _, e := range envs {
		if e.ID == wantNew[0] && !e.OccurredAt.Equal(seriesAt) {
			t.Errorf("series occurrence 3 occurred_at %v, want the series' last observed time %v", e.OccurredAt, seriesAt)
		}
	}

	// A relist after the watch broke: one pod was deleted and another changed meanwhile.
	gone := k.pod(t, "day20-affinity-1")
	changed := k.pod(t, "day20-affinity-2").DeepCopy()
	setReady(changed, corev1.ConditionFalse, flapAt)
	changed.ResourceVersion = k.nextRV()
	// While the relist is held the fake client is locked: change the tracker directly.
	podsGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	k.relist(t, func() {
		if err := k.client.Tracker().Delete(podsGVR, ns, gone.Name); err != nil {
			t.Fatal(err)
		}
		if err := k.client.Tracker().Update(podsGVR, changed, ns); err != nil {
			t.Fatal(err)
		}
	})
	changedID := fmt.Sprintf("pod_status/%s/%s", changed.UID, changed.ResourceVersion)
	waitFor(t, 10*time.Second, "the relisted state and an inventory without the deleted pod", func() bool {
		envs = streamEnvelopes(t, srv.URL())
		return containsIDs(envs, []string{changedID}) && len(inventoriesIn(envs)) == 2
	})
	for _, e := range envs {
		if e.Kind == events.KindPodStatus && e.Pod.UID == string(gone.UID) && e.Payload.(*events.PodStatus).Deleted {
			t.Errorf("published %s: the deletion was not seen, only its absence", e.ID)
		}
	}
	tl, _ := align.Build(string(gone.UID), envs, events.DefaultLabelKeys)
	if tl.EndedReason == nil || *tl.EndedReason != align.EndDeletedUnobserved {
		t.Errorf("timeline of the pod deleted during the relist: ended_reason %v, want %s", tl.EndedReason, align.EndDeletedUnobserved)
	}
	if tl, _ := align.Build(string(changed.UID), envs, events.DefaultLabelKeys); tl.EndedReason != nil {
		t.Errorf("the pod changed during the relist ended (%s); it is alive", *tl.EndedReason)
	}
	checkNoDoubles(t, envs)

	// Restart, with a second collector beside it: the same state publishes the same ids, so
	// the stream gains only their two inventories.
	r.stop(t)
	before = len(envs)
	a := startCollector(t, k, srv.URL(), testOpts{})
	b := startCollector(t, k, srv.URL(), testOpts{})
	for _, c := range []*running{a, b} {
		waitFor(t, 10*time.Second, "the restarted collector to publish its state", func() bool { return c.pub.Buffered() == 0 })
	}
	time.Sleep(200 * time.Millisecond)
	envs = streamEnvelopes(t, srv.URL())
	if got := idsOf(envs[before:]); len(got) != 2 || len(inventoriesIn(envs[before:])) != 2 {
		t.Errorf("after a restart with two collectors the stream gained %v; want only their 2 inventories", got)
	}
	for _, c := range []*running{a, b} {
		if dups := metricstest.Value(t, c.reg, "schedlens_collector_duplicates_total"); dups < 13+6 {
			t.Errorf("restarted collector: %v duplicates acknowledged, want the whole state re-published (≥ 19)", dups)
		}
	}
	checkNoDoubles(t, envs)
}

func k8sEventUID(t *testing.T, k *cluster, name string) string {
	t.Helper()
	e, err := k.client.EventsV1().Events(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(e.UID)
}

func containsIDs(envs []*events.Envelope, want []string) bool {
	have := map[string]bool{}
	for _, e := range envs {
		have[e.ID] = true
	}
	for _, id := range want {
		if !have[id] {
			return false
		}
	}
	return true
}

func idsOf(envs []*events.Envelope) []string {
	out := make([]string, 0, len(envs))
	for _, e := range envs {
		out = append(out, e.ID)
	}
	return out
}
