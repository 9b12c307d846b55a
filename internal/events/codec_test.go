package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/schedlens/schedlens/internal/events"
)

// Valid envelopes of every kind, as the collector, the prober and the experiment watcher of the
// lab send them (scheduler notes as kube-scheduler writes them, see LAB.md).
var (
	scheduledJSON        = fixture("k8s_event_scheduled.json")
	preemptedJSON        = fixture("k8s_event_preempted.json")
	failedSchedulingJSON = fixture("k8s_event_failed_scheduling.json")
	podStatusJSON        = fixture("pod_status_running.json")
	nodeStatusJSON       = fixture("node_status.json")
	gpuSampleJSON        = fixture("gpu_sample.json")
	requestJSON          = fixture("request.json")
	experimentJSON       = fixture("experiment.json")
	inventoryJSON        = fixture("inventory.json")
	heartbeatJSON        = fixture("heartbeat.json")
	workloadJSON         = fixture("workload_status.json")
	labelRegistryJSON    = fixture("label_registry.json")
)

// fixture reads a message from testdata.
func fixture(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// at parses an RFC 3339 time for a want.
func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func ptr[T any](v T) *T { return &v }

var (
	control1   = &events.PodRef{Namespace: "ai-lab", Name: "day20-control-1", UID: "b1946ac9-2f0e-4d3b-8a3c-6f1d2e7a9c41"}
	treatment2 = &events.PodRef{Namespace: "ai-lab", Name: "day20-treatment-2", UID: "5a7c9e1b-3d5f-4a6b-9c8d-0e2f4a6b8c0d"}
	batchLow0  = &events.PodRef{Namespace: "ai-lab", Name: "batch-low-0", UID: "0c1f3d5e-7a9b-4c2d-8e6f-1a3b5c7d9e0f"}
)

// ignoreBytes leaves Data and Raw out of envelope comparisons; tests check them on their own.
var ignoreBytes = cmpopts.IgnoreFields(events.Envelope{}, "Data", "Raw")

// scheduledData is the data of scheduledJSON.
func scheduledData() *events.K8sEvent {
	return &events.K8sEvent{
		Reason:              events.ReasonScheduled,
		Type:                "Normal",
		Note:                "Successfully assigned ai-lab/day20-control-1 to gpu-node-1",
		ReportingController: "default-scheduler",
		Action:              "Binding",
		EventUID:            "3c5b1c7e-8f0a-4f7e-9a55-2b1f0d0c9e11",
		Count:               1,
	}
}

// validCase is a fixture message and the envelope it decodes to.
type validCase struct {
	name string
	msg  string
	want *events.Envelope
}

// validCases has a fixture of every kind (TestDecodeValid checks that each kind has one).
func validCases() []validCase {
	return []validCase{
		{
			name: "k8s_event Scheduled",
			msg:  scheduledJSON,
			want: &events.Envelope{
				V: 1, ID: "k8s_event:3c5b1c7e-8f0a-4f7e-9a55-2b1f0d0c9e11:1", Kind: events.KindK8sEvent,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:32:22.205208Z"), ObservedAt: at("2026-11-30T04:32:22.231977Z"),
				Pod: control1, Node: "gpu-node-1",
				Payload: scheduledData(),
			},
		},
		{
			name: "k8s_event Preempted",
			msg:  preemptedJSON,
			want: &events.Envelope{
				V: 1, ID: "k8s_event:9d2e4f60-1b3c-4d5e-8f7a-6b5c4d3e2f10:1", Kind: events.KindK8sEvent,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:41:07.51833Z"), ObservedAt: at("2026-11-30T04:41:07.540112Z"),
				Pod: batchLow0, Node: "gpu-node-3",
				Payload: &events.K8sEvent{
					Reason:              events.ReasonPreempted,
					Type:                "Normal",
					Note:                "Preempted by pod 6ee92199-b806-4aed-80ba-6687a24a01b2 on node gpu-node-3",
					ReportingController: "default-scheduler",
					Action:              "Preempting",
					EventUID:            "9d2e4f60-1b3c-4d5e-8f7a-6b5c4d3e2f10",
					Count:               1,
				},
			},
		},
		{
			name: "k8s_event FailedScheduling",
			msg:  failedSchedulingJSON,
			want: &events.Envelope{
				V: 1, ID: "k8s_event:47a1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d:4", Kind: events.KindK8sEvent,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:33:10.000412Z"), ObservedAt: at("2026-11-30T04:33:10.01495Z"),
				Pod: treatment2,
				Payload: &events.K8sEvent{
					Reason:              events.ReasonFailedScheduling,
					Type:                "Warning",
					Note:                "0/6 nodes are available: 6 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.",
					ReportingController: "default-scheduler",
					Action:              "Scheduling",
					EventUID:            "47a1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d",
					Count:               4,
					Related:             treatment2,
				},
			},
		},
		{
			name: "pod_status Running, not yet ready",
			msg:  podStatusJSON,
			want: &events.Envelope{
				V: 1, ID: "pod_status:b1946ac9-2f0e-4d3b-8a3c-6f1d2e7a9c41:48213", Kind: events.KindPodStatus,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:32:31.402117Z"), ObservedAt: at("2026-11-30T04:32:31.402117Z"),
				Pod: control1, Node: "gpu-node-1",
				Payload: &events.PodStatus{
					Phase:    events.PhaseRunning,
					NodeName: "gpu-node-1",
					PodIP:    "10.244.1.17",
					HostIP:   "172.18.0.3",
					Labels: map[string]string{
						"app":                     "vllm",
						"schedlens.io/experiment": "day20",
						"schedlens.io/arm":        "control",
						"schedlens.io/run":        "1",
					},
					PriorityClass: "inference-high",
					Priority:      ptr[int32](100000),
					Resources: &events.Resources{
						Requests: map[string]string{"cpu": "4", "memory": "24Gi", "nvidia.com/gpu": "1"},
						Limits:   map[string]string{"nvidia.com/gpu": "1"},
					},
					Conditions: []events.Condition{
						{Type: "PodScheduled", Status: "True", LastTransitionTime: ptr(at("2026-11-30T04:32:22Z"))},
						{Type: "Initialized", Status: "True", LastTransitionTime: ptr(at("2026-11-30T04:32:23Z"))},
						{Type: "ContainersReady", Status: "False", Reason: "ContainersNotReady", LastTransitionTime: ptr(at("2026-11-30T04:32:23Z"))},
						{Type: "Ready", Status: "False", Reason: "ContainersNotReady", LastTransitionTime: ptr(at("2026-11-30T04:32:23Z"))},
					},
					Containers: []events.ContainerStatus{
						{Name: "vllm", State: "running", StartedAt: ptr(at("2026-11-30T04:32:31Z"))},
					},
					CreationTimestamp: ptr(at("2026-11-30T04:32:21Z")),
					Owner:             &events.Owner{Kind: "ReplicaSet", Name: "day20-control-6d9f7c8b5"},
					ResourceVersion:   "48213",
				},
			},
		},
		{
			name: "node_status time-sliced A100 node",
			msg:  nodeStatusJSON,
			want: &events.Envelope{
				V: 1, ID: "node_status:gpu-node-1:47990", Kind: events.KindNodeStatus,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:30:02.118004Z"), ObservedAt: at("2026-11-30T04:30:02.118004Z"),
				Node: "gpu-node-1",
				Payload: &events.NodeStatus{
					Labels: map[string]string{
						"nvidia.com/gpu.product":          "NVIDIA-A100-SXM4-40GB-SHARED",
						"nvidia.com/gpu.replicas":         "4",
						"nvidia.com/gpu.sharing-strategy": "time-slicing",
					},
					Taints:      []events.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: "NoSchedule"}},
					Ready:       true,
					Allocatable: map[string]string{"cpu": "15", "memory": "120Gi", "nvidia.com/gpu": "16"},
					Capacity:    map[string]string{"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "16"},
				},
			},
		},
		{
			name: "gpu_sample from dcgm-exporter",
			msg:  gpuSampleJSON,
			want: &events.Envelope{
				V: 1, ID: "gpu_sample:gpu-node-1:GPU-5f8c0c1e-7d0b-2a8e-93f1-4b6e1c2d3a4f:2026-11-30T04:32:45Z", Kind: events.KindGPUSample,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:32:45Z"), ObservedAt: at("2026-11-30T04:32:46.003311Z"),
				Pod: control1, Node: "gpu-node-1",
				Payload: &events.GPUSample{
					GPU:   "0",
					UUID:  "GPU-5f8c0c1e-7d0b-2a8e-93f1-4b6e1c2d3a4f",
					Model: "NVIDIA A100-SXM4-40GB",
					Metrics: map[string]float64{
						"DCGM_FI_DEV_GPU_UTIL":          87,
						"DCGM_FI_DEV_FB_USED":           30412,
						"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.8123,
					},
				},
			},
		},
		{
			name: "request served by a pod",
			msg:  requestJSON,
			want: &events.Envelope{
				V: 1, ID: "request:prober-day20:1842", Kind: events.KindRequest,
				Cluster: "lab", Source: "prober/day20",
				OccurredAt: at("2026-11-30T04:33:02.770051Z"), ObservedAt: at("2026-11-30T04:33:03.18279Z"),
				Pod: control1, Node: "gpu-node-1",
				Experiment: &events.ExperimentRef{Name: "day20", Arm: "control", Run: "1"},
				Payload: &events.Request{
					Target:    "http://10.244.1.17:8000/v1/completions",
					Status:    200,
					OK:        true,
					LatencyMS: 412.7,
					BytesOut:  182,
					BytesIn:   2048,
				},
			},
		},
		{
			name: "experiment definition",
			msg:  experimentJSON,
			want: &events.Envelope{
				V: 1, ID: "experiment:ai-lab/day20:47102", Kind: events.KindExperiment,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:20:00Z"), ObservedAt: at("2026-11-30T04:20:00.412Z"),
				Experiment: &events.ExperimentRef{Name: "day20"},
				Payload: &events.Experiment{
					Name:       "day20",
					Change:     "priority class inference-high with preemption",
					Fixed:      &events.Workload{Model: "llama-3-8b", Extra: map[string]json.RawMessage{"gpu": json.RawMessage(`"A100 time-sliced x4"`)}},
					Metrics:    &events.Words{List: []string{"pending", "time_to_first_success", "preemptions"}},
					Repeats:    3,
					Baseline:   "control",
					Arms:       []events.ArmSpec{{Name: "control", Bare: true}, {Name: "treatment", Bare: true}},
					Thresholds: map[string]any{"pending_p50_ms": float64(500)},
				},
			},
		},
		{
			name: "inventory after a full list",
			msg:  inventoryJSON,
			want: &events.Envelope{
				V: 1, ID: "inventory:collector/lab-0:2026-11-30T04:35:00Z", Kind: events.KindInventory,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:35:00Z"), ObservedAt: at("2026-11-30T04:35:00.208514Z"),
				Payload: &events.Inventory{
					Scope:   events.Scope{Namespaces: []string{"ai-lab"}, Selector: "schedlens.io/experiment"},
					PodUIDs: []string{"b1946ac9-2f0e-4d3b-8a3c-6f1d2e7a9c41", "6ee92199-b806-4aed-80ba-6687a24a01b2"},
				},
			},
		},
		{
			name: "heartbeat of a live watch",
			msg:  heartbeatJSON,
			want: &events.Envelope{
				V: 1, ID: "heartbeat/lab/collector/lab-0/5f1c0a9e/1796013305000000000", Kind: events.KindHeartbeat,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:35:05Z"), ObservedAt: at("2026-11-30T04:35:05Z"),
				Payload: &events.Heartbeat{
					Scope: events.Scope{Namespaces: []string{"ai-lab"}, Selector: "schedlens.io/experiment"},
					Since: at("2026-11-30T04:35:00Z"),
				},
			},
		},
		{
			name: "workload_status of a Deployment's ReplicaSet",
			msg:  workloadJSON,
			want: &events.Envelope{
				V: 1, ID: "workload_status/ReplicaSet/prod/infer-5d4c7b9f8/4711", Kind: events.KindWorkloadStatus,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:35:05.000125Z"), ObservedAt: at("2026-11-30T04:35:05.000125Z"),
				Payload: &events.WorkloadStatus{
					Kind: "ReplicaSet", Namespace: "prod", Name: "infer-5d4c7b9f8", UID: "6f3c2a10-8e4b-4d7a-9c1e-2b5d8f0a7e33",
					Replicas: ptr(int32(3)), Revision: "2", TemplateHash: "5d4c7b9f8", Owner: &events.Owner{Kind: "Deployment", Name: "infer"},
					ReadyReplicas: 2, AvailableReplicas: 2, ObservedGen: 1, CreationTimestamp: ptr(at("2026-11-30T04:30:00Z")), ResourceVersion: "4711",
				},
			},
		},
		{
			name: "label_registry with an entry it could not read",
			msg:  labelRegistryJSON,
			want: &events.Envelope{
				V: 1, ID: "label_registry/platform/node-label-registry/5120", Kind: events.KindLabelRegistry,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:35:06Z"), ObservedAt: at("2026-11-30T04:35:06Z"),
				Payload: &events.LabelRegistry{Namespace: "platform", Name: "node-label-registry",
					Labels: []events.LabelDoc{
						{Key: "gpu-model", Source: "node-pool provisioner", Owner: "platform-infra", Values: []string{"H100", "A100"}, Use: "preference", Registry: "platform/node-label-registry"},
						{Key: "nvidia.com/gpu.product", Source: "GPU feature discovery", Owner: "platform-gpu", Meaning: "the GPU model", Use: "hard", Registry: "platform/node-label-registry"},
					},
					Errors: []string{"label registry platform/node-label-registry: accelerator: no owner"}},
			},
		},
	}
}

func TestDecodeValid(t *testing.T) {
	kinds := map[events.Kind]bool{}
	for _, tt := range validCases() {
		kinds[tt.want.Kind] = true
		t.Run(tt.name, func(t *testing.T) {
			// A JSONL line keeps its newline; Decode must not mind it.
			got, err := events.Decode([]byte(tt.msg + "\n"))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, ignoreBytes); diff != "" {
				t.Errorf("Decode mismatch (-want +got):\n%s", diff)
			}
			if want := strings.TrimSpace(tt.msg); string(got.Raw) != want {
				t.Errorf("Raw = %s\nwant the message as received (trimmed): %s", got.Raw, want)
			}
			var whole struct {
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal([]byte(tt.msg), &whole); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Data, whole.Data) {
				t.Errorf("Data = %s\nwant the data object as sent: %s", got.Data, whole.Data)
			}
		})
	}
	for _, k := range events.Kinds {
		if !kinds[k] {
			t.Errorf("no valid %s envelope in the table", k)
		}
	}
}

// absent, as an edit's value, deletes the field.
const absent = "<absent>"

// edit replaces the field at a dotted path ("data.count") with a raw JSON value.
type edit struct{ path, value string }

// mutate returns the envelope base with edits applied, each at a dotted path of objects.
func mutate(base string, edits ...edit) []byte {
	b := []byte(base)
	for _, e := range edits {
		b = setPath(b, strings.Split(e.path, "."), e.value)
	}
	return b
}

func setPath(obj []byte, path []string, value string) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		panic(err)
	}
	switch {
	case len(path) > 1:
		m[path[0]] = setPath(m[path[0]], path[1:], value)
	case value == absent:
		delete(m, path[0])
	default:
		m[path[0]] = json.RawMessage(value)
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func TestDecodeInvalid(t *testing.T) {
	tests := []struct {
		name  string
		msg   []byte
		field string // ValidationError.Field; "" when the message as a whole is bad
	}{
		// The message as a whole.
		{"empty", []byte(""), ""},
		{"only whitespace", []byte(" \r\n\t"), ""},
		{"not JSON", []byte(`{"v":1,"id":`), ""},
		{"plain text", []byte("Successfully assigned ai-lab/day20-control-1 to gpu-node-1"), ""},
		{"JSON but an array", []byte(`[` + scheduledJSON + `]`), ""},
		// Invalid UTF-8 cannot go through encoding/json (it would replace it), so splice it in.
		{"invalid UTF-8", []byte(strings.Replace(scheduledJSON, `"gpu-node-1"`, "\"gpu-node-\xff\"", 1)), ""},
		{"\\u0000 escape in data", mutate(scheduledJSON, edit{"data.note", `"Successfully assigned\u0000"`}), ""},
		{"\\u0000 escape after an escaped backslash pair", mutate(scheduledJSON, edit{"data.note", `"a\\\\\u0000"`}), ""},
		{"\\u0000 escape in a key", []byte(strings.Replace(scheduledJSON, `"data":{`, `"data":{"x\u0000":1,`, 1)), ""},
		{"lone high surrogate escape", mutate(scheduledJSON, edit{"data.note", `"a\ud800x"`}), ""},
		{"lone low surrogate escape", mutate(scheduledJSON, edit{"data.note", `"a\udc00"`}), ""},
		{"high surrogate at the end of a string", mutate(scheduledJSON, edit{"data.note", `"a\uD83D"`}), ""},

		// Envelope fields.
		{"missing v", mutate(scheduledJSON, edit{"v", absent}), "v"},
		{"v 0", mutate(scheduledJSON, edit{"v", `0`}), "v"},
		{"v 2", mutate(scheduledJSON, edit{"v", `2`}), "v"},
		{"v as string", mutate(scheduledJSON, edit{"v", `"1"`}), "v"},
		{"missing id", mutate(scheduledJSON, edit{"id", absent}), "id"},
		{"empty id", mutate(scheduledJSON, edit{"id", `""`}), "id"},
		{"id of 201 bytes", mutate(scheduledJSON, edit{"id", `"` + strings.Repeat("x", events.MaxIDLen+1) + `"`}), "id"},
		{"id of 67 three-byte runes (201 bytes)", mutate(scheduledJSON, edit{"id", `"` + strings.Repeat("€", 67) + `"`}), "id"},
		{"missing kind", mutate(scheduledJSON, edit{"kind", absent}), "kind"},
		{"unknown kind", mutate(scheduledJSON, edit{"kind", `"k8s_events"`}), "kind"},
		{"kind in upper case", mutate(scheduledJSON, edit{"kind", `"K8S_EVENT"`}), "kind"},
		{"missing cluster", mutate(scheduledJSON, edit{"cluster", absent}), "cluster"},
		{"cluster with a dot", mutate(scheduledJSON, edit{"cluster", `"lab.eu"`}), "cluster"},
		{"cluster with a wildcard", mutate(scheduledJSON, edit{"cluster", `"lab*"`}), "cluster"},
		{"cluster with a space", mutate(scheduledJSON, edit{"cluster", `"my lab"`}), "cluster"},
		{"missing source", mutate(scheduledJSON, edit{"source", absent}), "source"},
		{"missing occurred_at", mutate(scheduledJSON, edit{"occurred_at", absent}), "occurred_at"},
		{"occurred_at yesterday", mutate(scheduledJSON, edit{"occurred_at", `"yesterday"`}), "occurred_at"},
		{"occurred_at without zone", mutate(scheduledJSON, edit{"occurred_at", `"2026-11-30T04:32:22.205208"`}), "occurred_at"},
		{"occurred_at as unix seconds", mutate(scheduledJSON, edit{"occurred_at", `1796013142`}), "occurred_at"},
		{"occurred_at zero time", mutate(scheduledJSON, edit{"occurred_at", `"0001-01-01T00:00:00Z"`}), "occurred_at"},
		{"missing observed_at", mutate(scheduledJSON, edit{"observed_at", absent}), "observed_at"},
		{"observed_at garbage", mutate(scheduledJSON, edit{"observed_at", `"2026-11-31T04:32:22Z"`}), "observed_at"},
		{"missing data", mutate(scheduledJSON, edit{"data", absent}), "data"},
		{"data null", mutate(scheduledJSON, edit{"data", `null`}), "data"},
		{"data array", mutate(scheduledJSON, edit{"data", `[{"reason":"Scheduled"}]`}), "data"},
		{"data string", mutate(scheduledJSON, edit{"data", `"Scheduled"`}), "data"},
		{"pod not an object", mutate(scheduledJSON, edit{"pod", `"ai-lab/day20-control-1"`}), "pod"},
		{"pod.uid missing", mutate(scheduledJSON, edit{"pod.uid", absent}), "pod.uid"},
		{"pod.uid not a UUID", mutate(scheduledJSON, edit{"pod.uid", `"day20-control-1"`}), "pod.uid"},
		{"pod.uid a UUID without dashes", mutate(scheduledJSON, edit{"pod.uid", `"b1946ac92f0e4d3b8a3c6f1d2e7a9c41"`}), "pod.uid"},
		{"pod.name missing", mutate(scheduledJSON, edit{"pod.name", absent}), "pod.name"},
		{"pod.namespace missing", mutate(scheduledJSON, edit{"pod.namespace", absent}), "pod.namespace"},
		{"experiment.name not a string", mutate(requestJSON, edit{"experiment.name", `20`}), "experiment.name"},
		{"pod_status without pod", mutate(podStatusJSON, edit{"pod", absent}), "pod"},
		{"node_status without node", mutate(nodeStatusJSON, edit{"node", absent}), "node"},
		{"gpu_sample without node", mutate(gpuSampleJSON, edit{"node", absent}), "node"},

		// k8s_event data.
		{"k8s_event without reason", mutate(scheduledJSON, edit{"data.reason", absent}), "data.reason"},
		{"k8s_event count as string", mutate(scheduledJSON, edit{"data.count", `"1"`}), "data.count"},
		{"k8s_event count negative", mutate(scheduledJSON, edit{"data.count", `-1`}), "data.count"},
		{"k8s_event count fractional", mutate(scheduledJSON, edit{"data.count", `1.5`}), "data.count"},
		{"k8s_event related.uid not a string", mutate(failedSchedulingJSON, edit{"data.related.uid", `42`}), "data.related.uid"},

		// pod_status data.
		{"pod_status without phase", mutate(podStatusJSON, edit{"data.phase", absent}), "data.phase"},
		{"pod_status unknown phase", mutate(podStatusJSON, edit{"data.phase", `"Terminating"`}), "data.phase"},
		{"pod_status phase in lower case", mutate(podStatusJSON, edit{"data.phase", `"running"`}), "data.phase"},
		{"pod_status condition status Maybe", mutate(podStatusJSON, edit{"data.conditions",
			`[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"Maybe"}]`}), "data.conditions[1].status"},
		{"pod_status condition without type", mutate(podStatusJSON, edit{"data.conditions",
			`[{"status":"True"}]`}), "data.conditions[0].type"},
		{"pod_status condition time yesterday", mutate(podStatusJSON, edit{"data.conditions",
			`[{"type":"PodScheduled","status":"True","last_transition_time":"2026-11-30T04:32:22Z"},
			  {"type":"Ready","status":"True","last_transition_time":"yesterday"}]`}), "data.conditions[1].last_transition_time"},
		{"pod_status conditions an object", mutate(podStatusJSON, edit{"data.conditions", `{"Ready":"True"}`}), "data.conditions"},
		{"pod_status condition a string", mutate(podStatusJSON, edit{"data.conditions", `["Ready"]`}), "data.conditions[0]"},
		{"pod_status restart_count as string", mutate(podStatusJSON, edit{"data.containers",
			`[{"name":"vllm","ready":true,"restart_count":"2"}]`}), "data.containers[0].restart_count"},
		{"pod_status restart_count negative", mutate(podStatusJSON, edit{"data.containers",
			`[{"name":"vllm","ready":true,"restart_count":0},{"name":"sidecar","ready":true,"restart_count":-1}]`}), "data.containers[1].restart_count"},
		{"pod_status ready as string", mutate(podStatusJSON, edit{"data.containers",
			`[{"name":"vllm","ready":"true","restart_count":0}]`}), "data.containers[0].ready"},
		{"pod_status started_at garbage", mutate(podStatusJSON, edit{"data.containers",
			`[{"name":"vllm","ready":true,"restart_count":0,"started_at":"now"}]`}), "data.containers[0].started_at"},
		{"pod_status priority beyond int32", mutate(podStatusJSON, edit{"data.priority", `3000000000`}), "data.priority"},
		{"pod_status labels not strings", mutate(podStatusJSON, edit{"data.labels", `{"schedlens.io/run":1}`}), "data.labels"},
		{"pod_status resources.requests not strings", mutate(podStatusJSON, edit{"data.resources.requests", `{"nvidia.com/gpu":1}`}), "data.resources.requests"},
		{"pod_status owner.kind not a string", mutate(podStatusJSON, edit{"data.owner.kind", `true`}), "data.owner.kind"},
		{"pod_status creation_timestamp yesterday", mutate(podStatusJSON, edit{"data.creation_timestamp", `"yesterday"`}), "data.creation_timestamp"},

		// node_status data.
		{"node_status ready as string", mutate(nodeStatusJSON, edit{"data.ready", `"True"`}), "data.ready"},
		{"node_status taint effect not a string", mutate(nodeStatusJSON, edit{"data.taints", `[{"key":"k","effect":1}]`}), "data.taints[0].effect"},

		// gpu_sample data.
		{"gpu_sample without metrics", mutate(gpuSampleJSON, edit{"data.metrics", absent}), "data.metrics"},
		{"gpu_sample empty metrics", mutate(gpuSampleJSON, edit{"data.metrics", `{}`}), "data.metrics"},
		{"gpu_sample metric as string", mutate(gpuSampleJSON, edit{"data.metrics", `{"DCGM_FI_DEV_GPU_UTIL":"87"}`}), "data.metrics"},
		{"gpu_sample without gpu and uuid", mutate(gpuSampleJSON, edit{"data.gpu", absent}, edit{"data.uuid", absent}), "data.uuid"},

		// request data.
		{"request status as string", mutate(requestJSON, edit{"data.status", `"200 OK"`}), "data.status"},
		{"request negative latency", mutate(requestJSON, edit{"data.latency_ms", `-3.5`}), "data.latency_ms"},
		{"request about no pod and no pod IP", mutate(requestJSON, edit{"pod", absent}), "pod"},

		// experiment data.
		{"experiment without name", mutate(experimentJSON, edit{"data.name", absent}), "data.name"},
		{"experiment name null", mutate(experimentJSON, edit{"data.name", `null`}), "data.name"},
		{"experiment name not a string", mutate(experimentJSON, edit{"data.name", `20`}), "data.name"},
		{"experiment name an object", mutate(experimentJSON, edit{"data.name", `{"day":20}`}), "data.name"},
		// A repeats given as a string is no reason to refuse the definition: TestExperimentMisfitsThroughDecode.

		// inventory data.
		{"inventory without pod_uids", mutate(inventoryJSON, edit{"data.pod_uids", absent}), "data.pod_uids"},
		{"inventory bad uid", mutate(inventoryJSON, edit{"data.pod_uids",
			`["b1946ac9-2f0e-4d3b-8a3c-6f1d2e7a9c41","day20-control-1"]`}), "data.pod_uids[1]"},
		{"inventory pod_uids an object", mutate(inventoryJSON, edit{"data.pod_uids", `{}`}), "data.pod_uids"},
		// heartbeat data.
		{"heartbeat without since", mutate(heartbeatJSON, edit{"data.since", absent}), "data.since"},
		// workload_status data.
		{"workload of an unknown kind", mutate(workloadJSON, edit{"data.kind", `"DaemonSet"`}), "data.kind"},
		{"workload without a name", mutate(workloadJSON, edit{"data.name", absent}), "data.name"},
		{"workload without a namespace", mutate(workloadJSON, edit{"data.namespace", `""`}), "data.namespace"},
		{"workload with negative replicas", mutate(workloadJSON, edit{"data.replicas", `-1`}), "data.replicas"},
		{"workload uid not a UID", mutate(workloadJSON, edit{"data.uid", `"x"`}), "data.uid"},
		{"workload replicas not a number", mutate(workloadJSON, edit{"data.replicas", `"3"`}), "data.replicas"},
		{"heartbeat since not a time", mutate(heartbeatJSON, edit{"data.since", `"yesterday"`}), "data.since"},
		// label_registry data.
		{"label registry without a namespace", mutate(labelRegistryJSON, edit{"data.namespace", absent}), "data.namespace"},
		{"label registry entry without a key", mutate(labelRegistryJSON, edit{"data.labels", `[{"source":"x","owner":"y"}]`}), "data.labels[0].key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := events.Decode(tt.msg)
			if err == nil {
				t.Fatalf("Decode succeeded, want an error at %q; message:\n%s", tt.field, tt.msg)
			}
			if env != nil {
				t.Errorf("Decode returned an envelope with error %v", err)
			}
			ve := invalidAt(t, err, tt.field)
			if ve.Reason == "" {
				t.Errorf("empty Reason (error: %v)", err)
			}
			if !strings.HasPrefix(err.Error(), "invalid envelope: "+tt.field) {
				t.Errorf("Error() = %q, want it to start with %q", err, "invalid envelope: "+tt.field)
			}
		})
	}
}

// invalidAt checks that err is ErrInvalid, as a *ValidationError at field, and returns it.
func invalidAt(t *testing.T, err error, field string) *events.ValidationError {
	t.Helper()
	if !errors.Is(err, events.ErrInvalid) {
		t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
	}
	var ve *events.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T %v is not a *ValidationError", err, err)
	}
	if ve.Field != field {
		t.Errorf("Field = %q, want %q (error: %v)", ve.Field, field, err)
	}
	return ve
}

// Edge cases that look suspicious but are valid.
func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name     string
		msg      []byte
		wantNote string
	}{
		{
			// The JSON text "\\u0000" is a backslash followed by "u0000", not a NUL.
			name:     "escaped backslash before u0000",
			msg:      mutate(scheduledJSON, edit{"data.note", `"C:\\u0000"`}),
			wantNote: `C:\u0000`,
		},
		{
			name:     "surrogate pair escape",
			msg:      mutate(scheduledJSON, edit{"data.note", `"gpu \ud83d\ude00"`}),
			wantNote: "gpu \U0001F600",
		},
		{
			name:     "other control escapes",
			msg:      mutate(scheduledJSON, edit{"data.note", `"line1\nline2\u0001"`}),
			wantNote: "line1\nline2\x01",
		},
		{
			name:     "non-ASCII text",
			msg:      mutate(scheduledJSON, edit{"data.note", `"Zugewiesen: ai-lab/day20-control-1 → gpu-node-1"`}),
			wantNote: "Zugewiesen: ai-lab/day20-control-1 → gpu-node-1",
		},
		{
			name:     "id of exactly 200 bytes",
			msg:      mutate(scheduledJSON, edit{"id", `"` + strings.Repeat("x", events.MaxIDLen) + `"`}),
			wantNote: "Successfully assigned ai-lab/day20-control-1 to gpu-node-1",
		},
		{
			name:     "null optional fields",
			msg:      mutate(scheduledJSON, edit{"experiment", `null`}, edit{"data.related", `null`}, edit{"data.type", `null`}),
			wantNote: "Successfully assigned ai-lab/day20-control-1 to gpu-node-1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := events.Decode(tt.msg)
			if err != nil {
				t.Fatalf("Decode: %v\nmessage: %s", err, tt.msg)
			}
			ev, ok := env.Payload.(*events.K8sEvent)
			if !ok {
				t.Fatalf("Payload is %T, want *events.K8sEvent", env.Payload)
			}
			if diff := cmp.Diff(tt.wantNote, ev.Note); diff != "" {
				t.Errorf("note mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeKeepsUnknownFields(t *testing.T) {
	msg := mutate(scheduledJSON,
		edit{"trace_id", `"4bf92f3577b34da6a3ce929d0e0e4736"`},
		edit{"pod.labels", `{"app":"vllm"}`},
		edit{"data.series_last_observed", `"2026-11-30T04:32:22.205208Z"`},
		edit{"data.deprecated_source", `{"component":"","host":""}`},
	)
	env, err := events.Decode(msg)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if diff := cmp.Diff(scheduledData(), env.Payload); diff != "" {
		t.Errorf("Payload mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(control1, env.Pod); diff != "" {
		t.Errorf("Pod mismatch (-want +got):\n%s", diff)
	}

	var raw struct {
		TraceID string `json:"trace_id"`
		Pod     struct {
			Labels map[string]string `json:"labels"`
		} `json:"pod"`
		Data struct {
			SeriesLastObserved string            `json:"series_last_observed"`
			DeprecatedSource   map[string]string `json:"deprecated_source"`
		} `json:"data"`
	}
	if err := json.Unmarshal(env.Raw, &raw); err != nil {
		t.Fatalf("Raw is not JSON: %v", err)
	}
	if raw.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || raw.Pod.Labels["app"] != "vllm" ||
		raw.Data.SeriesLastObserved != "2026-11-30T04:32:22.205208Z" || raw.Data.DeprecatedSource == nil {
		t.Errorf("Raw lost unknown fields: %s", env.Raw)
	}
	if !bytes.Contains(env.Data, []byte(`"series_last_observed":"2026-11-30T04:32:22.205208Z"`)) {
		t.Errorf("Data lost an unknown field: %s", env.Data)
	}
}

func TestDecodeTimes(t *testing.T) {
	tests := []struct {
		name         string
		occurred     string
		observed     string
		wantOccurred string
		wantObserved string
	}{
		{
			name:         "nanoseconds and an offset",
			occurred:     "2026-11-30T05:32:22.205208123+01:00",
			observed:     "2026-11-29T23:32:22.999999999-05:00",
			wantOccurred: "2026-11-30T04:32:22.205208Z",
			wantObserved: "2026-11-30T04:32:22.999999Z",
		},
		{
			name:         "already microseconds in UTC",
			occurred:     "2026-11-30T04:32:22.205208Z",
			observed:     "2026-11-30T04:32:22.231977Z",
			wantOccurred: "2026-11-30T04:32:22.205208Z",
			wantObserved: "2026-11-30T04:32:22.231977Z",
		},
		{
			name:         "whole seconds",
			occurred:     "2026-11-30T04:32:22Z",
			observed:     "2026-11-30T10:02:22+05:30",
			wantOccurred: "2026-11-30T04:32:22Z",
			wantObserved: "2026-11-30T04:32:22Z",
		},
		{
			name:         "a sub-microsecond time truncates, never rounds up",
			occurred:     "2026-11-30T04:32:22.000000999Z",
			observed:     "2026-11-30T04:32:59.9999999Z",
			wantOccurred: "2026-11-30T04:32:22Z",
			wantObserved: "2026-11-30T04:32:59.999999Z",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := mutate(scheduledJSON, edit{"occurred_at", `"` + tt.occurred + `"`}, edit{"observed_at", `"` + tt.observed + `"`})
			env, err := events.Decode(msg)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			got := []string{env.OccurredAt.Format(time.RFC3339Nano), env.ObservedAt.Format(time.RFC3339Nano)}
			want := []string{tt.wantOccurred, tt.wantObserved}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("times mismatch (-want +got):\n%s", diff)
			}
			for _, tm := range []time.Time{env.OccurredAt, env.ObservedAt} {
				if tm.Location() != time.UTC {
					t.Errorf("time %v is in %v, want UTC", tm, tm.Location())
				}
			}
		})
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		env  *events.Envelope
	}{
		{
			name: "pod_status Failed after restarts",
			env: &events.Envelope{
				ID: "pod_status:6ee92199-b806-4aed-80ba-6687a24a01b2:51007", Kind: events.KindPodStatus,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:50:12.000031Z"), ObservedAt: at("2026-11-30T04:50:12.004410Z"),
				Pod:        &events.PodRef{Namespace: "ai-lab", Name: "day20-treatment-1", UID: "6ee92199-b806-4aed-80ba-6687a24a01b2"},
				Node:       "gpu-node-3",
				Experiment: &events.ExperimentRef{Name: "day20", Arm: "treatment", Run: "2"},
				Payload: &events.PodStatus{
					Phase:             events.PhaseFailed,
					NodeName:          "gpu-node-3",
					NominatedNodeName: "gpu-node-3",
					Priority:          ptr[int32](0),
					Conditions: []events.Condition{
						{Type: "Ready", Status: "False", Reason: "PodFailed", LastTransitionTime: ptr(at("2026-11-30T04:50:11Z"))},
					},
					Containers: []events.ContainerStatus{
						{Name: "vllm", RestartCount: 3, State: "terminated", Reason: "OOMKilled", ExitCode: ptr(137)},
					},
					DeletionTimestamp: ptr(at("2026-11-30T04:50:12Z")),
					Deleted:           true,
				},
			},
		},
		{
			name: "gpu_sample MIG slice",
			env: &events.Envelope{
				ID: "gpu_sample:gpu-node-2:MIG-1b2c3d4e:2026-11-30T04:32:45Z", Kind: events.KindGPUSample,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T04:32:45Z"), ObservedAt: at("2026-11-30T04:32:45.5Z"),
				Node: "gpu-node-2",
				Payload: &events.GPUSample{
					UUID: "MIG-1b2c3d4e", Model: "NVIDIA A100-SXM4-40GB", MIGProfile: "1g.5gb",
					Metrics: map[string]float64{"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0},
				},
			},
		},
		{
			name: "request that failed, known only by the pod's IP",
			env: &events.Envelope{
				V: events.Version, ID: "request:prober-day20:1843", Kind: events.KindRequest,
				Cluster: "lab", Source: "prober/day20",
				OccurredAt: at("2026-11-30T04:33:03.770051Z"), ObservedAt: at("2026-11-30T04:33:33.770400Z"),
				Payload: &events.Request{
					Target: "http://10.244.1.17:8000/v1/completions", Status: 503, LatencyMS: 30000,
					Error: "upstream connect error or disconnect/reset before headers", Method: "POST", PodIP: "10.244.1.17",
				},
			},
		},
		{
			name: "inventory of no pods",
			env: &events.Envelope{
				ID: "inventory:collector/lab-0:2026-11-30T05:00:00Z", Kind: events.KindInventory,
				Cluster: "lab", Source: "collector/lab-0",
				OccurredAt: at("2026-11-30T05:00:00Z"), ObservedAt: at("2026-11-30T05:00:00.1Z"),
				Payload: &events.Inventory{PodUIDs: []string{}},
			},
		},
	}
	// Every envelope TestDecodeValid decodes goes round too.
	for _, c := range validCases() {
		env := *c.want
		env.Data, env.Raw = nil, nil
		tests = append(tests, struct {
			name string
			env  *events.Envelope
		}{c.name, &env})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := *tt.env
			b, err := events.Encode(tt.env)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if bytes.ContainsAny(b, "\n") {
				t.Errorf("Encode wrote a newline: %q", b)
			}
			if diff := cmp.Diff(before, *tt.env); diff != "" {
				t.Errorf("Encode modified its argument (-before +after):\n%s", diff)
			}
			got, err := events.Decode(b)
			if err != nil {
				t.Fatalf("Decode(Encode(env)): %v\n%s", err, b)
			}
			want := *tt.env
			want.V = events.Version
			if diff := cmp.Diff(&want, got, ignoreBytes); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
			if !bytes.Equal(got.Raw, b) {
				t.Errorf("Raw = %s\nwant the encoded bytes %s", got.Raw, b)
			}

			// Encoding the decoded envelope again gives the same bytes.
			again, err := events.Encode(got)
			if err != nil {
				t.Fatalf("Encode(Decode(…)): %v", err)
			}
			if diff := cmp.Diff(string(b), string(again)); diff != "" {
				t.Errorf("second encoding differs (-first +second):\n%s", diff)
			}
		})
	}
}

func TestEncodeWithoutPayloadWritesData(t *testing.T) {
	data := json.RawMessage(`{"phase":"Pending","nominated_node_name":"gpu-node-3","future_field":[1,2]}`)
	env := &events.Envelope{
		ID: "pod_status:6ee92199-b806-4aed-80ba-6687a24a01b2:50110", Kind: events.KindPodStatus,
		Cluster: "lab", Source: "collector/lab-0",
		OccurredAt: at("2026-11-30T04:41:06.9Z"), ObservedAt: at("2026-11-30T04:41:06.9Z"),
		Pod:  &events.PodRef{Namespace: "ai-lab", Name: "day20-treatment-1", UID: "6ee92199-b806-4aed-80ba-6687a24a01b2"},
		Data: data,
	}
	b, err := events.Encode(env)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	got, err := events.Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v\n%s", err, b)
	}
	want := &events.PodStatus{Phase: events.PhasePending, NominatedNodeName: "gpu-node-3"}
	if diff := cmp.Diff(want, got.Payload); diff != "" {
		t.Errorf("Payload mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(string(data), string(got.Data)); diff != "" {
		t.Errorf("Data mismatch (-want +got):\n%s", diff)
	}
}

// Decode reads the payload in the envelope's own pass when kind comes before data, as every
// schedlens writer puts it, and the other way when it does not: the same envelope either way.
func TestDecodeReadsKindFirstInOnePass(t *testing.T) {
	for _, tt := range validCases() {
		t.Run(tt.name, func(t *testing.T) {
			msg := []byte(tt.msg)
			if kindFirst := bytes.Index(msg, []byte(`"kind"`)) < bytes.Index(msg, []byte(`"data"`)); events.ReadInOnePass(msg) != kindFirst {
				t.Errorf("read in one pass: %t, want %t (kind before data)", !kindFirst, kindFirst)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(msg, &m); err != nil {
				t.Fatal(err)
			}
			dataFirst, err := json.Marshal(m) // names sorted: data before kind
			if err != nil {
				t.Fatal(err)
			}
			if events.ReadInOnePass(dataFirst) {
				t.Errorf("data before kind read in one pass: %s", dataFirst)
			}
			one, err1 := events.Decode(msg)
			two, err2 := events.Decode(dataFirst)
			if err1 != nil || err2 != nil {
				t.Fatalf("Decode: %v; data first: %v", err1, err2)
			}
			if diff := cmp.Diff(one, two, ignoreBytes); diff != "" {
				t.Errorf("kind first and data first read differently (-kind first +data first):\n%s", diff)
			}
		})
	}
}
