package events_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
)

func TestSubject(t *testing.T) {
	want := map[events.Kind]string{
		events.KindK8sEvent:   "schedlens.v1.lab.k8s_event",
		events.KindPodStatus:  "schedlens.v1.lab.pod_status",
		events.KindNodeStatus: "schedlens.v1.lab.node_status",
		events.KindGPUSample:  "schedlens.v1.lab.gpu_sample",
		events.KindRequest:    "schedlens.v1.lab.request",
		events.KindExperiment: "schedlens.v1.lab.experiment",
		events.KindInventory:  "schedlens.v1.lab.inventory",
		events.KindHeartbeat:  "schedlens.v1.lab.heartbeat",

		events.KindWorkloadStatus: "schedlens.v1.lab.workload_status",
		events.KindLabelRegistry:  "schedlens.v1.lab.label_registry",
	}
	got := map[events.Kind]string{}
	for _, k := range events.Kinds {
		got[k] = events.Subject("lab", k)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Subject mismatch (-want +got):\n%s", diff)
	}

	for _, k := range events.Kinds {
		t.Run(string(k), func(t *testing.T) {
			s := events.Subject("lab", k)
			if !strings.HasPrefix(s, strings.TrimSuffix(events.StreamSubjects, ">")) {
				t.Errorf("subject %q is outside the stream's %q", s, events.StreamSubjects)
			}
			cluster, kind, err := events.ParseSubject(s)
			if err != nil {
				t.Fatalf("ParseSubject(%q): %v", s, err)
			}
			if cluster != "lab" || kind != k {
				t.Errorf("ParseSubject(%q) = %q, %q; want %q, %q", s, cluster, kind, "lab", k)
			}
		})
	}
}

func TestSubjectOf(t *testing.T) {
	env, err := events.Decode([]byte(preemptedJSON))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got, want := events.SubjectOf(env), "schedlens.v1.lab.k8s_event"; got != want {
		t.Errorf("SubjectOf = %q, want %q", got, want)
	}
}

func TestParseSubject(t *testing.T) {
	type parsed struct {
		Cluster string
		Kind    events.Kind
	}
	good := []struct {
		subject string
		want    parsed
	}{
		{"schedlens.v1.lab.k8s_event", parsed{"lab", events.KindK8sEvent}},
		{"schedlens.v1.lab.pod_status", parsed{"lab", events.KindPodStatus}},
		{"schedlens.v1.gpu-lab-eu-west-1.gpu_sample", parsed{"gpu-lab-eu-west-1", events.KindGPUSample}},
		{"schedlens.v1.kind_cluster.inventory", parsed{"kind_cluster", events.KindInventory}},
	}
	for _, tt := range good {
		t.Run(tt.subject, func(t *testing.T) {
			cluster, kind, err := events.ParseSubject(tt.subject)
			if err != nil {
				t.Fatalf("ParseSubject: %v", err)
			}
			if diff := cmp.Diff(tt.want, parsed{cluster, kind}); diff != "" {
				t.Errorf("ParseSubject mismatch (-want +got):\n%s", diff)
			}
		})
	}

	bad := []struct {
		name, subject string
	}{
		{"empty", ""},
		{"prefix only", "schedlens.v1"},
		{"prefix and dot", "schedlens.v1."},
		{"no kind", "schedlens.v1.lab"},
		{"empty kind", "schedlens.v1.lab."},
		{"empty cluster", "schedlens.v1..k8s_event"},
		{"unknown kind", "schedlens.v1.lab.k8s_events"},
		{"kind in upper case", "schedlens.v1.lab.POD_STATUS"},
		{"cluster with a dot", "schedlens.v1.lab.eu.k8s_event"},
		{"extra token", "schedlens.v1.lab.k8s_event.extra"},
		{"other version", "schedlens.v2.lab.k8s_event"},
		{"other root", "kube.v1.lab.k8s_event"},
		{"prefix without separator", "schedlens.v1lab.k8s_event"},
		{"stream wildcard", events.StreamSubjects},
		{"kind wildcard", "schedlens.v1.lab.*"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			cluster, kind, err := events.ParseSubject(tt.subject)
			if err == nil {
				t.Fatalf("ParseSubject(%q) = %q, %q; want an error", tt.subject, cluster, kind)
			}
			if cluster != "" || kind != "" {
				t.Errorf("ParseSubject(%q) returned %q, %q with its error", tt.subject, cluster, kind)
			}
		})
	}
}

func TestCheckSubject(t *testing.T) {
	env, err := events.Decode([]byte(scheduledJSON)) // cluster lab, kind k8s_event
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if err := events.CheckSubject("schedlens.v1.lab.k8s_event", env); err != nil {
		t.Errorf("CheckSubject on its own subject: %v", err)
	}

	tests := []struct {
		name, subject string
		field         string // ValidationError.Field
	}{
		{"other kind", "schedlens.v1.lab.pod_status", "kind"},
		{"other cluster", "schedlens.v1.staging.k8s_event", "cluster"},
		{"other cluster and kind", "schedlens.v1.staging.pod_status", "cluster"},
		{"not a schedlens subject", "ai-lab.events", ""},
		{"unknown kind", "schedlens.v1.lab.k8s_events", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := events.CheckSubject(tt.subject, env)
			if err == nil {
				t.Fatalf("CheckSubject(%q) = nil, want an error", tt.subject)
			}
			invalidAt(t, err, tt.field)
			if !strings.Contains(err.Error(), tt.subject) {
				t.Errorf("error %q does not name the subject %q", err, tt.subject)
			}
		})
	}
}
