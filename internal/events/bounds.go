package events

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of a decoded envelope (docs/security.md, "Bounds at decode"). A message outside them is
// invalid, and so dead-lettered with the field and the reason: hostile but well-formed input
// cannot pin a definition in the future, blow up a projection or fill the database.
const (
	// MaxEnvelopeBytes bounds one message. An inventory of MaxInventoryPods UIDs fits.
	MaxEnvelopeBytes = 8 << 20
	// MaxNameLen bounds the envelope's names: cluster, source, node, pod namespace and name,
	// experiment name, arm and run (a Kubernetes DNS subdomain is at most 253 bytes).
	MaxNameLen = 253
	// MaxStringLen bounds every other string, and every key, in data.
	MaxStringLen = 64 << 10
	// MaxListLen bounds every list and object in data but the inventory's pod_uids.
	MaxListLen = 4096
	// MaxInventoryPods bounds the pod_uids of one inventory.
	MaxInventoryPods = 100_000
	// MaxInventoryParts bounds the parts of one chunked inventory (Inventory.Parts).
	MaxInventoryParts = 1000
	// MaxDepth bounds how deep below data a value may be nested (free-form values: an
	// experiment's fixed, arms, …).
	MaxDepth = 32
	// MaxCount bounds every integer in data but bytes_in and bytes_out: Kubernetes keeps its
	// counts (event series, restarts) in 32 bits, and so may any Postgres int column fed by
	// one. bytes_in and bytes_out may use all of int64.
	MaxCount = math.MaxInt32
	// MaxClockSkew is how far occurred_at and observed_at may lie ahead of the decoder's clock.
	MaxClockSkew = time.Hour
	// MaxDataFuture is how far a time inside data may lie ahead of the decoder's clock: a
	// pod's deletion_timestamp is its deletion plus its grace period.
	MaxDataFuture = 24 * time.Hour
)

// MinTime is the earliest time an envelope may carry, in any field.
var MinTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// DecodeOption changes how Decode reads a message.
type DecodeOption func(*decodeOptions)

type decodeOptions struct {
	now func() time.Time
	// unmarshal reads a whole JSON value into a Go value on the fast path; nil is json/v2
	// (unmarshalV2), with the payload read in the envelope's own pass when kind comes first
	// (decodeOnePass). Tests set encoding/json's (unmarshalV1 in export_test.go) to compare.
	unmarshal func([]byte, any) error
	// noHandRead leaves handRead out of the default path (tests and benchmarks set it to set
	// json/v2's one pass beside it).
	noHandRead bool
}

// WithClock sets the clock the time bounds are measured from (the receive time); the wall
// clock by default.
func WithClock(now func() time.Time) DecodeOption {
	return func(o *decodeOptions) { o.now = now }
}

// signedFields may be negative: a PriorityClass value, a container's exit code.
var signedFields = map[string]bool{"priority": true, "exit_code": true}

// wideFields may exceed MaxCount.
var wideFields = map[string]bool{"bytes_in": true, "bytes_out": true}

// checkNames bounds the envelope's own strings (an absent pod or experiment's are "").
func (e *Envelope) checkNames() error {
	var pod PodRef
	if e.Pod != nil {
		pod = *e.Pod
	}
	var exp ExperimentRef
	if e.Experiment != nil {
		exp = *e.Experiment
	}
	for _, n := range [...]struct{ field, v string }{ // an array, not a slice: no allocation
		{"cluster", e.Cluster}, {"source", e.Source}, {"node", e.Node},
		{"pod.namespace", pod.Namespace}, {"pod.name", pod.Name},
		{"experiment.name", exp.Name}, {"experiment.arm", exp.Arm}, {"experiment.run", exp.Run},
	} {
		if len(n.v) > MaxNameLen {
			return invalid(n.field, "longer than %d bytes (%d)", MaxNameLen, len(n.v))
		}
	}
	return nil
}

// checkTimes keeps occurred_at and observed_at within [MinTime, now+MaxClockSkew].
func (e *Envelope) checkTimes(now time.Time) error {
	for _, t := range []struct {
		field string
		v     time.Time
	}{{"occurred_at", e.OccurredAt}, {"observed_at", e.ObservedAt}} {
		if err := inWindow(t.field, t.v, now, MaxClockSkew); err != nil {
			return err
		}
	}
	return nil
}

func inWindow(field string, t, now time.Time, ahead time.Duration) error {
	if why := outOfWindow(t, now, ahead); why != "" {
		return invalid(field, "%s", why)
	}
	return nil
}

// outOfWindow says why t is not within [MinTime, now+ahead]; "" when it is.
func outOfWindow(t, now time.Time, ahead time.Duration) string {
	switch {
	case t.Before(MinTime):
		return t.Format(time.RFC3339Nano) + " is before " + MinTime.Format(time.RFC3339)
	case t.After(now.Add(ahead)):
		return t.Format(time.RFC3339Nano) + " is more than " + ahead.String() + " ahead of the receive time " + now.UTC().Format(time.RFC3339)
	}
	return ""
}

// checkData walks a decoded payload and applies the bounds of data: string and list lengths,
// nesting, integer ranges and the time window. Errors name the JSON path of the value.
func checkData(payload any, now time.Time) error {
	c := dataChecker{now: now, path: make([]pathSeg, 0, 8)}
	return c.value(reflect.ValueOf(payload), "")
}

// dataChecker keeps the path to the value it is at as a stack of segments, rendered only
// for an error: building path strings for every value would cost more than the checks.
type dataChecker struct {
	now  time.Time
	path []pathSeg
}

// pathSeg is one step of a JSON path: a field name, a list index (name "") or a map key.
type pathSeg struct {
	name  string
	index int
	key   string
	isKey bool
}

func (c *dataChecker) fail(format string, args ...any) error {
	var b strings.Builder
	b.WriteString("data")
	for _, s := range c.path {
		switch {
		case s.isKey:
			b.WriteString("[" + quoteKey(s.key) + "]")
		case s.name == "":
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		default:
			b.WriteString("." + s.name)
		}
	}
	return invalid(b.String(), format, args...)
}

// field is a struct field the checker visits: its index and JSON name. An inline field
// (tagged "-" or untagged: the typed definition's Extra keys, prose Text and word lists, which
// their types marshal themselves) is checked at its struct's own path.
type field struct {
	index  int
	name   string
	inline bool
}

// rawType is a value kept as it came (the definition's unknown keys): checked once decoded.
var rawType = reflect.TypeOf(json.RawMessage(nil))

var armType = reflect.TypeOf(ArmSpec{})

// fieldCache maps a struct type to its JSON fields (the payload types are few and fixed).
var fieldCache sync.Map

func fieldsOf(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported():
		case name == "" || name == "-":
			out = append(out, field{index: i, inline: true})
		default:
			out = append(out, field{index: i, name: name})
		}
	}
	fieldCache.Store(t, out)
	return out
}

// value checks v, found under the JSON name name (its field's; "" inside lists and maps).
func (c *dataChecker) value(v reflect.Value, name string) error {
	if len(c.path) > MaxDepth {
		return c.fail("nested deeper than %d levels", MaxDepth)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return c.value(v.Elem(), name)
	case reflect.Struct:
		if v.Type() == timeType {
			if why := outOfWindow(v.Interface().(time.Time), c.now, MaxDataFuture); why != "" {
				return c.fail("%s", why)
			}
			return nil
		}
		if v.Type() == armType && v.Interface().(ArmSpec).Bare {
			// A bare arm is its name on the wire.
			return c.value(v.FieldByName("Name"), name)
		}
		for _, f := range fieldsOf(v.Type()) {
			if f.inline {
				if err := c.value(v.Field(f.index), name); err != nil {
					return err
				}
				continue
			}
			c.path = append(c.path, pathSeg{name: f.name})
			if err := c.value(v.Field(f.index), f.name); err != nil {
				return err
			}
			c.path = c.path[:len(c.path)-1]
		}
	case reflect.String:
		if n := v.Len(); n > MaxStringLen {
			return c.fail("longer than %d bytes (%d)", MaxStringLen, n)
		}
	case reflect.Slice:
		if v.Type() == rawType {
			var decoded any
			if json.Unmarshal(v.Bytes(), &decoded) != nil {
				return c.fail("not JSON")
			}
			return c.value(reflect.ValueOf(decoded), name)
		}
		limit := MaxListLen
		if name == "pod_uids" && len(c.path) == 1 {
			limit = MaxInventoryPods
		}
		n := v.Len()
		if n > limit {
			return c.fail("more than %d items (%d)", limit, n)
		}
		if n == 0 || v.Type().Elem().Kind() == reflect.Bool || v.Type().Elem().Kind() == reflect.Float64 {
			return nil
		}
		for i := 0; i < n; i++ {
			c.path = append(c.path, pathSeg{index: i})
			if err := c.value(v.Index(i), ""); err != nil {
				return err
			}
			c.path = c.path[:len(c.path)-1]
		}
	case reflect.Map:
		if n := v.Len(); n > MaxListLen {
			return c.fail("more than %d entries (%d)", MaxListLen, n)
		}
		it := v.MapRange()
		for it.Next() {
			key := it.Key().String()
			c.path = append(c.path, pathSeg{key: key, isKey: true})
			if len(key) > MaxStringLen {
				return c.fail("key longer than %d bytes (%d)", MaxStringLen, len(key))
			}
			if err := c.value(it.Value(), ""); err != nil {
				return err
			}
			c.path = c.path[:len(c.path)-1]
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := v.Int()
		switch {
		case n < 0 && !signedFields[name]:
			return c.fail("negative (%d)", n)
		case n > MaxCount && !wideFields[name]:
			return c.fail("larger than %d (%d)", MaxCount, n)
		}
	}
	return nil
}

// quoteKey quotes a map key for an error path, shortened: keys may be long and hostile.
func quoteKey(k string) string {
	const keep = 64
	if len(k) > keep {
		k = k[:keep] + "…"
	}
	return strconv.Quote(k)
}

// normaliseUIDs lower-cases every pod UID an envelope carries (pod.uid, data.related.uid,
// inventory pod_uids): Kubernetes writes them in lower case, and one pod must be one row
// however a source spelt its UID.
func (e *Envelope) normaliseUIDs() {
	if e.Pod != nil {
		e.Pod.UID = strings.ToLower(e.Pod.UID)
	}
	switch p := e.Payload.(type) {
	case *K8sEvent:
		if p.Related != nil {
			p.Related.UID = strings.ToLower(p.Related.UID)
		}
	case *Inventory:
		for i, uid := range p.PodUIDs {
			p.PodUIDs[i] = strings.ToLower(uid)
		}
	}
}
