package events_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/schedlens/schedlens/internal/events"
)

// envelopeFields are the top-level keys a ValidationError may name.
var envelopeFields = map[string]bool{
	"v": true, "id": true, "kind": true, "cluster": true, "source": true, "occurred_at": true,
	"observed_at": true, "pod": true, "node": true, "experiment": true, "data": true,
}

// seedEnvelopes adds every fixture of testdata and the first lines of the recorded sample.
func seedEnvelopes(f *testing.F) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		f.Fatalf("fixtures: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, line := range sampleLines(f, 40) {
		f.Add(line)
	}
}

// sampleLines are the first max lines of the recorded sample (testdata/sample.jsonl at the
// repository's root: collector and prober messages); all of them when max is 0.
func sampleLines(tb testing.TB, max int) [][]byte {
	tb.Helper()
	sample, err := os.Open(filepath.Join("..", "..", "testdata", "sample.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	defer sample.Close()
	var out [][]byte
	sc := bufio.NewScanner(sample)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() && (max == 0 || len(out) < max) {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// FuzzDecode: any message either decodes to an envelope within the bounds whose encoding
// decodes to the same envelope and encodes to the same bytes, or is rejected with a
// ValidationError naming a field of the envelope.
func FuzzDecode(f *testing.F) {
	seedEnvelopes(f)
	f.Fuzz(checkDecode)
}

// FuzzDecodeEdit holds FuzzDecode's properties on well-formed JSON: it sets one field of a
// fixture (a dotted path, "data.containers.0.restart_count") to a JSON value (or, when value
// is not JSON, to it as a string), which reaches the validation the random bytes of
// FuzzDecode rarely get past the parser to.
func FuzzDecodeEdit(f *testing.F) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		f.Fatalf("fixtures: %v", err)
	}
	var fixtures []map[string]any
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		fixtures = append(fixtures, m)
	}
	for i, e := range []struct{ path, value string }{
		{"observed_at", `"2126-01-01T00:00:00Z"`}, {"data.count", `2147483648`}, {"pod.uid", `"B1946AC9-2F0E-4D3B-8A3C-6F1D2E7A9C41"`},
		{"data.related.uid", `"X"`}, {"data.pod_uids.1", `"6EE92199-B806-4AED-80BA-6687A24A01B2"`}, {"data.containers.0.restart_count", `-1`},
		{"data.conditions.0.last_transition_time", `"2026-11-30T04:32:22+14:00"`}, {"data.fixed.request", `{"path":"//x"}`},
		{"data.metrics.DCGM_FI_DEV_GPU_UTIL", `1e308`}, {"data.since", `"0000-01-01T00:00:00Z"`}, {"experiment", `{"name":""}`},
		{"data.labels", `{}`}, {"data.thresholds", `{}`}, {"data.latency_ms", `-0`}, {"kind", `"request"`}, {"data.scheduling.reasons.0.nodes", `1e10`},
		{"data.fixed", `["image",{"model":"m"}]`}, {"data.alpha", `2`}, {"data.repeats", `"three"`}, {"data.arms.1", `null`},
		{"data.note", `"a && b <c> \"d\"\n\u00e9\ud83d\ude00"`}, {"data.placement.required", `["x In (a) && y Exists"]`},
	} {
		f.Add(uint8(i), e.path, e.value)
	}
	f.Fuzz(func(t *testing.T, which uint8, path, value string) {
		m := deepCopy(fixtures[int(which)%len(fixtures)]).(map[string]any)
		var v any
		if json.Unmarshal([]byte(value), &v) != nil {
			v = value
		}
		set(m, strings.Split(path, "."), v)
		msg, err := json.Marshal(m)
		if err != nil {
			return
		}
		checkDecode(t, msg)
	})
}

// set puts v at path in m, creating objects on the way; a number segment indexes a list.
func set(m any, path []string, v any) {
	switch c := m.(type) {
	case map[string]any:
		if len(path) == 1 {
			c[path[0]] = v
			return
		}
		next, ok := c[path[0]]
		if !ok {
			next = map[string]any{}
			c[path[0]] = next
		}
		set(next, path[1:], v)
	case []any:
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= len(c) {
			return
		}
		if len(path) == 1 {
			c[i] = v
			return
		}
		set(c[i], path[1:], v)
	}
}

func deepCopy(v any) any {
	switch c := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(c))
		for k, x := range c {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(c))
		for i, x := range c {
			out[i] = deepCopy(x)
		}
		return out
	}
	return v
}

// checkDecode holds the codec's properties for one message.
func checkDecode(t *testing.T, msg []byte) {
	env, err := events.Decode(msg, events.WithClock(clock))
	// json/v2 with encoding/json's semantics reads every message as encoding/json did: the
	// same envelope, or the same rejection word for word.
	ref, refErr := events.DecodeV1(msg, events.WithClock(clock))
	if fmt.Sprint(err) != fmt.Sprint(refErr) {
		t.Fatalf("json/v2 says %v, encoding/json %v", err, refErr)
	}
	if diff := cmp.Diff(ref, env, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) && a.Location().String() == b.Location().String() })); diff != "" {
		t.Fatalf("json/v2 and encoding/json read the message differently (-encoding/json +json/v2):\n%s", diff)
	}
	if err != nil {
		var ve *events.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, events.ErrInvalid) || env != nil {
			t.Fatalf("rejection %T %v (envelope %v) is not a ValidationError", err, err, env)
		}
		top, _, _ := strings.Cut(ve.Field, ".")
		top, _, _ = strings.Cut(top, "[")
		if ve.Field != "" && !envelopeFields[top] || ve.Reason == "" {
			t.Fatalf("rejection names field %q, reason %q", ve.Field, ve.Reason)
		}
		return
	}
	if env.Pod != nil && env.Pod.UID != strings.ToLower(env.Pod.UID) {
		t.Fatalf("pod.uid %q not lower-cased", env.Pod.UID)
	}
	switch p := env.Payload.(type) {
	case *events.Inventory:
		for _, uid := range p.PodUIDs {
			if uid != strings.ToLower(uid) {
				t.Fatalf("inventory UID %q not lower-cased", uid)
			}
		}
	case *events.K8sEvent:
		if p.Related != nil && p.Related.UID != strings.ToLower(p.Related.UID) {
			t.Fatalf("related.uid %q not lower-cased", p.Related.UID)
		}
		if p.Count < 0 || p.Count > events.MaxCount {
			t.Fatalf("count %d accepted", p.Count)
		}
	}
	if env.OccurredAt.Before(events.MinTime) || env.ObservedAt.Before(events.MinTime) ||
		env.OccurredAt.After(received.Add(events.MaxClockSkew)) || env.ObservedAt.After(received.Add(events.MaxClockSkew)) {
		t.Fatalf("times %v, %v outside the window", env.OccurredAt, env.ObservedAt)
	}
	if err := events.CheckSubject(events.SubjectOf(env), env); err != nil {
		t.Fatalf("an accepted envelope has no valid subject: %v", err)
	}

	b, err := events.Encode(env)
	if err != nil {
		t.Fatalf("Encode of a decoded envelope: %v", err)
	}
	again, err := events.Decode(b, events.WithClock(clock))
	if err != nil {
		t.Fatalf("Decode(Encode(Decode(msg))): %v\nmsg: %s\nencoded: %s", err, msg, b)
	}
	if diff := cmp.Diff(env, again, ignoreBytes, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("decode → encode → decode changed the envelope (-first +second):\n%s", diff)
	}
	b2, err := events.Encode(again)
	if err != nil {
		t.Fatalf("Encode of the second decoding: %v", err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatalf("encodings differ:\n%s\n%s", b, b2)
	}
}
