package events

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// handRead reads the envelopes the correlator sees most — pod snapshots, requests, GPU samples
// and scheduler events, kind before data as every schedlens writer puts it — in one pass over
// the bytes, with no reflection, and applies data's bounds (checkData's) as it goes. It fills env
// and answers the payload, or nil, having decided nothing, for any message it cannot vouch it
// reads exactly as json/v2 with encoding/json's semantics would:
//
//   - another kind, or data before kind;
//   - a name no field has but a field's in another case (encoding/json matches names without
//     regard to case), a name a field of this version has that handRead does not know (a field
//     added to a payload type and not here), or a repeated object, list or map field (which
//     encoding/json merges);
//   - null, an escape in a name, a map key or a time (string values are unescaped), an integer
//     with a fraction, an exponent or more than 18 digits, a value outside the bounds (the
//     strings, lists, integers and times of bounds.go);
//   - anything that is not JSON.
//
// Decode then reads the message the general way (decodeOnePass, decodePayload, checkData),
// which says what is wrong when something is. FuzzDecode holds the two ways to the same
// envelopes; TestHandReadTakesWhatWritersSend keeps the collector's, the prober's and the
// generator's messages on this one.
func handRead(b []byte, env *Envelope, now time.Time) any {
	r := handReader{b: b, now: now}
	var payload any
	var dataKind Kind // the kind data was read as: a kind after data (the last name wins) may change it
	r.object(func(name []byte) {
		switch string(name) {
		case "v":
			env.V = int(r.int(0, MaxCount))
		case "id":
			env.ID = r.str()
		case "kind":
			env.Kind = Kind(r.str())
		case "cluster":
			env.Cluster = r.str()
		case "source":
			env.Source = r.str()
		case "occurred_at":
			env.OccurredAt = r.time(false)
		case "observed_at":
			env.ObservedAt = r.time(false)
		case "pod":
			r.unset(env.Pod == nil)
			env.Pod = r.podRef()
		case "node":
			env.Node = r.str()
		case "experiment":
			r.unset(env.Experiment == nil)
			env.Experiment = &ExperimentRef{}
			e := env.Experiment
			r.object(func(name []byte) {
				switch string(name) {
				case "name":
					e.Name = r.str()
				case "arm":
					e.Arm = r.str()
				case "run":
					e.Run = r.str()
				default:
					r.other(name, experimentRefNames)
				}
			})
		case "data":
			r.unset(payload == nil)
			start := r.at()
			dataKind = env.Kind
			switch env.Kind {
			case KindPodStatus:
				payload = r.podStatus()
			case KindRequest:
				payload = r.request()
			case KindGPUSample:
				payload = r.gpuSample()
			case KindK8sEvent:
				payload = r.k8sEvent()
			default:
				r.fail()
			}
			env.Data = b[start:r.i]
		default:
			r.other(name, envelopeNames)
		}
	})
	if r.peek(); r.i != len(b) || r.bad || payload == nil || env.Kind != dataKind {
		return nil
	}
	return payload
}

// handReader is handRead's cursor. A failure moves it to the end of the input, so every read
// after it fails at once and every loop ends; bad says it happened.
type handReader struct {
	b   []byte
	i   int
	now time.Time
	bad bool
}

func (r *handReader) fail() { r.bad, r.i = true, len(r.b) }

// unset fails unless ok: an object, list or map field read a second time (encoding/json would
// merge the two).
func (r *handReader) unset(ok bool) {
	if !ok {
		r.fail()
	}
}

// peek skips white space and answers the next byte, 0 at the end.
func (r *handReader) peek() byte {
	for ; r.i < len(r.b); r.i++ {
		switch c := r.b[r.i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// at is where the next value starts.
func (r *handReader) at() int {
	r.peek()
	return r.i
}

func (r *handReader) consume(c byte) bool {
	if r.peek() != c {
		r.fail()
		return false
	}
	r.i++
	return true
}

// object reads an object, handing each member's name (not copied) to member, which reads the
// value.
func (r *handReader) object(member func(name []byte)) {
	if !r.consume('{') {
		return
	}
	if r.peek() == '}' {
		r.i++
		return
	}
	for {
		name := r.strBytes()
		if !r.consume(':') {
			return
		}
		member(name)
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return
		default:
			r.fail()
			return
		}
	}
}

// array reads a list of at most MaxListLen items, each read by item.
func (r *handReader) array(item func()) {
	if !r.consume('[') {
		return
	}
	if r.peek() == ']' {
		r.i++
		return
	}
	for n := 1; ; n++ {
		if n > MaxListLen {
			r.fail()
			return
		}
		item()
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return
		default:
			r.fail()
			return
		}
	}
}

// strBytes reads a string with no escape of at most MaxStringLen bytes, and answers its bytes,
// not copied: a name, a map key, a time.
func (r *handReader) strBytes() []byte {
	start, end, escaped := r.scanString()
	if escaped || end-start > MaxStringLen {
		r.fail()
		return nil
	}
	return r.b[start:end]
}

// scanString reads a string and answers where its contents start and end, and whether they
// hold an escape (Decode checked the message is UTF-8). It looks at eight bytes at a time for
// the quote that ends the string, a backslash or a control character.
func (r *handReader) scanString() (start, end int, escaped bool) {
	if r.peek() != '"' {
		r.fail()
		return r.i, r.i, false
	}
	start = r.i + 1
	j := start
	for ; j+8 <= len(r.b); j += 8 {
		if special(binary.LittleEndian.Uint64(r.b[j:])) != 0 {
			break
		}
	}
	for ; j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '"':
			r.i = j + 1
			return start, j, escaped
		case c == '\\':
			escaped = true
			j++ // the escaped byte (unescape checks it)
		case c < 0x20:
			r.fail()
			return r.i, r.i, false
		}
	}
	r.fail()
	return r.i, r.i, false
}

// special is not zero when a byte of w is '"', '\\' or below 0x20 (and may be for a byte of
// 0x80 or more, which the byte loop after it then reads): the zero-byte test of "Bit Twiddling
// Hacks" on w with each byte xor-ed with the quote, with the backslash, and on w itself with 0x20
// taken off each byte.
func special(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := w ^ ('"' * ones)
	s := w ^ ('\\' * ones)
	return ((q - ones) | (s - ones) | (w - 0x20*ones)) & highs
}

// str reads a string value of at most MaxStringLen bytes once unescaped (what checkData
// bounds).
func (r *handReader) str() string {
	start, end, escaped := r.scanString()
	if !escaped {
		if end-start > MaxStringLen {
			r.fail()
			return ""
		}
		return intern(r.b[start:end])
	}
	s, ok := unescape(r.b[start:end])
	if !ok || len(s) > MaxStringLen {
		r.fail()
	}
	return s
}

// unescape reads a JSON string's contents that hold escapes (events.Encode writes &, < and >
// as \u0026, \u003c and \u003e: an affinity's " && ", a URL's query). A surrogate escape must be
// half of a pair, as Decode's unstorableEscape already requires; anything else JSON does not
// allow is not ok.
func unescape(b []byte) (string, bool) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		k := bytes.IndexByte(b[i:], '\\')
		if k < 0 {
			out = append(out, b[i:]...)
			break
		}
		out = append(out, b[i:i+k]...)
		if i += k; i+1 >= len(b) {
			return "", false
		}
		switch c := b[i+1]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if i+6 > len(b) {
				return "", false
			}
			r, ok := hex4(b[i+2 : i+6])
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				if i+12 > len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
					return "", false
				}
				lo, ok := hex4(b[i+8 : i+12])
				if r = utf16.DecodeRune(r, lo); !ok || r == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			out = utf8.AppendRune(out, r)
			i += 4
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

// shortStrings interns the short strings handRead reads — phases, condition types and
// statuses, label keys and values, resource names, node names — in a direct-mapped table
// shared by every goroutine: a pod snapshot repeats them all, and json/v2 keeps a cache like
// it. A slot holds the last string hashed to it.
var shortStrings [1 << 12]atomic.Pointer[string]

var internSeed = maphash.MakeSeed()

// maxInterned is the longest string interned: longer ones (ids, notes, UIDs) seldom repeat.
const maxInterned = 24

func intern(b []byte) string {
	if len(b) == 0 || len(b) > maxInterned {
		return string(b)
	}
	h := maphash.Bytes(internSeed, b)
	slot := &shortStrings[h>>(64-12)] // the top 12 bits: len(shortStrings) is 1<<12
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}

// strs reads a list of strings.
func (r *handReader) strs() []string {
	out := []string{}
	r.array(func() { out = append(out, r.str()) })
	return out
}

// strMap reads an object of strings; encoding/json keeps the last of a repeated name, as a map
// does.
func (r *handReader) strMap() map[string]string {
	m := map[string]string{}
	r.object(func(k []byte) {
		if len(m) >= MaxListLen {
			r.fail()
			return
		}
		m[intern(k)] = r.str()
	})
	return m
}

// floatMap reads an object of numbers.
func (r *handReader) floatMap() map[string]float64 {
	m := map[string]float64{}
	r.object(func(k []byte) {
		if len(m) >= MaxListLen {
			r.fail()
			return
		}
		m[intern(k)] = r.float()
	})
	return m
}

// digits reads a JSON number's integer part (no leading zero) and answers how many digits it
// has.
func (r *handReader) digits() int {
	start := r.i
	for r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9' {
		r.i++
	}
	n := r.i - start
	if n == 0 || n > 1 && r.b[start] == '0' {
		r.fail()
	}
	return n
}

// int reads an integer within [lo, hi]: no fraction, no exponent, at most 18 digits.
func (r *handReader) int(lo, hi int64) int64 {
	neg := r.peek() == '-'
	if neg {
		r.i++
	}
	start := r.i
	if n := r.digits(); r.bad || n > 18 || r.i < len(r.b) && (r.b[r.i] == '.' || r.b[r.i]|0x20 == 'e') {
		r.fail()
		return 0
	}
	var v int64
	for _, c := range r.b[start:r.i] {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	if v < lo || v > hi {
		r.fail()
		return 0
	}
	return v
}

// count reads a count: within [0, MaxCount], as checkData bounds every integer in data but
// those signedFields and wideFields name.
func (r *handReader) count() int { return int(r.int(0, MaxCount)) }

// float reads a number, checking JSON's grammar (strconv's is wider).
func (r *handReader) float() float64 {
	start := r.at()
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	r.digits()
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		r.fraction()
	}
	if r.i < len(r.b) && r.b[r.i]|0x20 == 'e' {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		r.fraction()
	}
	if r.bad {
		return 0
	}
	f, err := strconv.ParseFloat(string(r.b[start:r.i]), 64)
	if err != nil {
		r.fail()
	}
	return f
}

// fraction reads one or more digits (a fraction's or an exponent's).
func (r *handReader) fraction() {
	start := r.i
	for r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9' {
		r.i++
	}
	if r.i == start {
		r.fail()
	}
}

func (r *handReader) bool() bool {
	switch r.peek() {
	case 't':
		return r.literal("true")
	case 'f':
		r.literal("false")
		return false
	}
	r.fail()
	return false
}

func (r *handReader) literal(word string) bool {
	if len(r.b)-r.i < len(word) || string(r.b[r.i:r.i+len(word)]) != word {
		r.fail()
		return false
	}
	r.i += len(word)
	return true
}

// time reads an RFC 3339 time as encoding/json does (time.Time's UnmarshalJSON); one in data
// must lie within [MinTime, now+MaxDataFuture], as checkData requires.
func (r *handReader) time(inData bool) time.Time {
	start := r.at()
	r.strBytes()
	var t time.Time
	if r.bad || t.UnmarshalJSON(r.b[start:r.i]) != nil || inData && outOfWindow(t, r.now, MaxDataFuture) != "" {
		r.fail()
	}
	return t
}

func (r *handReader) timePtr() *time.Time {
	t := r.time(true)
	return &t
}

// other reads the value of a member named as no field of names is: skipped, as json/v2 skips
// a name its struct lacks — unless the name might be a field's in another case or spelling
// (encoding/json's semantics match names without regard to case), or is a field's that the
// switch calling other does not read.
func (r *handReader) other(name []byte, names []string) {
	for _, c := range name {
		if c >= 0x80 {
			r.fail() // Unicode case folding: K (U+212A) is k
			return
		}
	}
	for _, n := range names {
		if looseEqual(name, n) {
			r.fail()
			return
		}
	}
	r.skip(0)
}

// looseEqual compares a name with a field's without regard to ASCII case, '-' or '_': wider
// than any rule encoding/json or json/v2 match names by, so that other declines what either
// might take for a field.
func looseEqual(name []byte, field string) bool {
	i, j := 0, 0
	for {
		for i < len(name) && (name[i] == '-' || name[i] == '_') {
			i++
		}
		for j < len(field) && (field[j] == '-' || field[j] == '_') {
			j++
		}
		if i == len(name) || j == len(field) {
			return i == len(name) && j == len(field)
		}
		if name[i]|0x20 != field[j]|0x20 { // wider than case: '@' is '`' here
			return false
		}
		i, j = i+1, j+1
	}
}

// skip reads a value no field keeps, checking its syntax (nesting within MaxDepth).
func (r *handReader) skip(depth int) {
	if depth > MaxDepth {
		r.fail()
		return
	}
	switch c := r.peek(); {
	case c == '{':
		r.object(func([]byte) { r.skip(depth + 1) })
	case c == '[':
		r.array(func() { r.skip(depth + 1) })
	case c == '"':
		r.str()
	case c == 't' || c == 'f':
		r.bool()
	case c == '-' || '0' <= c && c <= '9':
		r.float()
	default:
		r.fail() // null, or not JSON
	}
}

// The JSON names of the fields of each type handRead reads (fieldNames): a name other sees that
// is one of these, in any spelling, is a field handRead does not read, and it declines.
var (
	envelopeNames          = fieldNames[Envelope]()
	podRefNames            = fieldNames[PodRef]()
	experimentRefNames     = fieldNames[ExperimentRef]()
	podStatusNames         = fieldNames[PodStatus]()
	resourcesNames         = fieldNames[Resources]()
	conditionNames         = fieldNames[Condition]()
	containerNames         = fieldNames[ContainerStatus]()
	ownerNames             = fieldNames[Owner]()
	gpuNames               = fieldNames[GPU]()
	placementNames         = fieldNames[Placement]()
	podClaimNames          = fieldNames[PodClaim]()
	claimDeviceNames       = fieldNames[ClaimDevice]()
	scopeNames             = fieldNames[Scope]()
	requestNames           = fieldNames[Request]()
	gpuSampleNames         = fieldNames[GPUSample]()
	draDeviceNames         = fieldNames[DRADevice]()
	k8sEventNames          = fieldNames[K8sEvent]()
	schedulingFailureNames = fieldNames[SchedulingFailure]()
	reasonCountNames       = fieldNames[ReasonCount]()
	preemptionNames        = fieldNames[PreemptionAttempt]()
)

// fieldNames are the JSON names of T's fields.
func fieldNames[T any]() []string {
	return slices.Sorted(maps.Keys(jsonNames(reflect.TypeFor[T]())))
}

func (r *handReader) podRef() *PodRef {
	p := &PodRef{}
	r.object(func(name []byte) {
		switch string(name) {
		case "namespace":
			p.Namespace = r.str()
		case "name":
			p.Name = r.str()
		case "uid":
			p.UID = r.str()
		default:
			r.other(name, podRefNames)
		}
	})
	return p
}

func (r *handReader) owner() *Owner {
	o := &Owner{}
	r.object(func(name []byte) {
		switch string(name) {
		case "kind":
			o.Kind = r.str()
		case "name":
			o.Name = r.str()
		default:
			r.other(name, ownerNames)
		}
	})
	return o
}

// priority reads a PriorityClass value: an int32, which may be negative.
func (r *handReader) priority() *int32 {
	v := int32(r.int(math.MinInt32, math.MaxInt32))
	return &v
}

func (r *handReader) podStatus() *PodStatus {
	p := &PodStatus{}
	r.object(func(name []byte) {
		switch string(name) {
		case "phase":
			p.Phase = r.str()
		case "node_name":
			p.NodeName = r.str()
		case "nominated_node_name":
			p.NominatedNodeName = r.str()
		case "pod_ip":
			p.PodIP = r.str()
		case "host_ip":
			p.HostIP = r.str()
		case "labels":
			r.unset(p.Labels == nil)
			p.Labels = r.strMap()
		case "priority_class":
			p.PriorityClass = r.str()
		case "priority":
			p.Priority = r.priority()
		case "resources":
			r.unset(p.Resources == nil)
			p.Resources = r.resources()
		case "conditions":
			r.unset(p.Conditions == nil)
			p.Conditions = r.conditions()
		case "containers":
			r.unset(p.Containers == nil)
			p.Containers = r.containers()
		case "creation_timestamp":
			p.CreationTimestamp = r.timePtr()
		case "deletion_timestamp":
			p.DeletionTimestamp = r.timePtr()
		case "deleted":
			p.Deleted = r.bool()
		case "owner":
			r.unset(p.Owner == nil)
			p.Owner = r.owner()
		case "resource_version":
			p.ResourceVersion = r.str()
		case "gpu":
			r.unset(p.GPU == nil)
			p.GPU = r.gpu()
		case "placement":
			r.unset(p.Placement == nil)
			p.Placement = r.placement()
		case "scope":
			r.unset(p.Scope == nil)
			p.Scope = r.scope()
		case "scheduling_gates":
			r.unset(p.SchedulingGates == nil)
			p.SchedulingGates = r.strs()
		case "claims":
			r.unset(p.Claims == nil)
			p.Claims = r.claims()
		default:
			r.other(name, podStatusNames)
		}
	})
	return p
}

func (r *handReader) claims() []PodClaim {
	out := []PodClaim{}
	r.array(func() {
		var c PodClaim
		r.object(func(name []byte) {
			switch string(name) {
			case "name":
				c.Name = r.str()
			case "claim":
				c.Claim = r.str()
			case "template":
				c.Template = r.str()
			case "extended":
				c.Extended = r.bool()
			case "device_classes":
				r.unset(c.DeviceClasses == nil)
				c.DeviceClasses = r.strs()
			case "selectors":
				r.unset(c.Selectors == nil)
				c.Selectors = r.strs()
			case "allocated_at":
				c.AllocatedAt = r.timePtr()
			case "allocation_observed":
				c.AllocationObserved = r.timePtr()
			case "reserved_for":
				c.ReservedFor = r.count()
			case "sharing":
				c.Sharing = r.str()
			case "devices":
				r.unset(c.Devices == nil)
				c.Devices = r.claimDevices()
			default:
				r.other(name, podClaimNames)
			}
		})
		out = append(out, c)
	})
	return out
}

func (r *handReader) claimDevices() []ClaimDevice {
	out := []ClaimDevice{}
	r.array(func() {
		var d ClaimDevice
		r.object(func(name []byte) {
			switch string(name) {
			case "request":
				d.Request = r.str()
			case "device_class":
				d.DeviceClass = r.str()
			case "driver":
				d.Driver = r.str()
			case "pool":
				d.Pool = r.str()
			case "device":
				d.Device = r.str()
			case "share_id":
				d.ShareID = r.str()
			case "consumed_capacity":
				r.unset(d.ConsumedCapacity == nil)
				d.ConsumedCapacity = r.strMap()
			case "node":
				d.Node = r.str()
			case "type":
				d.Type = r.str()
			case "model":
				d.Model = r.str()
			case "uuid":
				d.UUID = r.str()
			case "mig_profile":
				d.MIGProfile = r.str()
			case "parent_uuid":
				d.ParentUUID = r.str()
			case "attributes":
				r.unset(d.Attributes == nil)
				d.Attributes = r.strMap()
			default:
				r.other(name, claimDeviceNames)
			}
		})
		out = append(out, d)
	})
	return out
}

func (r *handReader) resources() *Resources {
	res := &Resources{}
	r.object(func(name []byte) {
		switch string(name) {
		case "requests":
			r.unset(res.Requests == nil)
			res.Requests = r.strMap()
		case "limits":
			r.unset(res.Limits == nil)
			res.Limits = r.strMap()
		default:
			r.other(name, resourcesNames)
		}
	})
	return res
}

func (r *handReader) conditions() []Condition {
	out := []Condition{}
	r.array(func() {
		var c Condition
		r.object(func(name []byte) {
			switch string(name) {
			case "type":
				c.Type = r.str()
			case "status":
				c.Status = r.str()
			case "reason":
				c.Reason = r.str()
			case "last_transition_time":
				c.LastTransitionTime = r.timePtr()
			default:
				r.other(name, conditionNames)
			}
		})
		out = append(out, c)
	})
	return out
}

func (r *handReader) containers() []ContainerStatus {
	out := []ContainerStatus{}
	r.array(func() {
		var c ContainerStatus
		r.object(func(name []byte) {
			switch string(name) {
			case "name":
				c.Name = r.str()
			case "ready":
				c.Ready = r.bool()
			case "restart_count":
				c.RestartCount = r.count()
			case "state":
				c.State = r.str()
			case "reason":
				c.Reason = r.str()
			case "started_at":
				c.StartedAt = r.timePtr()
			case "exit_code":
				// Signed (signedFields), and as large as MaxCount.
				v := int(r.int(math.MinInt64, MaxCount))
				c.ExitCode = &v
			default:
				r.other(name, containerNames)
			}
		})
		out = append(out, c)
	})
	return out
}

func (r *handReader) gpu() *GPU {
	g := &GPU{}
	r.object(func(name []byte) {
		switch string(name) {
		case "resource":
			g.Resource = r.str()
		case "count":
			g.Count = int64(r.count())
		case "model":
			g.Model = r.str()
		case "sharing":
			g.Sharing = r.str()
		case "mig_profile":
			g.MIGProfile = r.str()
		case "replicas":
			g.Replicas = r.count()
		case "via":
			g.Via = r.str()
		case "uuids":
			r.unset(g.UUIDs == nil)
			g.UUIDs = r.strs()
		case "claim_pods":
			g.ClaimPods = r.count()
		default:
			r.other(name, gpuNames)
		}
	})
	return g
}

func (r *handReader) placement() *Placement {
	p := &Placement{}
	r.object(func(name []byte) {
		switch string(name) {
		case "node_selector":
			r.unset(p.NodeSelector == nil)
			p.NodeSelector = r.strMap()
		case "required":
			r.unset(p.Required == nil)
			p.Required = r.strs()
		case "preferred":
			r.unset(p.Preferred == nil)
			p.Preferred = r.strs()
		case "pod_affinity":
			p.PodAffinity = r.count()
		case "pod_anti_affinity":
			p.PodAntiAffinity = r.count()
		case "priority_class":
			p.PriorityClass = r.str()
		case "priority":
			p.Priority = r.priority()
		case "preemption_policy":
			p.PreemptionPolicy = r.str()
		case "tolerations":
			r.unset(p.Tolerations == nil)
			p.Tolerations = r.strs()
		default:
			r.other(name, placementNames)
		}
	})
	return p
}

func (r *handReader) scope() *Scope {
	s := &Scope{}
	r.object(func(name []byte) {
		switch string(name) {
		case "namespaces":
			r.unset(s.Namespaces == nil)
			s.Namespaces = r.strs()
		case "selector":
			s.Selector = r.str()
		default:
			r.other(name, scopeNames)
		}
	})
	return s
}

func (r *handReader) request() *Request {
	q := &Request{}
	r.object(func(name []byte) {
		switch string(name) {
		case "target":
			q.Target = r.str()
		case "status":
			q.Status = r.count()
		case "ok":
			q.OK = r.bool()
		case "latency_ms":
			q.LatencyMS = r.float()
		case "error":
			q.Error = r.str()
		case "bytes_out": // wideFields: all of int64 (but handRead's 18 digits)
			q.BytesOut = r.int(0, math.MaxInt64)
		case "bytes_in":
			q.BytesIn = r.int(0, math.MaxInt64)
		case "method":
			q.Method = r.str()
		case "pod_ip":
			q.PodIP = r.str()
		case "pod_ready":
			v := r.bool()
			q.PodReady = &v
		default:
			r.other(name, requestNames)
		}
	})
	return q
}

func (r *handReader) gpuSample() *GPUSample {
	s := &GPUSample{}
	r.object(func(name []byte) {
		switch string(name) {
		case "gpu":
			s.GPU = r.str()
		case "uuid":
			s.UUID = r.str()
		case "model":
			s.Model = r.str()
		case "mig_profile":
			s.MIGProfile = r.str()
		case "metrics":
			r.unset(s.Metrics == nil)
			s.Metrics = r.floatMap()
		case "period_s":
			s.PeriodS = r.float()
		case "shared_by":
			s.SharedBy = r.count()
		case "dra":
			r.unset(s.DRA == nil)
			s.DRA = r.draDevice()
		default:
			r.other(name, gpuSampleNames)
		}
	})
	return s
}

func (r *handReader) draDevice() *DRADevice {
	d := &DRADevice{}
	r.object(func(name []byte) {
		switch string(name) {
		case "claim_namespace":
			d.ClaimNamespace = r.str()
		case "claim_name":
			d.ClaimName = r.str()
		case "driver":
			d.Driver = r.str()
		case "pool":
			d.Pool = r.str()
		case "device":
			d.Device = r.str()
		case "mig_profile":
			d.MIGProfile = r.str()
		case "mig_device_uuid":
			d.MIGDeviceUUID = r.str()
		default:
			r.other(name, draDeviceNames)
		}
	})
	return d
}

func (r *handReader) k8sEvent() *K8sEvent {
	e := &K8sEvent{}
	r.object(func(name []byte) {
		switch string(name) {
		case "reason":
			e.Reason = r.str()
		case "type":
			e.Type = r.str()
		case "note":
			e.Note = r.str()
		case "reporting_controller":
			e.ReportingController = r.str()
		case "action":
			e.Action = r.str()
		case "event_uid":
			e.EventUID = r.str()
		case "count":
			e.Count = r.count()
		case "related":
			r.unset(e.Related == nil)
			e.Related = r.podRef()
		case "scheduling":
			r.unset(e.Scheduling == nil)
			e.Scheduling = r.schedulingFailure()
		default:
			r.other(name, k8sEventNames)
		}
	})
	return e
}

func (r *handReader) schedulingFailure() *SchedulingFailure {
	s := &SchedulingFailure{}
	r.object(func(name []byte) {
		switch string(name) {
		case "available":
			s.Available = r.count()
		case "total":
			s.Total = r.count()
		case "reasons":
			r.unset(s.Reasons == nil)
			s.Reasons = r.reasonCounts()
		case "preemption":
			r.unset(s.Preemption == nil)
			s.Preemption = r.preemption()
		default:
			r.other(name, schedulingFailureNames)
		}
	})
	return s
}

func (r *handReader) reasonCounts() []ReasonCount {
	out := []ReasonCount{}
	r.array(func() {
		var c ReasonCount
		r.object(func(name []byte) {
			switch string(name) {
			case "reason":
				c.Reason = r.str()
			case "nodes":
				c.Nodes = r.count()
			default:
				r.other(name, reasonCountNames)
			}
		})
		out = append(out, c)
	})
	return out
}

func (r *handReader) preemption() *PreemptionAttempt {
	p := &PreemptionAttempt{}
	r.object(func(name []byte) {
		switch string(name) {
		case "outcome":
			p.Outcome = r.str()
		case "node":
			p.Node = r.str()
		case "victims":
			p.Victims = r.count()
		case "reasons":
			r.unset(p.Reasons == nil)
			p.Reasons = r.reasonCounts()
		case "note":
			p.Note = r.str()
		default:
			r.other(name, preemptionNames)
		}
	})
	return p
}
