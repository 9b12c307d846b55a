package events_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
)

// received is the decode clock of the bounds tests: a few minutes after the fixtures' events.
var received = at("2026-11-30T05:00:00Z")

func clock() time.Time { return received }

func quote(s string) string { return strconv.Quote(s) }

func list(n int, item string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
}

func object(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":"v"`, i)
	}
	b.WriteString("}")
	return b.String()
}

func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth) + `1` + strings.Repeat(`}`, depth)
}

func TestDecodeOutOfBounds(t *testing.T) {
	long := func(n int) string { return quote(strings.Repeat("x", n)) }
	tests := []struct {
		name   string
		msg    []byte
		field  string
		reason string // a part of ValidationError.Reason
	}{
		// Times: the envelope's within an hour ahead of the receive time, none before 2000.
		{"observed_at far in the future", mutate(scheduledJSON, edit{"observed_at", `"2126-11-30T04:32:22Z"`}), "observed_at", "ahead of the receive time"},
		{"observed_at 61 minutes ahead", mutate(scheduledJSON, edit{"observed_at", `"2026-11-30T06:01:00Z"`}), "observed_at", "more than 1h0m0s ahead"},
		{"occurred_at 1999", mutate(scheduledJSON, edit{"occurred_at", `"1999-12-31T23:59:59.999999Z"`}), "occurred_at", "before 2000-01-01"},
		{"occurred_at the Unix epoch", mutate(scheduledJSON, edit{"occurred_at", `"1970-01-01T00:00:00Z"`}), "occurred_at", "before 2000-01-01"},
		{"occurred_at year 9999", mutate(requestJSON, edit{"occurred_at", `"9999-12-31T23:59:59Z"`}), "occurred_at", "ahead"},
		// Times in data: a day ahead at most.
		{"condition 25 hours ahead", mutate(podStatusJSON, edit{"data.conditions",
			`[{"type":"PodScheduled","status":"True","last_transition_time":"2026-12-01T06:00:00Z"}]`}), "data.conditions[0].last_transition_time", "more than 24h0m0s ahead"},
		{"creation_timestamp 1970", mutate(podStatusJSON, edit{"data.creation_timestamp", `"1970-01-01T00:00:01Z"`}), "data.creation_timestamp", "before 2000-01-01"},
		{"heartbeat since far ahead", mutate(heartbeatJSON, edit{"data.since", `"2999-01-01T00:00:00Z"`}), "data.since", "ahead"},
		{"started_at before 2000", mutate(podStatusJSON, edit{"data.containers",
			`[{"name":"vllm","ready":true,"restart_count":0,"started_at":"1999-01-01T00:00:00Z"}]`}), "data.containers[0].started_at", "before"},

		// Names of the envelope.
		{"source of 254 bytes", mutate(scheduledJSON, edit{"source", long(254)}), "source", "longer than 253 bytes"},
		{"cluster of 254 bytes", mutate(scheduledJSON, edit{"cluster", long(254)}), "cluster", "longer than 253"},
		{"node of 254 bytes", mutate(scheduledJSON, edit{"node", long(254)}), "node", "longer than 253"},
		{"pod.name of 254 bytes", mutate(scheduledJSON, edit{"pod.name", long(254)}), "pod.name", "longer than 253"},
		{"pod.namespace of 254 bytes", mutate(scheduledJSON, edit{"pod.namespace", long(254)}), "pod.namespace", "longer than 253"},
		{"experiment.arm of 254 bytes", mutate(requestJSON, edit{"experiment.arm", long(254)}), "experiment.arm", "longer than 253"},

		// Strings, lists and nesting in data.
		{"note over 64 KiB", mutate(scheduledJSON, edit{"data.note", long(events.MaxStringLen + 1)}), "data.note", "longer than 65536 bytes"},
		{"request error over 64 KiB", mutate(requestJSON, edit{"data.error", long(events.MaxStringLen + 1)}), "data.error", "longer than"},
		{"label value over 64 KiB", mutate(podStatusJSON, edit{"data.labels", `{"app":` + long(events.MaxStringLen+1) + `}`}), `data.labels["app"]`, "longer than"},
		{"label key over 64 KiB", mutate(podStatusJSON, edit{"data.labels", `{` + long(events.MaxStringLen+1) + `:"v"}`}), `data.labels["` + strings.Repeat("x", 64) + `…"]`, "key longer than"},
		{"5000 labels", mutate(podStatusJSON, edit{"data.labels", object(5000)}), "data.labels", "more than 4096 entries"},
		{"5000 conditions", mutate(podStatusJSON, edit{"data.conditions", list(5000, `{"type":"X","status":"True"}`)}), "data.conditions", "more than 4096 items"},
		{"100001 inventory UIDs", mutate(inventoryJSON, edit{"data.pod_uids", list(100_001, `"b1946ac9-2f0e-4d3b-8a3c-6f1d2e7a9c41"`)}), "data.pod_uids", "more than 100000 items"},
		{"experiment fixed nested 40 deep", mutate(experimentJSON, edit{"data.fixed", nested(40)}), "data.fixed" + strings.Repeat(`["a"]`, 32), "nested deeper than 32"},
		{"experiment fixed prose over 64 KiB", mutate(experimentJSON, edit{"data.fixed", long(events.MaxStringLen + 1)}), "data.fixed", "longer than"},
		{"experiment unknown key over 64 KiB", mutate(experimentJSON, edit{"data.fixed", `{"notes":` + long(events.MaxStringLen+1) + `}`}), `data.fixed["notes"]`, "longer than"},
		{"experiment 5000 metric words", mutate(experimentJSON, edit{"data.metrics", list(5000, `"latency"`)}), "data.metrics", "more than 4096 items"},
		{"experiment arm name over 64 KiB", mutate(experimentJSON, edit{"data.arms", `["control",` + long(events.MaxStringLen+1) + `]`}), "data.arms[1]", "longer than"},

		// Integers: non-negative, within 32 bits (bytes_in and bytes_out: 64).
		{"count 2^31", mutate(failedSchedulingJSON, edit{"data.count", `2147483648`}), "data.count", "larger than 2147483647"},
		{"count 2^63-1", mutate(failedSchedulingJSON, edit{"data.count", `9223372036854775807`}), "data.count", "larger than"},
		{"count beyond 64 bits", mutate(failedSchedulingJSON, edit{"data.count", `18446744073709551616`}), "data.count", "want int"},
		{"restart_count 2^31", mutate(podStatusJSON, edit{"data.containers", `[{"name":"vllm","ready":true,"restart_count":2147483648}]`}), "data.containers[0].restart_count", "larger than"},
		{"request status negative", mutate(requestJSON, edit{"data.status", `-200`}), "data.status", "negative"},
		{"request bytes_in negative", mutate(requestJSON, edit{"data.bytes_in", `-1`}), "data.bytes_in", "negative"},
		{"scheduling reason nodes negative", mutate(failedSchedulingJSON, edit{"data.scheduling", `{"available":0,"total":6,"reasons":[{"reason":"x","nodes":-6}]}`}), "data.scheduling.reasons[0].nodes", "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := events.Decode(tt.msg, events.WithClock(clock))
			if err == nil {
				t.Fatalf("Decode succeeded (%s), want an error at %q", env.ID, tt.field)
			}
			var ve *events.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, events.ErrInvalid) {
				t.Fatalf("error %T %v is not an invalid envelope", err, err)
			}
			if ve.Field != tt.field || !strings.Contains(ve.Reason, tt.reason) {
				t.Errorf("got %q: %q, want %q: …%s…", ve.Field, ve.Reason, tt.field, tt.reason)
			}
		})
	}
}

// The bounds themselves are inside: the last value allowed of each is accepted.
func TestDecodeAtTheBounds(t *testing.T) {
	long := func(n int) string { return quote(strings.Repeat("x", n)) }
	tests := []struct {
		name string
		msg  []byte
	}{
		{"observed_at exactly an hour ahead", mutate(scheduledJSON, edit{"observed_at", `"2026-11-30T06:00:00Z"`})},
		{"occurred_at 2000-01-01", mutate(scheduledJSON, edit{"occurred_at", `"2000-01-01T00:00:00Z"`})},
		{"deletion_timestamp 24 hours ahead", mutate(podStatusJSON, edit{"data.deletion_timestamp", `"2026-12-01T05:00:00Z"`})},
		{"source of 253 bytes", mutate(scheduledJSON, edit{"source", long(253)})},
		{"note of 64 KiB", mutate(scheduledJSON, edit{"data.note", long(events.MaxStringLen)})},
		{"4096 labels", mutate(podStatusJSON, edit{"data.labels", object(4096)})},
		{"experiment fixed nested 31 deep", mutate(experimentJSON, edit{"data.fixed", nested(31)})},
		{"count 2^31-1", mutate(failedSchedulingJSON, edit{"data.count", `2147483647`})},
		// A repeats beyond 32 bits is a misfit of the definition, kept (TestExperimentMisfitsThroughDecode).
		{"experiment repeats 2^31-1", mutate(experimentJSON, edit{"data.repeats", `2147483647`})},
		{"bytes_in beyond 32 bits", mutate(requestJSON, edit{"data.bytes_in", `9223372036854775807`})},
		{"negative priority", mutate(podStatusJSON, edit{"data.priority", `-2147483648`})},
		{"negative exit code", mutate(podStatusJSON, edit{"data.containers", `[{"name":"vllm","ready":false,"restart_count":0,"exit_code":-1}]`})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := events.Decode(tt.msg, events.WithClock(clock)); err != nil {
				t.Errorf("Decode: %v", err)
			}
		})
	}
}

// A message beyond MaxEnvelopeBytes is refused before it is parsed.
func TestDecodeRefusesAHugeMessage(t *testing.T) {
	msg := mutate(scheduledJSON, edit{"data.padding", quote(strings.Repeat("x", events.MaxEnvelopeBytes))})
	_, err := events.Decode(msg, events.WithClock(clock))
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Field != "" || !strings.Contains(ve.Reason, "larger than 8388608 bytes") {
		t.Errorf("err = %v, want the message refused as too large", err)
	}
}

// Without WithClock the bounds are measured from the wall clock: a recorded event is fine, one
// a century ahead is not.
func TestDecodeUsesTheWallClock(t *testing.T) {
	if _, err := events.Decode([]byte(scheduledJSON)); err != nil {
		t.Errorf("Decode of a recorded event: %v", err)
	}
	future := time.Now().Add(100 * 365 * 24 * time.Hour).UTC().Format(time.RFC3339)
	_, err := events.Decode(mutate(scheduledJSON, edit{"observed_at", quote(future)}))
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Field != "observed_at" {
		t.Errorf("err = %v, want observed_at refused", err)
	}
}

// Pod UIDs are lower-cased wherever an envelope carries one, so one pod is one row.
func TestDecodeLowerCasesUIDs(t *testing.T) {
	upper := strings.ToUpper
	uid := "5a7c9e1b-3d5f-4a6b-9c8d-0e2f4a6b8c0d"
	fs := mutate(failedSchedulingJSON, edit{"pod.uid", quote(upper(uid))}, edit{"data.related.uid", quote(upper(uid))})
	env, err := events.Decode(fs, events.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	got := []string{env.Pod.UID, env.PodUID(), env.Payload.(*events.K8sEvent).Related.UID}
	if diff := cmp.Diff([]string{uid, uid, uid}, got); diff != "" {
		t.Errorf("k8s_event UIDs (-want +got):\n%s", diff)
	}

	inv := mutate(inventoryJSON, edit{"data.pod_uids", `["B1946AC9-2F0E-4D3B-8A3C-6F1D2E7A9C41","6ee92199-B806-4aed-80ba-6687a24a01b2"]`})
	env, err = events.Decode(inv, events.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"b1946ac9-2f0e-4d3b-8a3c-6f1d2e7a9c41", "6ee92199-b806-4aed-80ba-6687a24a01b2"}
	if diff := cmp.Diff(want, env.Payload.(*events.Inventory).PodUIDs); diff != "" {
		t.Errorf("inventory UIDs (-want +got):\n%s", diff)
	}
}
