package kube_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/eventstest"
	"github.com/schedlens/schedlens/internal/kube"
)

// meta is the Meta every test envelope is built with.
var meta = kube.Meta{
	Cluster:  "lab",
	Source:   "collector/lab-0",
	Observed: time.Date(2026, 11, 30, 4, 35, 0, 123456789, time.UTC),
	Scope:    events.Scope{Namespaces: []string{"ai-lab"}, Selector: "schedlens.io/experiment"},
	Labels:   events.DefaultLabelKeys,
}

// observed is meta.Observed as envelopes carry it: to the microsecond.
var observed = ts("2026-11-30T04:35:00.123456Z")

// ts parses an RFC 3339 time for a readable want.
func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func ptr[T any](v T) *T { return &v }

// watchEvent is one line of a recorded watch stream.
type watchEvent[T any] struct {
	Type   string `json:"type"`
	Object T      `json:"object"`
}

func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func readWatch[T any](t testing.TB, name string) []watchEvent[T] {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []watchEvent[T]
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev watchEvent[T]
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// recordedPods are the pods listed at the end of the recording, by name.
func recordedPods(t testing.TB) map[string]*corev1.Pod {
	t.Helper()
	var list corev1.PodList
	readJSON(t, "pods.list.json", &list)
	return podsByName(list.Items)
}

// derivedPods are the pods built for cases the recording lacks (testdata/README.md), by name.
func derivedPods(t testing.TB) map[string]*corev1.Pod {
	t.Helper()
	var list corev1.PodList
	readJSON(t, "pods.derived.json", &list)
	return podsByName(list.Items)
}

func podsByName(items []corev1.Pod) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for i := range items {
		out[items[i].Name] = &items[i]
	}
	return out
}

// nodes are the recorded and the derived nodes, by name.
func nodes(t testing.TB) map[string]*corev1.Node {
	t.Helper()
	out := map[string]*corev1.Node{}
	for _, name := range []string{"nodes.list.json", "nodes.derived.json"} {
		var list corev1.NodeList
		readJSON(t, name, &list)
		for i := range list.Items {
			out[list.Items[i].Name] = &list.Items[i]
		}
	}
	return out
}

// recordedEvents are the events.k8s.io/v1 watch events of the recording and then the derived ones.
func allEvents(t *testing.T) []watchEvent[*eventsv1.Event] {
	t.Helper()
	return append(readWatch[*eventsv1.Event](t, "events.watch.jsonl"), readWatch[*eventsv1.Event](t, "events.derived.jsonl")...)
}

// nodeOf is the node a pod is bound to, nil when it is not bound.
func nodeOf(pod *corev1.Pod, all map[string]*corev1.Node) *corev1.Node {
	return all[pod.Spec.NodeName]
}

// head is an envelope without its data, in readable form.
type head struct {
	ID, Kind, Node         string
	Pod                    *events.PodRef
	Experiment             *events.ExperimentRef
	OccurredAt, ObservedAt string
}

func headOf(env *events.Envelope) head {
	return head{
		ID: env.ID, Kind: string(env.Kind), Node: env.Node, Pod: env.Pod, Experiment: env.Experiment,
		OccurredAt: env.OccurredAt.Format(time.RFC3339Nano), ObservedAt: env.ObservedAt.Format(time.RFC3339Nano),
	}
}

// checkRoundTrip fails unless env encodes and decodes to itself.
func checkRoundTrip(t *testing.T, env *events.Envelope) {
	t.Helper()
	if diff := cmp.Diff(env, eventstest.RoundTrip(t, env)); diff != "" {
		t.Errorf("%s: envelope changed through Encode/Decode (-built +decoded):\n%s", env.ID, diff)
	}
	if env.Cluster != meta.Cluster || env.Source != meta.Source {
		t.Errorf("%s: cluster, source = %q, %q; want %q, %q", env.ID, env.Cluster, env.Source, meta.Cluster, meta.Source)
	}
	if len(env.ID) > events.MaxIDLen {
		t.Errorf("id %q longer than %d bytes", env.ID, events.MaxIDLen)
	}
}
