package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Experiment is an experiment definition, as in the experiment ConfigMap (experiment): the seed's
// change / fixed / metrics / repeats, plus what a comparison needs. Keys this version does not
// know are kept in Extra and written back, so a definition passes through unchanged.
//
// It is read leniently: a value that does not fit its field (a repeats given as "three", an
// alpha of 2, a thresholds list) is kept as it came in Extra, its field left empty, and named
// by Misfits; the rest of the definition still reads. Only the name, the experiment's
// identity, must fit: a name that is not a string fails the decoding.
type Experiment struct {
	Name    string    `json:"name"`
	Change  string    `json:"change,omitempty"`
	Fixed   *Workload `json:"fixed,omitempty"`
	Metrics *Words    `json:"metrics,omitempty"`
	// Repeats is 0 to MaxCount.
	Repeats int `json:"repeats,omitempty"`
	// Baseline is the arm the others are compared with.
	Baseline   string         `json:"baseline,omitempty"`
	Arms       []ArmSpec      `json:"arms,omitempty"`
	Thresholds map[string]any `json:"thresholds,omitempty"`
	// Margins are equivalence margins per metric or metric word (a number in the metric's unit,
	// or "10%" of the baseline); Alpha the family-wise error rate of the verdicts, in (0, 1)
	// (0: the default, 0.05). Both are schedlens additions.
	Margins map[string]any `json:"margins,omitempty"`
	Alpha   float64        `json:"alpha,omitempty"`
	// Errors lists values of the definition that could not be parsed (kept raw in their field).
	Errors []string `json:"errors,omitempty"`
	// Extra holds the keys this version does not know, and known ones whose value does not fit
	// its field (or is null), as they came.
	Extra map[string]json.RawMessage `json:"-"`
}

// Workload is what every arm runs unchanged (the definition's `fixed`): the image, the model,
// the input, the pods per arm and run, and the representative request the prober sends. The
// seed writes it as prose ("image, model, input"): then Text holds it and the fields are empty;
// given as a list (["image", "model", "input"]), List holds its items, scalars as their text.
type Workload struct {
	Image string `json:"image,omitempty"`
	Model string `json:"model,omitempty"`
	Input string `json:"input,omitempty"`
	// Pods is 0 to MaxCount.
	Pods    int           `json:"pods,omitempty"`
	Request *FixedRequest `json:"request,omitempty"`
	Text    string        `json:"-"`
	List    []string      `json:"-"`
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

// Words is a list of names (the definition's `metrics`), given as a list (scalars as their
// text) or as one comma-separated string (then Text keeps it, to be written back as it came).
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

// UnmarshalJSON reads a definition key by key: unknown keys and values that do not fit their
// field are kept in Extra (Misfits names the latter). It fails only for a value that is no
// object and for a name that is not a string (null reads as no name).
func (e *Experiment) UnmarshalJSON(b []byte) error {
	*e = Experiment{}
	if jsonType(b) != "object" {
		return &misfit{why: "want an object, got " + rawKind(b)}
	}
	if err := lenient(b, e, &e.Extra, readExperimentField); err != nil {
		return err
	}
	if raw, ok := e.Extra["name"]; ok && !isNull(raw) {
		*e = Experiment{}
		return &misfit{at: "name", why: "want a string, got " + rawKind(raw)}
	}
	return nil
}

// readExperimentField reads one known key of a definition: alpha must also lie in [0, 1).
func readExperimentField(key string, raw json.RawMessage, v reflect.Value) error {
	if key != "alpha" {
		return readField(key, raw, v)
	}
	var a float64
	if jsonType(raw) != "number" || json.Unmarshal(raw, &a) != nil || a < 0 || a >= 1 {
		return &misfit{why: "want a number in (0, 1), got " + shown(raw)}
	}
	v.SetFloat(a)
	return nil
}

// MarshalJSON writes the definition with its unknown keys.
func (e Experiment) MarshalJSON() ([]byte, error) {
	type plain Experiment
	return withExtra(plain(e), e.Extra)
}

// Misfits lists the values of the definition that did not fit their field and are kept as they
// came (in the Extra maps), each as its path and why, sorted: "alpha: want a number in (0, 1),
// got 2", "arms[1].name: want a string, got an object", "fixed.request.port: …", "repeats: want
// an integer from 0 to 2147483647, got a string". Keys the definition does not know, and null
// values, are not misfits: they are kept and say nothing wrong.
func (e *Experiment) Misfits() []string {
	out := misfitsOf(e.Extra, reflect.TypeOf(*e), readExperimentField, "")
	if e.Fixed != nil {
		out = append(out, e.Fixed.misfits("fixed")...)
	}
	for i, a := range e.Arms {
		out = append(out, misfitsOf(a.Extra, reflect.TypeOf(a), readField, fmt.Sprintf("arms[%d]", i))...)
	}
	slices.Sort(out)
	return out
}

// Problems lists every problem of the definition: its Errors (what the collector could not
// read), then its Misfits, but for those of a key an error already names (the collector keeps
// a value it could not read as it came, which is then a misfit too).
func (e *Experiment) Problems() []string {
	out := slices.Clone(e.Errors)
	named := map[string]bool{}
	for _, err := range e.Errors {
		named[topKey(err)] = true
	}
	for _, m := range e.Misfits() {
		if !named[topKey(m)] {
			out = append(out, m)
		}
	}
	return out
}

// topKey is the definition key a problem names: what precedes its first '.', '[' or ':'.
func topKey(problem string) string {
	if i := strings.IndexAny(problem, ".[:"); i >= 0 {
		return strings.TrimSpace(problem[:i])
	}
	return problem
}

// misfits lists the workload's misfits under path.
func (w *Workload) misfits(path string) []string {
	out := misfitsOf(w.Extra, reflect.TypeOf(*w), readField, path)
	if w.Request != nil {
		out = append(out, misfitsOf(w.Request.Extra, reflect.TypeOf(*w.Request), readRequestField, joinPath(path, "request"))...)
	}
	return out
}

// UnmarshalJSON reads a workload object (leniently: a value that does not fit its field is kept
// in Extra), a list of names or a prose string.
func (w *Workload) UnmarshalJSON(b []byte) error {
	*w = Workload{}
	switch jsonType(b) {
	case "string":
		w.Text, _ = asString(b)
		return nil
	case "array":
		list, err := names(b)
		w.List = list
		return err
	case "object":
		return lenient(b, w, &w.Extra, readField)
	}
	return &misfit{why: "want an object, a list or a string, got " + rawKind(b)}
}

// MarshalJSON writes the workload as it came: an object, the list or the prose string.
func (w Workload) MarshalJSON() ([]byte, error) {
	switch {
	case w.Text != "":
		return json.Marshal(w.Text)
	case w.List != nil:
		return json.Marshal(w.List)
	}
	type plain Workload
	return withExtra(plain(w), w.Extra)
}

// UnmarshalJSON reads the request leniently; a port may be a number or a numeric string.
func (r *FixedRequest) UnmarshalJSON(b []byte) error {
	*r = FixedRequest{}
	if jsonType(b) != "object" {
		return &misfit{why: "want an object, got " + rawKind(b)}
	}
	return lenient(b, r, &r.Extra, readRequestField)
}

// readRequestField reads one known key of a fixed request: the port is a number or a numeric
// string from 1 to 65535.
func readRequestField(key string, raw json.RawMessage, v reflect.Value) error {
	if key != "port" {
		return readField(key, raw, v)
	}
	text := string(bytes.TrimSpace(raw))
	switch jsonType(raw) {
	case "string":
		s, _ := asString(raw)
		text = strings.TrimSpace(s)
	case "number":
	default:
		text = ""
	}
	n, err := strconv.Atoi(text)
	if err != nil || !validPort(n) {
		return &misfit{why: "want a port from 1 to 65535, got " + shown(raw)}
	}
	v.SetInt(int64(n))
	return nil
}

func validPort(n int) bool { return n >= 1 && n <= 65535 }

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

// MarshalJSON writes the request with its unknown keys.
func (r FixedRequest) MarshalJSON() ([]byte, error) {
	type plain FixedRequest
	return withExtra(plain(r), r.Extra)
}

// UnmarshalJSON reads an arm given as an object (leniently) or as its bare name.
func (a *ArmSpec) UnmarshalJSON(b []byte) error {
	*a = ArmSpec{}
	switch jsonType(b) {
	case "string":
		a.Name, _ = asString(b)
		a.Bare = true
		return nil
	case "object":
		return lenient(b, a, &a.Extra, readField)
	}
	return &misfit{why: "want a name or an object, got " + rawKind(b)}
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
	switch jsonType(b) {
	case "string":
		w.Text, _ = asString(b)
		for _, item := range strings.Split(w.Text, ",") {
			if item = strings.TrimSpace(item); item != "" {
				w.List = append(w.List, item)
			}
		}
		return nil
	case "array":
		list, err := names(b)
		w.List = list
		return err
	}
	return &misfit{why: "want a list of names or a comma-separated string, got " + rawKind(b)}
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

// names reads a JSON list of names: strings as they are, numbers and booleans as their JSON
// text. An object, a list or null among them does not fit (nil and the misfit).
func names(b []byte) ([]string, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, &misfit{why: "want a list, got " + rawKind(b)}
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		switch jsonType(it) {
		case "string":
			s, _ := asString(it)
			out = append(out, s)
		case "number", "boolean":
			out = append(out, string(bytes.TrimSpace(it)))
		default:
			return nil, &misfit{at: index(i), why: "want a name, got " + rawKind(it)}
		}
	}
	return out, nil
}

func asString(b []byte) (string, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(b, &s) == nil
}

func isNull(raw json.RawMessage) bool { return jsonType(raw) == "null" }

// A misfit is a value that does not fit the field it was given for: where it lies below that
// field ("" for the value itself, "[2]" for an item, "name" for a key) and why.
type misfit struct{ at, why string }

func (m *misfit) Error() string {
	if m.at == "" {
		return m.why
	}
	return m.at + ": " + m.why
}

// under returns err, a misfit or any other error, as a misfit below step.
func under(step string, err error) *misfit {
	var m *misfit
	if !errors.As(err, &m) {
		m = &misfit{why: err.Error()}
	}
	return &misfit{at: joinPath(step, m.at), why: m.why}
}

// joinPath appends a key or an index ("[2]") to a path.
func joinPath(path, step string) string {
	switch {
	case path == "":
		return step
	case step == "":
		return path
	case step[0] == '[':
		return path + step
	}
	return path + "." + step
}

func index(i int) string { return "[" + strconv.Itoa(i) + "]" }

// maxShown bounds a value quoted in a misfit's reason: values may be long and hostile.
const maxShown = 40

// shown is how a misfit's reason quotes a value: a short number or string as written, else its
// JSON type.
func shown(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if t := jsonType(raw); (t == "number" || t == "string") && len(raw) <= maxShown {
		return string(raw)
	}
	return rawKind(raw)
}

// A fieldReader decodes raw, given for the field of JSON key key of a lenient struct, into v,
// which is that field's zero value; an error (a *misfit) when raw does not fit the field.
type fieldReader func(key string, raw json.RawMessage, v reflect.Value) error

// readField reads a field by its Go type: a string, an integer from 0 to MaxCount, a number,
// an object into a map, a list item by item (the first item that does not fit is the misfit),
// or a type that reads itself (a workload, words, a request, an arm).
func readField(_ string, raw json.RawMessage, v reflect.Value) error {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer && t.Implements(unmarshalerType):
		p := reflect.New(t.Elem())
		if err := p.Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			return under("", err)
		}
		v.Set(p)
		return nil
	case reflect.PointerTo(t).Implements(unmarshalerType):
		if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
			return under("", err)
		}
		return nil
	case t.Kind() == reflect.Slice:
		var items []json.RawMessage
		if jsonType(raw) != "array" || json.Unmarshal(raw, &items) != nil {
			return &misfit{why: "want a list, got " + rawKind(raw)}
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, it := range items {
			if err := readField("", it, s.Index(i)); err != nil {
				return under(index(i), err)
			}
		}
		v.Set(s)
		return nil
	case t.Kind() == reflect.Int:
		var n int64
		if jsonType(raw) != "number" || json.Unmarshal(raw, &n) != nil || n < 0 || n > MaxCount {
			return &misfit{why: "want " + wantOf(t) + ", got " + shown(raw)}
		}
		v.SetInt(n)
		return nil
	}
	// A JSON value of another type leaves v as it was but for maps, which take null: here the
	// type is checked first.
	want := map[reflect.Kind]string{reflect.String: "string", reflect.Float64: "number", reflect.Map: "object", reflect.Bool: "boolean"}[t.Kind()]
	if jsonType(raw) != want || json.Unmarshal(raw, v.Addr().Interface()) != nil {
		return &misfit{why: "want " + wantOf(t) + ", got " + rawKind(raw)}
	}
	return nil
}

// wantOf says what a field of type t takes.
func wantOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer from 0 to " + strconv.Itoa(MaxCount)
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Map:
		return "an object"
	case reflect.Slice:
		return "a list"
	}
	return "an object"
}

// lenient fills the struct dst points to from JSON object b key by key, with read (so dst's own
// UnmarshalJSON is not called again); a value that does not fit its field, a null, and the keys
// dst does not declare are kept in *extra as they came, the field left empty. Keys match
// exactly (encoding/json would also take "NAME" for "name").
func lenient(b []byte, dst any, extra *map[string]json.RawMessage, read fieldReader) error {
	var fields map[string]json.RawMessage
	if jsonType(b) != "object" || json.Unmarshal(b, &fields) != nil {
		return &misfit{why: "want an object, got " + rawKind(b)}
	}
	v := reflect.ValueOf(dst).Elem()
	names := jsonNames(v.Type())
	kept := map[string]json.RawMessage{}
	for key, raw := range fields {
		i, ok := names[key]
		if !ok || isNull(raw) {
			kept[key] = canonical(raw)
			continue
		}
		if read(key, raw, v.Field(i)) != nil {
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

// misfitsOf lists the values of extra kept for a key of struct type t because they did not fit
// its field (read says why), each as "<path>.<key>: <why>". Null values and unknown keys are
// not misfits.
func misfitsOf(extra map[string]json.RawMessage, t reflect.Type, read fieldReader, path string) []string {
	var out []string
	names := jsonNames(t)
	for key, raw := range extra {
		i, ok := names[key]
		if !ok || isNull(raw) {
			continue
		}
		if err := read(key, raw, reflect.New(t.Field(i).Type).Elem()); err != nil {
			m := under(key, err)
			out = append(out, joinPath(path, m.at)+": "+m.why)
		}
	}
	slices.Sort(out)
	return out
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
