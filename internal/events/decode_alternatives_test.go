package events_test

import (
	stdjson "encoding/json"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1opts "github.com/go-json-experiment/json/v1"
	goccy "github.com/goccy/go-json"
	segment "github.com/segmentio/encoding/json"

	"github.com/schedlens/schedlens/internal/events"
)

// decodeMix is the correlator's mix by count at the reference cluster, by fixture: pod
// snapshots, requests, GPU samples and scheduler events.
var decodeMix = []string{podStatusJSON, requestJSON, requestJSON, requestJSON, gpuSampleJSON, gpuSampleJSON, scheduledJSON, failedSchedulingJSON}

// payloadOf is a fresh payload for an envelope kind, as events.Decode picks it.
func payloadOf(k events.Kind) any {
	switch k {
	case events.KindPodStatus:
		return &events.PodStatus{}
	case events.KindRequest:
		return &events.Request{}
	case events.KindGPUSample:
		return &events.GPUSample{}
	default:
		return &events.K8sEvent{}
	}
}

// BenchmarkDecodeAlternatives decodes the same envelopes, envelope then typed payload, with each
// JSON library considered for the correlator (docs/architecture.md#decoding): events.Decode as
// it is (with its checks; reading the payload again from data; and with encoding/json as
// before json/v2), and the bare two-step decode with encoding/json, json/v2 (go-json-experiment)
// with its own semantics, with v1 semantics and with v1 semantics but for the syntax prescan of
// v1's error reporting, goccy/go-json and segmentio/encoding. MB/s is over the envelopes' bytes.
func BenchmarkDecodeAlternatives(b *testing.B) {
	var size int64
	for _, m := range decodeMix {
		size += int64(len(m))
	}
	msgs := make([][]byte, len(decodeMix))
	for i, m := range decodeMix {
		msgs[i] = []byte(m)
	}
	type unmarshal func([]byte, any) error
	twoStep := func(u unmarshal) func(*testing.B) {
		return func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				for _, m := range msgs {
					var env events.Envelope
					if err := u(m, &env); err != nil {
						b.Fatal(err)
					}
					if err := u(env.Data, payloadOf(env.Kind)); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
	v1sem := jsonv1opts.DefaultOptionsV1()
	v1semNoPrescan := jsonv2.JoinOptions(v1sem, jsonv1opts.ReportErrorsWithLegacySemantics(false))
	decode := func(d func([]byte, ...events.DecodeOption) (*events.Envelope, error)) func(*testing.B) {
		return func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				for _, m := range msgs {
					if _, err := d(m); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	}
	b.Run("events.Decode", decode(events.Decode))
	b.Run("events.Decode-json-v2-one-pass", decode(events.DecodeJSONv2))
	b.Run("events.Decode-two-pass", decode(events.DecodeTwoPass))
	b.Run("events.Decode-encoding-json", decode(events.DecodeV1))
	b.Run("encoding-json", twoStep(stdjson.Unmarshal))
	b.Run("json-v2", twoStep(func(in []byte, out any) error { return jsonv2.Unmarshal(in, out) }))
	b.Run("json-v2-v1-semantics", twoStep(func(in []byte, out any) error { return jsonv2.Unmarshal(in, out, v1sem) }))
	b.Run("json-v2-v1-semantics-no-prescan", twoStep(func(in []byte, out any) error { return jsonv2.Unmarshal(in, out, v1semNoPrescan) }))
	b.Run("goccy-go-json", twoStep(goccy.Unmarshal))
	b.Run("segmentio-encoding", twoStep(segment.Unmarshal))
}
