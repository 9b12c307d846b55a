package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Experiment is an experiment definition, as in the experiment ConfigMap (experiment): the seed's
// change / fixed / metrics / repeats, plus what a comparison needs. Keys this version does not
// know are kept in Extra and written back, so a definition passes through unchanged.
type Experiment struct {
	Name    string    `json:"name"`
	Change  string    `json:"change,omitempty"`
	Fixed   *Workload `json:"fixed,omitempty"`
	Metrics *Words    `json:"metrics,omitempty"`
	Repeats int       `json:"repeats,omitempty"`
	// Baseline is the arm the others are compared with.
	Baseline   string         `json:"baseline,omitempty"`
	Arms       []ArmSpec      `json:"arms,omitempty"`
	Thresholds map[string]any `json:"thresholds,omitempty"`
	// Margins are equivalence margins per metric or metric word (a number in the metric's unit,
	// or "10%" of the baseline); Alpha the family-wise error rate of the verdicts (default 0.05).
	// Both are schedlens additions.
	Margins map[string]any `json:"margins,omitempty"`
	Alpha   float64        `json:"alpha,omitempty"`
	// Errors lists values of the definition that could not be parsed (kept raw in their field).
	Errors []string `json:"errors,omitempty"`
	// Extra holds the keys this version does not know.
	Extra map[string]json.RawMessage `json:"-"`
}

// Workload is what every arm runs unchanged (the definition's `fixed`): the image, the model,
// the input, the pods per arm and run, and the representative request the prober sends. The
// seed writes it as prose ("image, model, input"): then Text holds it and the fields are empty.
type Workload struct {
	Image   string        `json:"image,omitempty"`
	Model   string        `json:"model,omitempty"`
	Input   string        `json:"input,omitempty"`
	Pods    int           `json:"pods,omitempty"`
	Request *FixedRequest `json:"request,omitempty"`
	Text    string        `json:"-"`
	// Extra holds the other keys, and known ones whose value does not fit its field.
	Extra map[string]json.RawMessage `json:"-"`
}

// FixedRequest is the experiment's fixed representative request (fixed.request of its
// definition): what the prober sends to each of the experiment's pods, on the pod's own IP
// (FixedRequestOf checks it; URL builds its target).
type FixedRequest struct {
	Method string `json:"method,omitempty"`
	// Port is 1..65535, also read from a string ("8000"), as YAML may give it; another value
	// is kept in Extra.
	Port int `json:"port,omitempty"`
	// Path is an absolute path with an optional query ("/v1/infer?model=a"), never a URL:
	// the host is always the pod's.
	Path  string                     `json:"path,omitempty"`
	Body  string                     `json:"body,omitempty"`
	Extra map[string]json.RawMessage `json:"-"`
}

// ArmSpec is one arm of a definition: its name and description; placement rules and the like
// are kept in Extra (the lab reads them). An arm given as a bare name is Bare.
type ArmSpec struct {
	Name        string                     `json:"name"`
	Description string                     `json:"description,omitempty"`
	Bare        bool                       `json:"-"`
	Extra       map[string]json.RawMessage `json:"-"`
}

// Words is a list of names (the definition's `metrics`), given as a list or as one
// comma-separated string (then Text keeps it, to be written back as it came).
type Words struct {
	List []string
	Text string
}

// ArmNames lists the names of the definition's arms.
func (e *Experiment) ArmNames() []string {
	out := make([]string, 0, len(e.Arms))
	for _, a := range e.Arms {
		out = append(out, a.Name)
	}
	return out
}

// UnmarshalJSON reads a definition, keeping unknown keys.
func (e *Experiment) UnmarshalJSON(b []byte) error {
	type plain Experiment
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	extra, err := unknownKeys(b, reflect.TypeOf(p))
	if err != nil {
		return err
	}
	*e = Experiment(p)
	e.Extra = extra
	return nil
}

// MarshalJSON writes the definition with its unknown keys.
func (e Experiment) MarshalJSON() ([]byte, error) {
	type plain Experiment
	return withExtra(plain(e), e.Extra)
}

// UnmarshalJSON reads a workload object (leniently: a value that does not fit its field is kept
// in Extra) or a prose string.
func (w *Workload) UnmarshalJSON(b []byte) error {
	*w = Workload{}
	if s, ok := asString(b); ok {
		w.Text = s
		return nil
	}
	return lenient(b, w, &w.Extra, "fixed")
}

// MarshalJSON writes the workload as it came: an object, or the prose string.
func (w Workload) MarshalJSON() ([]byte, error) {
	if w.Text != "" {
		return json.Marshal(w.Text)
	}
	type plain Workload
	return withExtra(plain(w), w.Extra)
}

// UnmarshalJSON reads the request leniently; a port may be a number or a numeric string.
func (r *FixedRequest) UnmarshalJSON(b []byte) error {
	*r = FixedRequest{}
	if err := lenient(b, r, &r.Extra, "request"); err != nil {
		return err
	}
	if raw, ok := r.Extra["port"]; ok {
		if s, ok := asString(raw); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && validPort(n) {
				r.Port = n
				delete(r.Extra, "port")
			}
		}
	} else if r.Port != 0 && !validPort(r.Port) {
		// A number that is no port does not fit the field either: kept as it came.
		r.Extra = keep(r.Extra, "port", json.RawMessage(strconv.Itoa(r.Port)))
		r.Port = 0
	} else if r.Port == 0 && hasKey(b, "port") {
		r.Extra = keep(r.Extra, "port", json.RawMessage("0"))
	}
	return nil
}

func validPort(n int) bool { return n >= 1 && n <= 65535 }

// keep adds key to extra, making the map when there is none.
func keep(extra map[string]json.RawMessage, key string, raw json.RawMessage) map[string]json.RawMessage {
	if extra == nil {
		extra = map[string]json.RawMessage{}
	}
	extra[key] = canonical(raw)
	return extra
}

// canonical is raw as json.Marshal writes a json.RawMessage back — compacted, with <, > and &
// escaped — so that a kept value reads the same after an encode and a decode (found by
// FuzzDecode: "&" came back as "\u0026").
func canonical(raw json.RawMessage) json.RawMessage {
	var compact, escaped bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return raw
	}
	json.HTMLEscape(&escaped, compact.Bytes())
	return escaped.Bytes()
}

// hasKey reports whether object b has key.
func hasKey(b []byte, key string) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) != nil {
		return false
	}
	_, ok := fields[key]
	return ok
}

// MarshalJSON writes the request with its unknown keys.
func (r FixedRequest) MarshalJSON() ([]byte, error) {
	type plain FixedRequest
	return withExtra(plain(r), r.Extra)
}

// UnmarshalJSON reads an arm given as an object (leniently) or as its bare name.
func (a *ArmSpec) UnmarshalJSON(b []byte) error {
	*a = ArmSpec{}
	if s, ok := asString(b); ok {
		a.Name, a.Bare = s, true
		return nil
	}
	return lenient(b, a, &a.Extra, "arm")
}

// MarshalJSON writes the arm as it came.
func (a ArmSpec) MarshalJSON() ([]byte, error) {
	if a.Bare {
		return json.Marshal(a.Name)
	}
	type plain ArmSpec
	return withExtra(plain(a), a.Extra)
}

// UnmarshalJSON reads a list of names (scalars written as text) or one comma-separated string.
func (w *Words) UnmarshalJSON(b []byte) error {
	*w = Words{}
	if s, ok := asString(b); ok {
		w.Text = s
		for _, item := range strings.Split(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				w.List = append(w.List, item)
			}
		}
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return fmt.Errorf("want a list of names or a comma-separated string")
	}
	for _, it := range items {
		if s, ok := asString(it); ok {
			w.List = append(w.List, s)
		} else {
			w.List = append(w.List, string(bytes.TrimSpace(it)))
		}
	}
	return nil
}

// MarshalJSON writes the list, or the string it came as.
func (w Words) MarshalJSON() ([]byte, error) {
	if w.Text != "" {
		return json.Marshal(w.Text)
	}
	if w.List == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(w.List)
}

func asString(b []byte) (string, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(b, &s) == nil
}

// lenient fills the struct dst points to from a JSON object field by field (so dst's own
// UnmarshalJSON is not called again); a value that does not fit its field is kept in *extra with
// the keys dst does not declare. An error, prefixed with what, leaves dst as it was.
func lenient(b []byte, dst any, extra *map[string]json.RawMessage, what string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return fmt.Errorf("%s: want an object or a string", what)
	}
	v := reflect.ValueOf(dst).Elem()
	names := jsonNames(v.Type())
	kept := map[string]json.RawMessage{}
	for key, raw := range fields {
		i, ok := names[key]
		if !ok {
			kept[key] = canonical(raw)
			continue
		}
		if json.Unmarshal(raw, v.Field(i).Addr().Interface()) != nil {
			// Kept as it came; the field stays empty (a failed decode may have half-filled it,
			// and would then be written back in place of the value).
			v.Field(i).SetZero()
			kept[key] = canonical(raw)
		}
	}
	if len(kept) == 0 {
		kept = nil
	}
	*extra = kept
	return nil
}

// unknownKeys returns the keys of object b that type t does not declare.
func unknownKeys(b []byte, t reflect.Type) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	names := jsonNames(t)
	for k, raw := range fields {
		if _, ok := names[k]; ok {
			delete(fields, k)
		} else {
			fields[k] = canonical(raw)
		}
	}
	if len(fields) == 0 {
		return nil, nil
	}
	return fields, nil
}

// withExtra marshals v, then adds the extra keys it does not write itself. A kept value also
// takes the place of a field written only as its zero value: that field was emptied because the
// value did not fit it (an arm's name given as an object: found by FuzzExperimentOf).
func withExtra(v any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	for k, raw := range extra {
		if written, known := fields[k]; !known || zeroJSON(written) {
			fields[k] = raw
		}
	}
	return json.Marshal(fields)
}

// zeroJSON reports whether raw is how encoding/json writes a zero value.
func zeroJSON(raw json.RawMessage) bool {
	switch string(raw) {
	case `""`, `0`, `false`, `null`, `[]`, `{}`:
		return true
	}
	return false
}

var jsonNamesCache sync.Map // reflect.Type → map[string]int

// jsonNames maps a struct's JSON keys to field indexes.
func jsonNames(t reflect.Type) map[string]int {
	if m, ok := jsonNamesCache.Load(t); ok {
		return m.(map[string]int)
	}
	m := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	jsonNamesCache.Store(t, m)
	return m
}
