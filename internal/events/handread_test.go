package events_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
)

// sameTime compares times as the fuzz targets do: the instant and the zone's name.
var sameTime = cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) && a.Location().String() == b.Location().String() })

// sameAsJSONv2 fails unless Decode reads msg as Decode without handRead does: the same
// envelope (its bytes too), or the same rejection.
func sameAsJSONv2(t *testing.T, msg []byte, now time.Time) {
	t.Helper()
	clock := events.WithClock(func() time.Time { return now })
	got, err := events.Decode(msg, clock)
	want, wantErr := events.DecodeJSONv2(msg, clock)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("Decode says %v, json/v2 alone %v\nmsg: %s", err, wantErr, msg)
	}
	if diff := cmp.Diff(want, got, sameTime); diff != "" {
		t.Fatalf("handRead reads the message otherwise than json/v2 (-json/v2 +handRead):\n%s\nmsg: %s", diff, msg)
	}
}

// writersMessages are messages as schedlens' writers send them: the fixtures of the kinds
// handRead reads, the recorded sample (collector, prober) and the generator's pod and request
// mix (the bench's), encoded by events.Encode.
func writersMessages(t *testing.T) (msgs [][]byte, now time.Time) {
	t.Helper()
	hot := map[events.Kind]bool{events.KindPodStatus: true, events.KindRequest: true, events.KindGPUSample: true, events.KindK8sEvent: true}
	for _, m := range []string{podStatusJSON, requestJSON, gpuSampleJSON, scheduledJSON, preemptedJSON, failedSchedulingJSON} {
		msgs = append(msgs, []byte(m))
	}
	for _, line := range sampleLines(t, 0) {
		env, err := events.Decode(line, events.WithClock(func() time.Time { return received }))
		if err != nil {
			t.Fatal(err)
		}
		if hot[env.Kind] {
			msgs = append(msgs, line)
		}
	}
	// A pod as the collector writes one with every field handRead reads: an affinity's " && "
	// and the query of a request's URL are written as \u0026 by events.Encode.
	for _, env := range []*events.Envelope{writersPod(), writersRequest()} {
		b, err := events.Encode(env)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`\u0026`)) {
			t.Fatalf("events.Encode no longer escapes &: %s", b)
		}
		msgs = append(msgs, b)
	}
	cfg := eventgen.Default()
	cfg.Runs, cfg.PodsPerArm = 2, 6
	for _, env := range eventgen.Generate(cfg) {
		if !hot[env.Kind] {
			continue
		}
		b, err := events.Encode(env)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, b)
		now = later(now, env.ObservedAt)
	}
	return msgs, later(now, received)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TestHandReadTakesWhatWritersSend: every pod snapshot, request, GPU sample and scheduler event
// schedlens' writers send is read by handRead (were it to decline them, Decode would be as
// slow as before, and no test of answers would notice), and read as json/v2 reads it.
func TestHandReadTakesWhatWritersSend(t *testing.T) {
	msgs, now := writersMessages(t)
	kinds := map[string]int{}
	for _, msg := range msgs {
		if !events.HandRead(msg, now) {
			t.Fatalf("handRead declines a writer's message:\n%s", msg)
		}
		sameAsJSONv2(t, msg, now)
		env, _ := events.Decode(msg, events.WithClock(func() time.Time { return now }))
		kinds[string(env.Kind)]++
	}
	for _, k := range []events.Kind{events.KindPodStatus, events.KindRequest, events.KindGPUSample, events.KindK8sEvent} {
		if kinds[string(k)] == 0 {
			t.Errorf("no %s among the writers' messages", k)
		}
	}
	t.Logf("%d messages: %v", len(msgs), kinds)
}

// TestHandReadDeclinesWhatItCannotVouchFor edits the fixtures into messages that json/v2 with
// encoding/json's semantics reads in a way handRead does not (or rejects): handRead must
// decline each, and Decode read it as json/v2 does. The last cases are ones it takes.
func TestHandReadDeclinesWhatItCannotVouchFor(t *testing.T) {
	now := received
	long := strings.Repeat("x", events.MaxStringLen+1)
	many := strings.TrimSuffix(strings.Repeat(`"a",`, events.MaxListLen+1), ",")
	for _, c := range []struct {
		name, base, old, new string
		takes                bool
	}{
		{name: "a name in another case", base: podStatusJSON, old: `"phase":"Running"`, new: `"Phase":"Running"`},
		{name: "a name in another case beside the field", base: podStatusJSON, old: `"phase":"Running"`, new: `"phase":"Running","PHASE":"Failed"`},
		{name: "a name with the Kelvin sign", base: k8sFixture(), old: `"count":1`, new: `"\u212aind":1,"count":1`},
		{name: "an envelope name in another case", base: requestJSON, old: `"node":"gpu-node-1"`, new: `"Node":"gpu-node-1"`},
		{name: "a repeated object field", base: podStatusJSON, old: `"owner":{`, new: `"owner":{"kind":"Job"},"owner":{`},
		{name: "a repeated list field", base: podStatusJSON, old: `"containers":[`, new: `"containers":[{"name":"a","restart_count":3}],"containers":[`},
		{name: "a repeated map field", base: podStatusJSON, old: `"labels":{`, new: `"labels":{"x":"y"},"labels":{`},
		{name: "a repeated envelope pod", base: requestJSON, old: `"node":"gpu-node-1"`, new: `"node":"gpu-node-1","pod":{"name":"other"}`},
		{name: "null", base: podStatusJSON, old: `"host_ip":"172.18.0.3"`, new: `"host_ip":null`},
		{name: "null data", base: requestJSON, old: `"data":{`, new: `"data":null,"x":{`},
		{name: "an escape in a name", base: podStatusJSON, old: `"node_name":"gpu-node-1"`, new: `"node_nam\u0065":"gpu-node-1"`},
		{name: "an escape in a map key", base: podStatusJSON, old: `"app":"vllm"`, new: `"\u0061pp":"vllm"`},
		{name: "an escape in a time", base: podStatusJSON, old: `"creation_timestamp":"2026-11-30T04:32:21Z"`, new: `"creation_timestamp":"2026-11-30T04:32:21\u005a"`},
		{name: "an escape JSON does not have", base: podStatusJSON, old: `"node_name":"gpu-node-1"`, new: `"node_name":"gpu-node-\x31"`},
		{name: "an escape cut short", base: podStatusJSON, old: `"node_name":"gpu-node-1"`, new: `"node_name":"gpu-node-\u31"`},
		{name: "a lone surrogate", base: podStatusJSON, old: `"node_name":"gpu-node-1"`, new: `"node_name":"gpu-node-\ud83d"`},
		{name: "a surrogate pair out of order", base: podStatusJSON, old: `"node_name":"gpu-node-1"`, new: `"node_name":"\ude00\ud83d"`},
		{name: "a string longer than MaxStringLen once unescaped", base: requestJSON, old: `"target":"http://10.244.1.17:8000/v1/completions"`, new: `"target":"\n` + long[1:] + `"`},
		{name: "a control character", base: podStatusJSON, old: `"node_name":"gpu-node-1"`, new: "\"node_name\":\"gpu-node-1\t\""},
		{name: "an integer with a fraction", base: requestJSON, old: `"status":200`, new: `"status":200.0`},
		{name: "an integer with an exponent", base: requestJSON, old: `"status":200`, new: `"status":2e2`},
		{name: "an integer with a leading zero", base: requestJSON, old: `"status":200`, new: `"status":0200`},
		{name: "a count above MaxCount", base: k8sFixture(), old: `"count":1`, new: `"count":2147483648`},
		{name: "a negative count", base: k8sFixture(), old: `"count":1`, new: `"count":-1`},
		{name: "19 digits", base: requestJSON, old: `"bytes_in":2048`, new: `"bytes_in":1000000000000000000`},
		{name: "a float beyond float64", base: requestJSON, old: `"latency_ms":412.7`, new: `"latency_ms":1e309`},
		{name: "a float without digits after the point", base: requestJSON, old: `"latency_ms":412.7`, new: `"latency_ms":412.`},
		{name: "a string in place of a number", base: requestJSON, old: `"latency_ms":412.7`, new: `"latency_ms":"412.7"`},
		{name: "a string longer than MaxStringLen", base: requestJSON, old: `"target":"`, new: `"target":"` + long},
		{name: "a list longer than MaxListLen", base: podStatusJSON, old: `"phase":"Running"`, new: `"phase":"Running","scheduling_gates":[` + many + `]`},
		{name: "a time past the window", base: podStatusJSON, old: `"creation_timestamp":"2026-11-30T04:32:21Z"`, new: `"creation_timestamp":"2126-11-30T04:32:21Z"`},
		{name: "a time before MinTime", base: podStatusJSON, old: `"creation_timestamp":"2026-11-30T04:32:21Z"`, new: `"creation_timestamp":"1999-11-30T04:32:21Z"`},
		{name: "not a time", base: podStatusJSON, old: `"creation_timestamp":"2026-11-30T04:32:21Z"`, new: `"creation_timestamp":"yesterday"`},
		{name: "data before kind", base: requestJSON, old: `"kind":"request",`, new: ``},
		{name: "kind again after data", base: requestJSON, old: `"bytes_in":2048}`, new: `"bytes_in":2048},"kind":"gpu_sample"`},
		{name: "another kind", base: nodeStatusJSON, old: `"v":1`, new: `"v":1`},
		{name: "a repeated claims field", base: podStatusJSON, old: `"phase":"Running"`, new: `"phase":"Running","claims":[],"claims":[{"name":"a"}]`},
		{name: "a claim's device field in another case", base: podStatusJSON, old: `"phase":"Running"`, new: `"phase":"Running","claims":[{"devices":[{"Driver":"d"}]}]`},
		{name: "something after the object", base: requestJSON, old: `"bytes_in":2048}}`, new: `"bytes_in":2048}}` + "\x00"},
		{name: "an unknown field that is not JSON", base: requestJSON, old: `"ok":true`, new: `"ok":true,"later":[1,}`},
		{name: "an unknown field nested too deep", base: requestJSON, old: `"ok":true`, new: `"ok":true,"later":` + strings.Repeat("[", events.MaxDepth+2) + strings.Repeat("]", events.MaxDepth+2)},
		{name: "an unknown field holding null", base: requestJSON, old: `"ok":true`, new: `"ok":true,"later":null`},
		{name: "escapes in values", base: podStatusJSON, old: `"node_name":"gpu-node-1"`, new: `"node_name":"gpu-\u0026\u003c\u003e-\"\\\/\b\f\n\r\t-\ud83d\ude00-\u00e9"`, takes: true},
		{name: "escapes in an unknown field", base: requestJSON, old: `"ok":true`, new: `"ok":true,"later":["\u0026\n"]`, takes: true},
		{name: "a string of MaxStringLen once unescaped", base: requestJSON, old: `"target":"http://10.244.1.17:8000/v1/completions"`, new: `"target":"\n` + long[2:] + `"`, takes: true},
		{name: "version 2", base: requestJSON, old: `"v":1`, new: `"v":2`, takes: true},
		{name: "an unknown field", base: requestJSON, old: `"ok":true`, new: `"ok":true,"later":{"a":[1,-2.5e3,"b",true,false,{}],"c":[]}`, takes: true},
		{name: "a repeated string field (the last wins)", base: podStatusJSON, old: `"phase":"Running"`, new: `"phase":"Pending","phase":"Running"`, takes: true},
		{name: "a repeated map key (the last wins)", base: podStatusJSON, old: `"app":"vllm"`, new: `"app":"x","app":"vllm"`, takes: true},
		{name: "empty list and map", base: podStatusJSON, old: `"phase":"Running"`, new: `"phase":"Running","scheduling_gates":[],"gpu":{"uuids":[]},"placement":{"node_selector":{}},"claims":[{"devices":[{"attributes":{}}]}]`, takes: true},
		{name: "a negative priority", base: podStatusJSON, old: `"priority":100000`, new: `"priority":-5`, takes: true},
		{name: "a negative exit code", base: podStatusJSON, old: `"restart_count":0`, new: `"restart_count":0,"exit_code":-9`, takes: true},
		{name: "a time with an offset", base: podStatusJSON, old: `"creation_timestamp":"2026-11-30T04:32:21Z"`, new: `"creation_timestamp":"2026-11-30T06:32:21.5+02:00"`, takes: true},
		{name: "white space everywhere", base: requestJSON, old: `"status":200`, new: "\"status\" \t\r\n: \n 200 \n", takes: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(c.base, c.old) {
				t.Fatalf("the fixture holds no %s", c.old)
			}
			msg := []byte(strings.Replace(c.base, c.old, c.new, 1))
			if got := events.HandRead(msg, now); got != c.takes {
				t.Fatalf("handRead takes it: %v, want %v\nmsg: %.400s", got, c.takes, msg)
			}
			sameAsJSONv2(t, msg, now)
		})
	}
}

// k8sFixture is the scheduler event fixture with a count of 1.
func k8sFixture() string { return scheduledJSON }

// writersPod is a pod snapshot with every field handRead reads.
func writersPod() *events.Envelope {
	created := at("2026-11-30T04:32:21Z")
	return &events.Envelope{
		V: events.Version, ID: "pod_status:x:1", Kind: events.KindPodStatus, Cluster: "lab", Source: "collector/lab-0",
		OccurredAt: at("2026-11-30T04:32:31.402117Z"), ObservedAt: at("2026-11-30T04:32:31.402117Z"),
		Pod: control1, Node: "gpu-node-1",
		Payload: &events.PodStatus{
			Phase: events.PhaseRunning, NodeName: "gpu-node-1", NominatedNodeName: "gpu-node-2", PodIP: "10.244.1.17", HostIP: "172.18.0.3",
			Labels: map[string]string{"app": "vllm"}, PriorityClass: "high", Priority: ptr(int32(-10)),
			Resources:         &events.Resources{Requests: map[string]string{"nvidia.com/gpu": "1"}, Limits: map[string]string{"nvidia.com/gpu": "1"}},
			Conditions:        []events.Condition{{Type: "Ready", Status: "False", Reason: "ContainersNotReady", LastTransitionTime: &created}},
			Containers:        []events.ContainerStatus{{Name: "vllm", RestartCount: 2, State: "terminated", Reason: "Error", StartedAt: &created, ExitCode: ptr(137)}},
			CreationTimestamp: &created, DeletionTimestamp: &created, Deleted: true,
			Owner: &events.Owner{Kind: "ReplicaSet", Name: "rs"}, ResourceVersion: "1",
			GPU: &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA A100", Sharing: events.SharingTimeSlicing, MIGProfile: "1g.10gb",
				Replicas: 4, Via: events.ViaDRA, UUIDs: []string{"GPU-1"}, ClaimPods: 2},
			Placement: &events.Placement{NodeSelector: map[string]string{"pool": "a"}, Required: []string{"accelerator In (nvidia-gpu) && gpu-model Exists"},
				Preferred: []string{"50: gpu-model In (H100)"}, PodAffinity: 1, PodAntiAffinity: 2, PriorityClass: "high", Priority: ptr(int32(-10)),
				PreemptionPolicy: "Never", Tolerations: []string{"nvidia.com/gpu Exists :NoSchedule"}},
			Scope:           &events.Scope{Namespaces: []string{"ai-lab"}, Selector: "app=vllm"},
			SchedulingGates: []string{"kueue.x-k8s.io/admission"},
			Claims: []events.PodClaim{{Name: "gpu", Claim: "pod-gpu-x7k2p", Template: "one-gpu", DeviceClasses: []string{"gpu.nvidia.com"},
				Selectors:   []string{`device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100" && device.capacity["gpu.nvidia.com"].memory >= quantity("40Gi")`},
				AllocatedAt: &created, AllocationObserved: &created, ReservedFor: 2, Sharing: events.SharingTimeSlicing,
				Devices: []events.ClaimDevice{{Request: "gpu", DeviceClass: "gpu.nvidia.com", Driver: "gpu.nvidia.com", Pool: "gpu-node-1", Device: "gpu-0",
					ShareID: "s1", ConsumedCapacity: map[string]string{"memory": "10Gi"}, Node: "gpu-node-1", Type: "gpu", Model: "NVIDIA A100",
					UUID: "GPU-1", MIGProfile: "1g.10gb", ParentUUID: "GPU-0", Attributes: map[string]string{"gpu.nvidia.com/productName": "NVIDIA A100"}}}},
				{Extended: true, DeviceClasses: []string{"gpu.example.com"}}},
		},
	}
}

// writersRequest is a prober's request with every field handRead reads.
func writersRequest() *events.Envelope {
	return &events.Envelope{
		V: events.Version, ID: "request:x:1", Kind: events.KindRequest, Cluster: "lab", Source: "prober/x",
		OccurredAt: at("2026-11-30T04:33:02.770051Z"), ObservedAt: at("2026-11-30T04:33:03.18279Z"),
		Pod: control1, Node: "gpu-node-1", Experiment: &events.ExperimentRef{Name: "day20", Arm: "control", Run: "1"},
		Payload: &events.Request{Target: "http://127.0.0.1:8000/v1/completions?a=1&b=2", Status: 503, LatencyMS: 12.5,
			Error: "upstream <timeout>", BytesOut: 10, BytesIn: 20, Method: "POST", PodIP: "10.244.1.17", PodReady: ptr(false)},
	}
}
