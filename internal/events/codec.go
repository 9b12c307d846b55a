package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// ErrInvalid is matched (errors.Is) by every decoding and validation error: the message is
// poison and must be dead-lettered, not retried.
var ErrInvalid = errors.New("invalid envelope")

// ValidationError says which field of an envelope is wrong and why. Field is a JSON path such
// as "data.conditions[1].last_transition_time"; it is empty when the message as a whole is bad.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return "invalid envelope: " + e.Reason
	}
	return fmt.Sprintf("invalid envelope: %s: %s", e.Field, e.Reason)
}

// Is makes every ValidationError match ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// maxReason bounds a ValidationError's reason: reasons quote values, which may be hostile and
// long, and end up in logs and dead letters.
const maxReason = 1024

func invalid(field, format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	if len(reason) > maxReason {
		cut := maxReason
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut] + "…"
	}
	return &ValidationError{Field: field, Reason: reason}
}

// Decode parses and validates one envelope. Times are truncated to the microsecond, the
// precision Postgres keeps, so a decoded envelope and its stored copy compare equal. It also
// enforces the bounds of bounds.go (times within a window of the receive time, the clock of
// WithClock; lengths; integer ranges) and lower-cases pod UIDs. Pod snapshots, requests, GPU
// samples and scheduler events as schedlens' writers send them are read by handRead, without
// reflection; every other message, and any it declines, by json/v2 (docs/architecture.md#decoding).
func Decode(b []byte, opts ...DecodeOption) (*Envelope, error) {
	o := decodeOptions{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, invalid("", "empty message")
	}
	if len(b) > MaxEnvelopeBytes {
		return nil, invalid("", "larger than %d bytes (%d)", MaxEnvelopeBytes, len(b))
	}
	if !utf8.Valid(b) {
		return nil, invalid("", "not valid UTF-8")
	}
	if why := unstorableEscape(b); why != "" {
		return nil, invalid("", "%s", why)
	}
	now := o.now()
	var env Envelope
	var read any      // the payload, when the envelope's first pass read it
	var inBounds bool // read is within data's bounds: handRead checked them
	if o.unmarshal == nil {
		o.unmarshal = unmarshalV2
		if !o.noHandRead {
			read = handRead(b, &env, now)
			inBounds = read != nil
		}
		if read == nil {
			env = Envelope{}
			if read = decodeOnePass(b, &env); read == nil {
				env = Envelope{}
			}
		}
	}
	if read == nil {
		if err := decodeFast(o.unmarshal, b, &env, ""); err != nil {
			return nil, err
		}
	}
	env.Raw = b
	if err := env.validate(); err != nil {
		return nil, err
	}
	if err := env.checkNames(); err != nil {
		return nil, err
	}
	if err := env.checkTimes(now); err != nil {
		return nil, err
	}
	payload, err := decodePayload(o.unmarshal, env.Kind, env.Data, read)
	if err != nil {
		return nil, err
	}
	if !inBounds {
		if err := checkData(payload, now); err != nil {
			return nil, err
		}
	}
	env.Payload = payload
	env.normaliseUIDs()
	if r, ok := payload.(*Request); ok && env.Pod == nil && r.PodIP == "" {
		return nil, invalid("pod", "a request names no pod and no data.pod_ip")
	}
	env.OccurredAt = env.OccurredAt.Truncate(time.Microsecond).UTC()
	env.ObservedAt = env.ObservedAt.Truncate(time.Microsecond).UTC()
	return &env, nil
}

// Encode renders an envelope as one line of JSON (no trailing newline). When Payload is set it
// is marshalled into Data; otherwise Data is written as it is.
func Encode(env *Envelope) ([]byte, error) {
	e := *env
	if e.V == 0 {
		e.V = Version
	}
	if e.Payload != nil {
		data, err := json.Marshal(e.Payload)
		if err != nil {
			return nil, fmt.Errorf("encode %s payload: %w", e.Kind, err)
		}
		e.Data = data
	}
	b, err := json.Marshal(&e)
	if err != nil {
		return nil, fmt.Errorf("encode envelope %s: %w", e.ID, err)
	}
	return b, nil
}

func (e *Envelope) validate() error {
	switch {
	case e.V == 0:
		return invalid("v", "missing")
	case e.V != Version:
		return invalid("v", "unsupported version %d (want %d)", e.V, Version)
	case e.ID == "":
		return invalid("id", "missing")
	case len(e.ID) > MaxIDLen:
		return invalid("id", "longer than %d bytes", MaxIDLen)
	case e.Kind == "":
		return invalid("kind", "missing")
	case !e.Kind.Valid():
		return invalid("kind", "unknown kind %q", e.Kind)
	case e.Cluster == "":
		return invalid("cluster", "missing")
	case !validToken(e.Cluster):
		return invalid("cluster", "%q cannot be a subject token (no '.', '*', '>' or spaces)", e.Cluster)
	case e.Source == "":
		return invalid("source", "missing")
	case e.OccurredAt.IsZero():
		return invalid("occurred_at", "missing")
	case e.ObservedAt.IsZero():
		return invalid("observed_at", "missing")
	case len(e.Data) == 0 || bytes.Equal(e.Data, []byte("null")):
		return invalid("data", "missing")
	case e.Data[0] != '{':
		return invalid("data", "must be an object")
	}
	if e.Pod != nil {
		switch {
		case e.Pod.UID == "":
			return invalid("pod.uid", "missing")
		case !ValidUID(e.Pod.UID):
			return invalid("pod.uid", "%q is not a Kubernetes UID", e.Pod.UID)
		case e.Pod.Name == "":
			return invalid("pod.name", "missing")
		case e.Pod.Namespace == "":
			return invalid("pod.namespace", "missing")
		}
	}
	switch e.Kind {
	case KindPodStatus:
		if e.Pod == nil {
			return invalid("pod", "required for %s", e.Kind)
		}
	case KindNodeStatus, KindGPUSample:
		if e.Node == "" {
			return invalid("node", "required for %s", e.Kind)
		}
	}
	return nil
}

// decodePayload reads data as kind's payload and validates it; read, when not nil, is the payload
// already read (decodeOnePass), to validate only.
func decodePayload(unmarshal func([]byte, any) error, kind Kind, data json.RawMessage, read any) (any, error) {
	p := read
	if p == nil {
		p = newPayload(kind)
		if err := decodeFast(unmarshal, data, p, "data"); err != nil {
			return nil, err
		}
	}
	if v, ok := p.(interface{ validate() error }); ok {
		if err := v.validate(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// newPayload is a new payload of kind (nil for an unknown kind).
func newPayload(kind Kind) any {
	var p any
	switch kind {
	case KindK8sEvent:
		p = &K8sEvent{}
	case KindPodStatus:
		p = &PodStatus{}
	case KindNodeStatus:
		p = &NodeStatus{}
	case KindGPUSample:
		p = &GPUSample{}
	case KindRequest:
		p = &Request{}
	case KindExperiment:
		p = &Experiment{}
	case KindInventory:
		p = &Inventory{}
	case KindHeartbeat:
		p = &Heartbeat{}
	case KindWorkloadStatus:
		p = &WorkloadStatus{}
	case KindLabelRegistry:
		p = &LabelRegistry{}
	}
	return p
}

func (p *LabelRegistry) validate() error {
	switch {
	case p.Namespace == "":
		return invalid("data.namespace", "missing")
	case p.Name == "":
		return invalid("data.name", "missing")
	}
	for i, l := range p.Labels {
		if l.Key == "" {
			return invalid(fmt.Sprintf("data.labels[%d].key", i), "missing")
		}
	}
	return nil
}

func (p *K8sEvent) validate() error {
	switch {
	case p.Reason == "":
		return invalid("data.reason", "missing")
	case p.Count < 0:
		return invalid("data.count", "negative (%d)", p.Count)
	}
	return nil
}

func (p *PodStatus) validate() error {
	switch p.Phase {
	case "":
		return invalid("data.phase", "missing")
	case PhasePending, PhaseRunning, PhaseSucceeded, PhaseFailed, PhaseUnknown:
	default:
		return invalid("data.phase", "unknown phase %q", p.Phase)
	}
	for i, c := range p.Conditions {
		if c.Type == "" {
			return invalid(fmt.Sprintf("data.conditions[%d].type", i), "missing")
		}
		if c.Status != "True" && c.Status != "False" && c.Status != "Unknown" {
			return invalid(fmt.Sprintf("data.conditions[%d].status", i), "want True, False or Unknown, got %q", c.Status)
		}
	}
	for i, c := range p.Containers {
		if c.RestartCount < 0 {
			return invalid(fmt.Sprintf("data.containers[%d].restart_count", i), "negative (%d)", c.RestartCount)
		}
	}
	return nil
}

func (p *GPUSample) validate() error {
	if p.GPU == "" && p.UUID == "" {
		return invalid("data.uuid", "missing (and no gpu index)")
	}
	if len(p.Metrics) == 0 {
		return invalid("data.metrics", "missing")
	}
	return nil
}

func (p *Request) validate() error {
	if p.LatencyMS < 0 {
		return invalid("data.latency_ms", "negative (%g)", p.LatencyMS)
	}
	return nil
}

// validate requires the name, the experiment's identity. A value of another field that does not
// fit it (an alpha of 2, a repeats of "three") is no reason to refuse the definition: decoding
// kept it in Extra, and Misfits names it.
func (p *Experiment) validate() error {
	if p.Name == "" {
		return invalid("data.name", "missing")
	}
	return nil
}

func (p *WorkloadStatus) validate() error {
	switch p.Kind {
	case WorkloadDeployment, WorkloadReplicaSet, WorkloadStatefulSet:
	default:
		return invalid("data.kind", "want Deployment, ReplicaSet or StatefulSet, got %q", p.Kind)
	}
	switch {
	case p.Namespace == "":
		return invalid("data.namespace", "missing")
	case p.Name == "":
		return invalid("data.name", "missing")
	case p.UID != "" && !ValidUID(p.UID):
		return invalid("data.uid", "%q is not a Kubernetes UID", p.UID)
	case p.Replicas != nil && *p.Replicas < 0:
		return invalid("data.replicas", "negative (%d)", *p.Replicas)
	}
	return nil
}

func (p *Inventory) validate() error {
	if p.PodUIDs == nil {
		return invalid("data.pod_uids", "missing")
	}
	switch {
	case p.Parts == 0 && p.Part != 0:
		return invalid("data.part", "%d without data.parts", p.Part)
	case p.Parts < 0 || p.Parts > MaxInventoryParts:
		return invalid("data.parts", "want 1 to %d, got %d", MaxInventoryParts, p.Parts)
	case p.Parts > 0 && (p.Part < 1 || p.Part > p.Parts):
		return invalid("data.part", "want 1 to %d (data.parts), got %d", p.Parts, p.Part)
	}
	for i, uid := range p.PodUIDs {
		if !ValidUID(uid) {
			return invalid(fmt.Sprintf("data.pod_uids[%d]", i), "%q is not a Kubernetes UID", uid)
		}
	}
	return nil
}

func (p *Heartbeat) validate() error {
	if p.Since.IsZero() {
		return invalid("data.since", "missing")
	}
	return nil
}

// ValidUID reports whether s has the shape of a Kubernetes UID (an RFC 4122 UUID string).
func ValidUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

var timeType = reflect.TypeOf(time.Time{})

// v1Semantics reads JSON as encoding/json does (case-insensitive names, duplicate names the
// last wins, …): json/v2 with these options is encoding/json's Unmarshal, in one pass. But for
// its errors: encoding/json's way of reporting them scans the whole value for syntax errors
// before decoding it (19 % of Decode), and Decode never shows json/v2's error — on any failure
// it works out its own (decodeFast) — so that scan is left out. What succeeds reads the same.
var v1Semantics = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv1.ReportErrorsWithLegacySemantics(false))

// unmarshalV2 is the fast path's reader: go-json-experiment's json/v2 (the implementation of
// Go's encoding/json/v2) with encoding/json's semantics. One pass over the input, about twice
// as fast as encoding/json on the correlator's envelopes (BenchmarkDecodeAlternatives,
// docs/architecture.md#decoding).
func unmarshalV2(raw []byte, dst any) error { return jsonv2.Unmarshal(raw, dst, v1Semantics) }

// decodeOnePass reads an envelope and, when its kind comes before its data (as every schedlens
// writer puts it), its payload in the same pass: data is read straight into the kind's payload
// instead of being scanned into a copy that is then read again, and env.Data is the slice of b
// the payload was read from. It answers that payload, or nil when it did not read one — data
// before kind, data not an object, an unknown kind, or any error: the caller then reads the
// envelope the two-pass way, which says what is wrong. (FuzzDecode holds the two ways to the
// same envelopes.)
func decodeOnePass(b []byte, env *Envelope) any {
	w := onePassEnvelope{Envelope: env}
	w.Data.env, w.Data.b = env, b
	if jsonv2.Unmarshal(b, &w, v1Semantics) != nil || w.Data.payload == nil || w.Data.kind != env.Kind {
		return nil // a kind after data may have changed the payload's type (the last name wins)
	}
	env.Data = w.Data.raw
	return w.Data.payload
}

// onePassEnvelope is an Envelope whose data field (its own, at the top, so it hides the
// Envelope's) reads the payload as it goes.
type onePassEnvelope struct {
	*Envelope
	Data onePassData `json:"data"`
}

// onePassData reads an envelope's data into the payload of the kind read so far: a method of
// the field's own type, which json/v2 finds once per type, not a per-call unmarshaler looked up
// for every value.
type onePassData struct {
	env     *Envelope
	b       []byte // the whole envelope
	raw     json.RawMessage
	payload any
	kind    Kind
}

func (d *onePassData) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	d.payload = nil
	p := newPayload(d.env.Kind)
	if p == nil || dec.PeekKind() != '{' {
		return dec.SkipValue() // read the two-pass way
	}
	start := dec.InputOffset()
	if err := jsonv2.UnmarshalDecode(dec, p); err != nil {
		return err
	}
	d.raw = bytes.TrimLeft(d.b[start:dec.InputOffset()], " \t\r\n:")
	d.payload, d.kind = p, d.env.Kind
	return nil
}

// decodeFast reads raw into dst with unmarshal; when that fails it says why with the path of
// the field at fault: "not valid JSON", or decodeObject's field by field reading.
func decodeFast(unmarshal func([]byte, any) error, raw []byte, dst any, path string) error {
	if unmarshal(raw, dst) == nil {
		return nil
	}
	if !json.Valid(raw) {
		return invalid(path, "not valid JSON")
	}
	reflect.ValueOf(dst).Elem().SetZero()
	return decodeObject(raw, dst, path)
}

// decodeObject fills the struct dst points to from a JSON object field by field, so that a type
// error names the exact path of the field (encoding/json loses it for time and custom types).
// Fields the struct does not declare are ignored here and kept in Envelope.Raw.
func decodeObject(raw []byte, dst any, path string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return invalid(path, "want an object, got %s", jsonType(raw))
	}
	v := reflect.ValueOf(dst).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		val, ok := fields[name]
		if !ok || bytes.Equal(val, []byte("null")) {
			continue
		}
		if err := decodeValue(val, v.Field(i), join(path, name)); err != nil {
			return err
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

func decodeValue(raw json.RawMessage, v reflect.Value, path string) error {
	t := v.Type()
	elem := t
	if t.Kind() == reflect.Pointer {
		elem = t.Elem()
	}
	switch {
	case reflect.PointerTo(elem).Implements(unmarshalerType) && elem != timeType:
		// A type that reads itself (a definition's fixed, metrics, arms): its own error.
		if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
			return invalid(path, "%v", err)
		}
		return nil
	case elem.Kind() == reflect.Struct && elem != timeType:
		target := reflect.New(elem)
		if err := decodeObject(raw, target.Interface(), path); err != nil {
			return err
		}
		setValue(v, target)
		return nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return invalid(path, "want an array, got %s", jsonType(raw))
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, item := range items {
			if err := decodeValue(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
		var te *json.UnmarshalTypeError
		var pe *time.ParseError
		switch {
		case errors.As(err, &te):
			field := path
			if te.Field != "" {
				field = join(path, te.Field)
			}
			return invalid(field, "want %s, got %s", te.Type, te.Value)
		case errors.As(err, &pe):
			return invalid(path, "not an RFC 3339 time: %s", raw)
		default:
			return invalid(path, "%v", err)
		}
	}
	return nil
}

func setValue(v, ptr reflect.Value) {
	if v.Kind() == reflect.Pointer {
		v.Set(ptr)
		return
	}
	v.Set(ptr.Elem())
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func jsonType(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// unstorableEscape returns why a JSON text cannot be stored as Postgres jsonb although Go
// accepts it: a \u0000 escape, or a UTF-16 surrogate escape without its pair. "" when neither.
func unstorableEscape(b []byte) string {
	for i := 0; i+6 <= len(b); i++ {
		k := bytes.IndexByte(b[i:], '\\') // the next escape, found a word at a time
		if k < 0 {
			return ""
		}
		if i += k; i+6 > len(b) {
			return ""
		}
		if b[i+1] != 'u' {
			i++ // skip the escaped character, which may itself be a backslash
			continue
		}
		r, ok := hex4(b[i+2 : i+6])
		switch {
		case !ok:
		case r == 0:
			return `contains \u0000, which Postgres jsonb cannot store`
		case r >= 0xD800 && r <= 0xDBFF:
			if i+12 > len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
				return "contains an unpaired UTF-16 surrogate escape, which Postgres jsonb cannot store"
			}
			if lo, ok := hex4(b[i+8 : i+12]); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return "contains an unpaired UTF-16 surrogate escape, which Postgres jsonb cannot store"
			}
			i += 6
		case r >= 0xDC00 && r <= 0xDFFF:
			return "contains an unpaired UTF-16 surrogate escape, which Postgres jsonb cannot store"
		}
		i += 5
	}
	return ""
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
