package dcgm_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/schedlens/schedlens/internal/dcgm"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/eventstest"
)

// podUIDs is a fake pod cache: "namespace/name" → UID.
type podUIDs map[string]string

func (m podUIDs) PodUID(namespace, name string) (string, bool) {
	uid, ok := m[namespace+"/"+name]
	return uid, ok
}

const (
	uidChatA = "0b6f7c1e-3f0a-4c55-9d7e-2a1b3c4d5e6f"
	uidMIG   = "7d1e2f3a-4b5c-4d6e-8f90-a1b2c3d4e5f6"
)

// cache knows two of the fixtures' pods; chat-7d9f8b6c5-9vbn2 and embed-5c6d7f8b9-tq2lm are not
// in it (deleted, or outside the collector's scope).
var cache = podUIDs{
	"day20/chat-7d9f8b6c5-4xkqp":     uidChatA,
	"day20/chat-mig-6b7c8d9f4-k8s7d": uidMIG,
}

var (
	// scrapedAt has nanoseconds: envelopes keep microseconds, and so does the id.
	scrapedAt = time.Date(2025, time.November, 30, 6, 30, 0, 123456789, time.UTC)
	seenAt    = scrapedAt.Add(2 * time.Millisecond)
)

func parse(t testing.TB, files ...string) []dcgm.Sample {
	t.Helper()
	var all []dcgm.Sample
	for _, f := range files {
		samples, err := dcgm.Parse(bytes.NewReader(fixture(t, f)))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, samples...)
	}
	return all
}

func TestEnvelopes(t *testing.T) {
	samples := parse(t, "derived/l40s-time-sliced.prom", "derived/a100-mig.prom", "recorded/t4-busy-no-help.prom")
	envs, err := dcgm.Envelopes(samples, "lab", "collector/test", "fallback-node", scrapedAt, seenAt, cache)
	if err != nil {
		t.Fatal(err)
	}
	// id → pod ("namespace/name/uid", "" for none), node, and MIG profile of the envelope.
	type row struct{ ID, Pod, Node, MIG string }
	const at = "1764484200123456000"
	want := []row{
		{"gpu_sample/gpu1-wl8sg/" + l40sUUID + "/" + at + "/day20/chat-7d9f8b6c5-4xkqp/server", "day20/chat-7d9f8b6c5-4xkqp/" + uidChatA, l40sHost, ""},
		{"gpu_sample/gpu1-wl8sg/" + l40sUUID + "/" + at + "/day20/chat-7d9f8b6c5-9vbn2/server", "", l40sHost, ""},
		{"gpu_sample/gpu1-wl8sg/" + l40sUUID + "/" + at + "/day20/embed-5c6d7f8b9-tq2lm/embedder", "", l40sHost, ""},
		{"gpu_sample/gpu1-wl8sg/" + l40sUUID + "/1/" + at + "/day20/chat-mig-6b7c8d9f4-k8s7d/server", "day20/chat-mig-6b7c8d9f4-k8s7d/" + uidMIG, l40sHost, "4g.20gb"},
		{"gpu_sample/gpu1-wl8sg/" + l40sUUID + "/2/" + at, "", l40sHost, "3g.20gb"},
		{"gpu_sample/cp-bm14r7/" + t4UUID + "/" + at, "", t4Host, ""},
	}
	var got []row
	ids := map[string]bool{}
	for _, env := range envs {
		r := row{ID: env.ID, Node: env.Node, MIG: env.Payload.(*events.GPUSample).MIGProfile}
		if env.Pod != nil {
			r.Pod = env.Pod.Namespace + "/" + env.Pod.Name + "/" + env.Pod.UID
		}
		got = append(got, r)
		ids[env.ID] = true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("envelopes (-want +got):\n%s", diff)
	}
	if len(ids) != len(envs) {
		t.Errorf("%d distinct ids for %d envelopes", len(ids), len(envs))
	}

	// The same scrape gives the same ids, whatever the cache knows; another scrape time others.
	again, err := dcgm.Envelopes(samples, "lab", "collector/test", "", scrapedAt, seenAt.Add(time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	later, err := dcgm.Envelopes(samples, "lab", "collector/test", "", scrapedAt.Add(15*time.Second), seenAt, cache)
	if err != nil {
		t.Fatal(err)
	}
	for i := range envs {
		if again[i].ID != envs[i].ID {
			t.Errorf("id %q, then %q for the same scrape", envs[i].ID, again[i].ID)
		}
		if again[i].Pod != nil {
			t.Errorf("%s: pod %+v without a resolver", again[i].ID, again[i].Pod)
		}
		if later[i].ID == envs[i].ID {
			t.Errorf("id %q for two scrape times", envs[i].ID)
		}
	}
}

func TestEnvelopeFields(t *testing.T) {
	samples := parse(t, "derived/a100-mig.prom")
	envs, err := dcgm.EnvelopesEvery(15*time.Second, samples[:1], "lab", "collector/test", "", scrapedAt, seenAt, cache)
	if err != nil {
		t.Fatal(err)
	}
	payload := &events.GPUSample{GPU: "0", UUID: l40sUUID, Model: "NVIDIA A100-SXM4-40GB", MIGProfile: "4g.20gb", Metrics: samples[0].Metrics, PeriodS: 15}
	data, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	want := []*events.Envelope{{
		V:          1,
		ID:         "gpu_sample/gpu1-wl8sg/" + l40sUUID + "/1/1764484200123456000/day20/chat-mig-6b7c8d9f4-k8s7d/server",
		Kind:       events.KindGPUSample,
		Cluster:    "lab",
		Source:     "collector/test",
		OccurredAt: time.Date(2025, time.November, 30, 6, 30, 0, 123456000, time.UTC),
		ObservedAt: time.Date(2025, time.November, 30, 6, 30, 0, 125456000, time.UTC),
		Pod:        &events.PodRef{Namespace: "day20", Name: "chat-mig-6b7c8d9f4-k8s7d", UID: uidMIG},
		Node:       l40sHost,
		Data:       data,
		Payload:    payload,
	}}
	// Raw is the encoded envelope the codec read back (Envelopes returns what the wire carries).
	if diff := cmp.Diff(want, envs, cmpopts.IgnoreFields(events.Envelope{}, "Raw")); diff != "" {
		t.Errorf("envelope (-want +got):\n%s", diff)
	}
	if again, err := events.Decode(envs[0].Raw); err != nil || again.ID != want[0].ID {
		t.Errorf("Raw does not decode to the envelope: %v", err)
	}
	if envs[0].Payload.(*events.GPUSample).Metrics["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] != 0.73125 {
		t.Errorf("payload metrics: %v", envs[0].Payload.(*events.GPUSample).Metrics)
	}

	// Without a period (Envelopes), period_s is left out.
	envs, err = dcgm.Envelopes(samples[:1], "lab", "collector/test", "", scrapedAt, seenAt, cache)
	if err != nil {
		t.Fatal(err)
	}
	if p := envs[0].Payload.(*events.GPUSample).PeriodS; p != 0 || bytes.Contains(envs[0].Data, []byte("period_s")) {
		t.Errorf("period_s %v in %s, want none", p, envs[0].Data)
	}
}

func TestEnvelopesRoundTrip(t *testing.T) {
	samples := parse(t, "recorded/l40s-idle-node.prom", "recorded/t4-busy-no-help.prom",
		"derived/l40s-time-sliced.prom", "derived/a100-mig.prom", "derived/l40s-hostname-lowercase.prom",
		"derived/t4-empty-pod-labels.prom", "derived/t4-old-pod-labels.prom")
	envs, err := dcgm.Envelopes(samples, "lab", "collector/test", "", scrapedAt, seenAt, cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != len(samples) {
		t.Fatalf("%d envelopes for %d samples", len(envs), len(samples))
	}
	for _, env := range envs {
		got := eventstest.RoundTrip(t, env)
		if diff := cmp.Diff(env, got, cmpopts.IgnoreFields(events.Envelope{}, "Raw")); diff != "" {
			t.Errorf("%s: decoded envelope (-built +decoded):\n%s", env.ID, diff)
		}
	}
}

func TestEnvelopesEdgeCases(t *testing.T) {
	metrics := map[string]float64{"DCGM_FI_DEV_GPU_UTIL": 40}
	long := strings.Repeat("n", 120)
	tests := []struct {
		name     string
		sample   dcgm.Sample
		fallback string
		res      dcgm.Resolver
		wantID   string // "" when the sample must be refused
		wantNode string
		wantPod  *events.PodRef
	}{
		{
			name:     "no hostname label: the target's node",
			sample:   dcgm.Sample{GPU: "3", UUID: "GPU-a", Metrics: metrics},
			fallback: "node-7",
			wantID:   "gpu_sample/node-7/GPU-a/1764484200123456000",
			wantNode: "node-7",
		},
		{
			name:     "hostname label wins over the target's node",
			sample:   dcgm.Sample{Node: "node-1", GPU: "3", UUID: "GPU-a", Metrics: metrics},
			fallback: "node-7",
			wantID:   "gpu_sample/node-1/GPU-a/1764484200123456000",
			wantNode: "node-1",
		},
		{
			name:     "no UUID: the index names the device",
			sample:   dcgm.Sample{Node: "node-1", GPU: "3", Metrics: metrics},
			wantID:   "gpu_sample/node-1/gpu3/1764484200123456000",
			wantNode: "node-1",
		},
		{
			name:     "resolver answers something that is not a UID",
			sample:   dcgm.Sample{Node: "node-1", GPU: "0", UUID: "GPU-a", Pod: &events.PodRef{Namespace: "day20", Name: "p"}, Metrics: metrics},
			res:      podUIDs{"day20/p": "not-a-uid"},
			wantID:   "gpu_sample/node-1/GPU-a/1764484200123456000/day20/p",
			wantNode: "node-1",
		},
		{
			name:     "pod without namespace is not resolved",
			sample:   dcgm.Sample{Node: "node-1", GPU: "0", UUID: "GPU-a", Pod: &events.PodRef{Name: "p"}, Metrics: metrics},
			res:      podUIDs{"/p": uidChatA},
			wantID:   "gpu_sample/node-1/GPU-a/1764484200123456000//p",
			wantNode: "node-1",
		},
		{
			name:     "resolved pod",
			sample:   dcgm.Sample{Node: "node-1", GPU: "0", UUID: "GPU-a", Pod: &events.PodRef{Namespace: "day20", Name: "p"}, Container: "c", Metrics: metrics},
			res:      podUIDs{"day20/p": uidChatA},
			wantID:   "gpu_sample/node-1/GPU-a/1764484200123456000/day20/p/c",
			wantNode: "node-1",
			wantPod:  &events.PodRef{Namespace: "day20", Name: "p", UID: uidChatA},
		},
		{
			name:     "id too long: hashed",
			sample:   dcgm.Sample{Node: long, GPU: "0", UUID: "GPU-a", Pod: &events.PodRef{Namespace: "day20", Name: long}, Metrics: metrics},
			wantID:   "gpu_sample/sha256/",
			wantNode: long,
		},
		{name: "no node at all", sample: dcgm.Sample{GPU: "0", UUID: "GPU-a", Metrics: metrics}},
		{name: "no metrics", sample: dcgm.Sample{Node: "node-1", GPU: "0", UUID: "GPU-a"}},
		{name: "no device", sample: dcgm.Sample{Node: "node-1", Metrics: metrics}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A good sample beside it is published whatever happens to this one.
			good := dcgm.Sample{Node: "node-9", GPU: "0", UUID: "GPU-good", Metrics: metrics}
			envs, err := dcgm.Envelopes([]dcgm.Sample{tt.sample, good}, "lab", "collector/test", tt.fallback, scrapedAt, seenAt, tt.res)
			if tt.wantID == "" {
				if err == nil || len(envs) != 1 || envs[0].Node != "node-9" {
					t.Fatalf("got %d envelopes and error %v; want only the good one and an error", len(envs), err)
				}
				return
			}
			if err != nil || len(envs) != 2 {
				t.Fatalf("got %d envelopes and error %v; want 2 and none", len(envs), err)
			}
			env := envs[0]
			if !strings.HasPrefix(env.ID, tt.wantID) || (!strings.HasSuffix(tt.wantID, "/") && env.ID != tt.wantID) {
				t.Errorf("id %q, want %q", env.ID, tt.wantID)
			}
			if len(env.ID) > events.MaxIDLen {
				t.Errorf("id is %d bytes, over %d", len(env.ID), events.MaxIDLen)
			}
			if env.Node != tt.wantNode {
				t.Errorf("node %q, want %q", env.Node, tt.wantNode)
			}
			if diff := cmp.Diff(tt.wantPod, env.Pod); diff != "" {
				t.Errorf("pod (-want +got):\n%s", diff)
			}
			eventstest.RoundTrip(t, env)
		})
	}
}

func TestEnvelopesRefusesAnIncompleteCall(t *testing.T) {
	samples := parse(t, "recorded/t4-busy-no-help.prom")
	for name, call := range map[string]func() ([]*events.Envelope, error){
		"no cluster": func() ([]*events.Envelope, error) {
			return dcgm.Envelopes(samples, "", "s", "", scrapedAt, seenAt, nil)
		},
		"no source": func() ([]*events.Envelope, error) {
			return dcgm.Envelopes(samples, "lab", "", "", scrapedAt, seenAt, nil)
		},
		"no scrape time": func() ([]*events.Envelope, error) {
			return dcgm.Envelopes(samples, "lab", "s", "", time.Time{}, seenAt, nil)
		},
		"no observation": func() ([]*events.Envelope, error) {
			return dcgm.Envelopes(samples, "lab", "s", "", scrapedAt, time.Time{}, nil)
		},
	} {
		if envs, err := call(); err == nil || len(envs) != 0 {
			t.Errorf("%s: %d envelopes, error %v; want none and an error", name, len(envs), err)
		}
	}
	if envs, err := dcgm.Envelopes(nil, "", "", "", time.Time{}, time.Time{}, nil); err != nil || len(envs) != 0 {
		t.Errorf("no samples: %d envelopes, error %v; want none and no error", len(envs), err)
	}
}
