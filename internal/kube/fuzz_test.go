package kube_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

// maxNote is the longest note the API server accepts on an events.k8s.io/v1 Event.
const maxNote = 1024

func inCount(n int) bool { return n >= 0 && n <= events.MaxCount }

// FuzzParseFailedScheduling: any note parses the same way twice into non-negative counts that
// fit the envelope's bounds, and an event carrying it converts to a valid envelope.
func FuzzParseFailedScheduling(f *testing.F) {
	for _, file := range []string{"events.watch.jsonl", "events.derived.jsonl"} {
		for _, ev := range readWatch[eventsv1.Event](f, file) {
			f.Add(ev.Object.Note)
		}
	}
	for _, note := range []string{
		"no nodes available to schedule pods",
		"0/6 nodes are available: 1 Insufficient nvidia.com/gpu, 5 node(s) didn't match Pod's node affinity/selector. preemption: found a potential placement for pod on node gpu-node-3, preempting 1 victims",
		"0/3 nodes are available: 3 node(s) had untolerated taint {nvidia.com/gpu: present}, that the pod didn't tolerate. pod group preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		"0/99999999999999999999 nodes are available: 1 x.",
		"0/6 nodes are available: 9223372036854775807 Insufficient cpu, 2147483648 x. preemption: found a potential placement for pod on node n, preempting 99999999999 victims",
		"0/6 nodes are available: preemption: ",
	} {
		f.Add(note)
	}
	f.Fuzz(func(t *testing.T, note string) {
		sf := kube.ParseFailedScheduling(note)
		if diff := cmp.Diff(sf, kube.ParseFailedScheduling(note)); diff != "" {
			t.Fatalf("two parses differ:\n%s", diff)
		}
		if sf == nil {
			return
		}
		if !inCount(sf.Available) || !inCount(sf.Total) {
			t.Fatalf("available %d / total %d", sf.Available, sf.Total)
		}
		reasons := sf.Reasons
		if p := sf.Preemption; p != nil {
			switch p.Outcome {
			case events.PreemptionVictimsFound, events.PreemptionNotHelpful, events.PreemptionNoPlacement:
			default:
				t.Fatalf("preemption outcome %q", p.Outcome)
			}
			if !inCount(p.Victims) || p.Note == "" || !strings.Contains(note, p.Note) {
				t.Fatalf("preemption %+v of note %q", p, note)
			}
			reasons = append(reasons, p.Reasons...)
		}
		for _, r := range reasons {
			if !inCount(r.Nodes) {
				t.Fatalf("reason %+v", r)
			}
		}
		if len(note) > maxNote || strings.ContainsRune(note, 0) || !utf8.ValidString(note) {
			// The API server would not have stored the event (JSON carries no invalid UTF-8:
			// it turns into U+FFFD on the wire, before any parse).
			return
		}
		ev := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "p.1", Namespace: "ai-lab", UID: "47a1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d", ResourceVersion: "9"},
			EventTime:  metav1.NewMicroTime(meta.Observed), Reason: events.ReasonFailedScheduling, Note: note, Type: "Warning",
			ReportingController: "default-scheduler", Action: "Scheduling",
			Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "ai-lab", Name: "p", UID: "5a7c9e1b-3d5f-4a6b-9c8d-0e2f4a6b8c0d"},
		}
		env, ok, err := kube.EventEnvelope(ev, meta)
		if err != nil || !ok {
			t.Fatalf("event with note %q: ok %v, %v", note, ok, err)
		}
		if got := env.Payload.(*events.K8sEvent).Scheduling; !cmp.Equal(sf, got, cmpopts.EquateEmpty()) {
			t.Fatalf("envelope's scheduling differs from the parse:\n%s", cmp.Diff(sf, got, cmpopts.EquateEmpty()))
		}
	})
}

// FuzzExperimentOf: any ConfigMap data reads into a definition without panicking; repeats is
// a bounded count, alpha in [0, 1); every error names its key; and the envelope, when within the
// codec's bounds, carries the definition unchanged through the wire.
func FuzzExperimentOf(f *testing.F) {
	var list corev1.ConfigMapList
	readJSON(f, "configmaps.derived.json", &list)
	for _, cm := range list.Items {
		d := cm.Data
		f.Add(d["name"], d["change"], d["fixed"], d["metrics"], d["repeats"], d["baseline"], d["arms"], d["thresholds"], d["margins"], d["alpha"])
	}
	f.Add("day20", "priority", "request: {method: POST, port: 8000, path: /v2/models/model/infer, body: '{\"inputs\":\"hello\"}'}",
		"[pending, start]", "3", "control", "- name: control\n- name: priority", "{p95_latency_ms: 800, error_rate: 0.01}", "{pending: 10%}", "0.1")
	f.Add("", "", "[1, 2]", "{a: 1}", "99999999999", "", "[", "- x", "[a]", "2")
	f.Add("x", "", "&a [*a, *a]", "a: &b {c: *b}", "-1", "", "{", "null", "{0: 1, 0.0: 2}", ".nan")
	f.Add("x", "", "[image, {model: m}]", "[~]", "three", "", "{a: 1}", "", "", "1e-400")
	f.Fuzz(func(t *testing.T, name, change, fixed, metrics, repeats, baseline, arms, thresholds, margins, alpha string) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "day20-experiment", Namespace: "ai-lab", ResourceVersion: "60",
				Labels: map[string]string{events.LabelExperiment: "day20"}},
			Data: map[string]string{"name": name, "change": change, "fixed": fixed, "metrics": metrics,
				"repeats": repeats, "baseline": baseline, "arms": arms, "thresholds": thresholds, "margins": margins, "alpha": alpha},
		}
		exp := kube.ExperimentOf(cm, events.DefaultLabelKeys)
		if exp.Name != "day20" || !inCount(exp.Repeats) || exp.Alpha < 0 || exp.Alpha >= 1 {
			t.Fatalf("name %q, repeats %d, alpha %v", exp.Name, exp.Repeats, exp.Alpha)
		}
		for _, e := range exp.Errors {
			key, _, _ := strings.Cut(e, ":")
			if _, ok := cm.Data[key]; !ok {
				t.Fatalf("error %q names no key", e)
			}
		}
		for _, v := range cm.Data {
			if !utf8.ValidString(v) {
				return // invalid UTF-8 turns into U+FFFD on the wire (the API server's too)
			}
		}
		env, err := kube.ExperimentEnvelope(cm, meta)
		if err != nil {
			return // beyond the codec's bounds (the collector counts a conversion error)
		}
		if diff := cmp.Diff(&exp, env.Payload, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("definition changed on the wire (-read +envelope):\n%s", diff)
		}
	})
}

// A repeats beyond 32 bits is an error of the definition, not a definition the codec refuses
// (which would lose the whole ConfigMap).
func TestExperimentRepeatsBeyond32Bits(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "day20", Namespace: "ai-lab", ResourceVersion: "1"},
		Data: map[string]string{"repeats": "99999999999", "arms": "control, priority"}}
	env, err := kube.ExperimentEnvelope(cm, meta)
	if err != nil {
		t.Fatal(err)
	}
	exp := env.Payload.(*events.Experiment)
	if want := []string{`repeats: want at most 2147483647, got "99999999999"`}; exp.Repeats != 0 || !cmp.Equal(want, exp.Errors) {
		t.Errorf("repeats %d, errors %q; want 0 and %q", exp.Repeats, exp.Errors, want)
	}
}

// A ConfigMap whose values do not all read still reaches the wire whole: the errors name the
// keys, the raw arms ride along, the rest of the definition is as read (an arms value that
// read as neither list nor names once lost the whole ConfigMap to the codec).
func TestExperimentEnvelopeKeepsWhatDoesNotRead(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "day20", Namespace: "ai-lab", ResourceVersion: "1"},
		Data: map[string]string{"arms": "{control: a}", "repeats": "three", "fixed": "[image, model, input]",
			"baseline": "control", "thresholds": "{error_rate: 0.01}", "alpha": "1.5"}}
	env, err := kube.ExperimentEnvelope(cm, meta)
	if err != nil {
		t.Fatal(err)
	}
	exp := env.Payload.(*events.Experiment)
	want := []string{
		`repeats: want a non-negative integer, got "three"`,
		"arms: want a list, got an object",
		`alpha: want a number in (0, 1), got "1.5"`,
	}
	if diff := cmp.Diff(want, exp.Problems()); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if exp.Baseline != "control" || !cmp.Equal(exp.Fixed.List, []string{"image", "model", "input"}) ||
		!cmp.Equal(exp.Thresholds, map[string]any{"error_rate": 0.01}) || string(exp.Extra["arms"]) != `"{control: a}"` {
		t.Errorf("baseline %q, fixed %+v, thresholds %v, arms kept %s", exp.Baseline, exp.Fixed, exp.Thresholds, exp.Extra["arms"])
	}
}
