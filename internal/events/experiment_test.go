package events_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/schedlens/schedlens/internal/events"
)

// A definition goes through the typed Experiment unchanged: what it does not know (a key of
// its own, an arm's placement rules, a fixed value of another type) is written back as it came.
func TestExperimentKeepsWhatItDoesNotKnow(t *testing.T) {
	for name, in := range map[string]string{
		"typed":                    `{"name":"day20","fixed":{"image":"i","model":"m","pods":3,"request":{"method":"POST","port":8000,"path":"/x","body":"{}"}},"metrics":["pending","latency"],"repeats":3,"baseline":"control","arms":[{"name":"control"},{"name":"affinity","description":"d","required":{"accelerator":"nvidia-gpu"}}],"thresholds":{"error_rate":0.01},"margins":{"latency":"5%"},"alpha":0.1}`,
		"the seed's":               `{"name":"day20","change":"node affinity / PriorityClass / GPU sharing","fixed":"image, model, input","metrics":"placement, Pending, preemption, latency","repeats":3}`,
		"odd values":               `{"name":"x","fixed":{"pods":"three","gpu":"A100","request":{"port":"8000","retries":2}},"arms":["control",{"name":"t","sharing":"mps"}],"owner":"team-a","notes":[1,2]}`,
		"empty lists":              `{"name":"x","metrics":[],"arms":[]}`,
		"a name that is no string": `{"name":"x","arms":[{"name":{"0":null}},{"name":7,"description":["a"]},{"name":""}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			var e events.Experiment
			if err := json.Unmarshal([]byte(in), &e); err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			_ = json.Unmarshal([]byte(in), &want)
			_ = json.Unmarshal(out, &got)
			if name == "odd values" {
				// A numeric string port is read as the number it names.
				want.(map[string]any)["fixed"].(map[string]any)["request"].(map[string]any)["port"] = 8000.0
			}
			if name == "empty lists" {
				delete(want.(map[string]any), "arms") // an empty arms list says nothing
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("round trip (-in +out):\n%s", diff)
			}
		})
	}
	var seed events.Experiment
	_ = json.Unmarshal([]byte(`{"name":"day20","fixed":"image, model, input","metrics":"placement, Pending"}`), &seed)
	if seed.Fixed.Text != "image, model, input" || !cmp.Equal(seed.Metrics.List, []string{"placement", "Pending"}) {
		t.Errorf("the seed's prose: fixed %+v, metrics %+v", seed.Fixed, seed.Metrics)
	}
}

// baseDefinition is the definition the misfit tables change one key of.
const baseDefinition = `{"name":"day20","change":"priority","fixed":{"model":"m"},"metrics":["pending"],"repeats":3,
	"baseline":"control","arms":["control","treatment"],"thresholds":{"error_rate":0.01},"margins":{"pending":"10%"},"alpha":0.1}`

// withKey is baseDefinition with key set to the JSON value value.
func withKey(t *testing.T, key, value string) []byte {
	t.Helper()
	var def map[string]json.RawMessage
	if err := json.Unmarshal([]byte(baseDefinition), &def); err != nil {
		t.Fatal(err)
	}
	def[key] = json.RawMessage(value)
	b, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fieldOf names the Experiment field of each definition key.
var fieldOf = map[string]string{
	"name": "Name", "change": "Change", "fixed": "Fixed", "metrics": "Metrics", "repeats": "Repeats", "baseline": "Baseline",
	"arms": "Arms", "thresholds": "Thresholds", "margins": "Margins", "alpha": "Alpha", "errors": "Errors",
}

// Every definition key given a string, a list, an object, a number and null: the definition
// reads (but for a name that is no string), every other field as in the base definition; the
// value is written back at its key as it came; and Misfits names the key exactly when the value
// does not fit it. A null fits every key: it says nothing, and is kept.
func TestExperimentEveryKeyEveryType(t *testing.T) {
	const (
		str  = `"x"`
		list = `["a","b"]`
		obj  = `{"a":1}`
		num  = `3`
		null = `null`
	)
	const fails = "the decoding fails"
	tests := []struct {
		key, value string
		want       string // the misfit, "" when the value fits, or fails
	}{
		{"name", str, ""},
		{"name", list, fails},
		{"name", obj, fails},
		{"name", num, fails},
		{"name", null, ""}, // read as no name: Decode refuses it (TestDecodeInvalid), PUT takes the URL's

		{"change", str, ""},
		{"change", list, "change: want a string, got a list"},
		{"change", obj, "change: want a string, got an object"},
		{"change", num, "change: want a string, got a number"},
		{"change", null, ""},

		{"fixed", str, ""},  // prose
		{"fixed", list, ""}, // what is fixed, like metrics
		{"fixed", obj, ""},  // a key of its own, kept
		{"fixed", num, "fixed: want an object, a list or a string, got a number"},
		{"fixed", null, ""},

		{"metrics", str, ""},
		{"metrics", list, ""},
		{"metrics", obj, "metrics: want a list of names or a comma-separated string, got an object"},
		{"metrics", num, "metrics: want a list of names or a comma-separated string, got a number"},
		{"metrics", null, ""},

		{"repeats", str, `repeats: want an integer from 0 to 2147483647, got "x"`},
		{"repeats", list, "repeats: want an integer from 0 to 2147483647, got a list"},
		{"repeats", obj, "repeats: want an integer from 0 to 2147483647, got an object"},
		{"repeats", num, ""},
		{"repeats", null, ""},

		{"baseline", str, ""},
		{"baseline", list, "baseline: want a string, got a list"},
		{"baseline", obj, "baseline: want a string, got an object"},
		{"baseline", num, "baseline: want a string, got a number"},
		{"baseline", null, ""},

		{"arms", str, "arms: want a list, got a string"},
		{"arms", list, ""}, // bare names
		{"arms", obj, "arms: want a list, got an object"},
		{"arms", num, "arms: want a list, got a number"},
		{"arms", null, ""},

		{"thresholds", str, "thresholds: want an object, got a string"},
		{"thresholds", list, "thresholds: want an object, got a list"},
		{"thresholds", obj, ""},
		{"thresholds", num, "thresholds: want an object, got a number"},
		{"thresholds", null, ""},

		{"margins", str, "margins: want an object, got a string"},
		{"margins", list, "margins: want an object, got a list"},
		{"margins", obj, ""},
		{"margins", num, "margins: want an object, got a number"},
		{"margins", null, ""},

		{"alpha", str, `alpha: want a number in (0, 1), got "x"`},
		{"alpha", list, "alpha: want a number in (0, 1), got a list"},
		{"alpha", obj, "alpha: want a number in (0, 1), got an object"},
		{"alpha", `0.25`, ""},
		{"alpha", num, "alpha: want a number in (0, 1), got 3"},
		{"alpha", null, ""},

		{"errors", str, "errors: want a list, got a string"},
		{"errors", list, ""},
		{"errors", obj, "errors: want a list, got an object"},
		{"errors", num, "errors: want a list, got a number"},
		{"errors", null, ""},
	}
	var base events.Experiment
	if err := json.Unmarshal([]byte(baseDefinition), &base); err != nil {
		t.Fatal(err)
	}
	if m := base.Misfits(); m != nil {
		t.Fatalf("base definition misfits: %q", m)
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			in := withKey(t, tt.key, tt.value)
			var got events.Experiment
			err := json.Unmarshal(in, &got)
			if tt.want == fails {
				if err == nil {
					t.Fatalf("decoded %s, want an error", in)
				}
				if !strings.HasPrefix(err.Error(), tt.key+": ") {
					t.Errorf("error %q does not name %s", err, tt.key)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			var want []string
			if tt.want != "" {
				want = []string{tt.want}
			}
			if diff := cmp.Diff(want, got.Misfits()); diff != "" {
				t.Errorf("Misfits (-want +got):\n%s", diff)
			}
			// The rest of the definition as in the base.
			if diff := cmp.Diff(base, got, cmpopts.IgnoreFields(events.Experiment{}, fieldOf[tt.key], "Extra")); diff != "" {
				t.Errorf("other fields (-base +got):\n%s", diff)
			}
			// The value written back at its key as it came.
			out, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var written map[string]any
			if err := json.Unmarshal(out, &written); err != nil {
				t.Fatal(err)
			}
			var value any
			_ = json.Unmarshal([]byte(tt.value), &value)
			if kept, ok := written[tt.key]; !ok || !cmp.Equal(value, kept) {
				t.Errorf("written back as %s, want %s at %q", out, tt.value, tt.key)
			}
		})
	}
}

// Values inside the definition's keys: out of range, an item or a nested key of the wrong type.
// Each is named by its path; unknown keys and nulls are not misfits.
func TestExperimentMisfits(t *testing.T) {
	tests := []struct {
		name, key, value string
		want             []string
	}{
		{"alpha 1", "alpha", `1`, []string{"alpha: want a number in (0, 1), got 1"}},
		{"alpha negative", "alpha", `-0.1`, []string{"alpha: want a number in (0, 1), got -0.1"}},
		{"alpha 0, the default", "alpha", `0`, nil},
		{"repeats negative", "repeats", `-1`, []string{"repeats: want an integer from 0 to 2147483647, got -1"}},
		{"repeats beyond 32 bits", "repeats", `2147483648`, []string{"repeats: want an integer from 0 to 2147483647, got 2147483648"}},
		{"repeats fractional", "repeats", `2.5`, []string{"repeats: want an integer from 0 to 2147483647, got 2.5"}},
		{"repeats a word", "repeats", `"three"`, []string{`repeats: want an integer from 0 to 2147483647, got "three"`}},
		{"repeats a long word", "repeats", `"` + strings.Repeat("x", 50) + `"`, []string{"repeats: want an integer from 0 to 2147483647, got a string"}},
		{"fixed list of an object", "fixed", `["image",{"model":"m"}]`, []string{"fixed[1]: want a name, got an object"}},
		{"fixed list of scalars", "fixed", `["image",7,true]`, nil},
		{"fixed pods negative", "fixed", `{"pods":-1}`, []string{"fixed.pods: want an integer from 0 to 2147483647, got -1"}},
		{"fixed request a string", "fixed", `{"request":"GET /"}`, []string{"fixed.request: want an object, got a string"}},
		{"fixed request port", "fixed", `{"request":{"port":70000}}`, []string{"fixed.request.port: want a port from 1 to 65535, got 70000"}},
		{"fixed two misfits", "fixed", `{"request":{"method":1},"image":5,"gpu":"A100","model":null}`,
			[]string{"fixed.image: want a string, got a number", "fixed.request.method: want a string, got a number"}},
		{"metrics null item", "metrics", `["pending",null]`, []string{"metrics[1]: want a name, got null"}},
		{"arm a number", "arms", `["control",7]`, []string{"arms[1]: want a name or an object, got a number"}},
		{"arm name an object", "arms", `["control",{"name":{"x":1},"sharing":"mps"}]`, []string{"arms[1].name: want a string, got an object"}},
		{"error a number", "errors", `["repeats: bad",1]`, []string{"errors[1]: want a string, got a number"}},
		{"unknown key", "owner", `{"team":5}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := withKey(t, tt.key, tt.value)
			var got events.Experiment
			if err := json.Unmarshal(in, &got); err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			if diff := cmp.Diff(tt.want, got.Misfits()); diff != "" {
				t.Errorf("Misfits of %s (-want +got):\n%s", in, diff)
			}
			if got.Baseline != "control" || !cmp.Equal(got.ArmNames(), []string{"control", "treatment"}) && tt.key != "arms" {
				t.Errorf("baseline %q, arms %q: want the base's", got.Baseline, got.ArmNames())
			}
			out, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var again events.Experiment
			if err := json.Unmarshal(out, &again); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("decode → encode → decode (-first +second):\n%s", diff)
			}
		})
	}
}

// Problems are the collector's errors, then the misfits of keys no error names.
func TestExperimentProblems(t *testing.T) {
	var e events.Experiment
	in := `{"name":"x","errors":["arms: want a list, got an object"],"arms":"{a: 1}","repeats":"three","fixed":{"pods":"two"}}`
	if err := json.Unmarshal([]byte(in), &e); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"arms: want a list, got an object", // the collector's; the raw value it kept is not named twice
		"fixed.pods: want an integer from 0 to 2147483647, got \"two\"",
		"repeats: want an integer from 0 to 2147483647, got \"three\"",
	}
	if diff := cmp.Diff(want, e.Problems()); diff != "" {
		t.Errorf("Problems (-want +got):\n%s", diff)
	}
}

// A definition through the replay path (events.Decode, as the correlator reads it): a value of
// the wrong type or out of range is kept and named, never the reason the definition is a dead
// letter; the baseline, arms, thresholds and repeats survive it.
func TestExperimentMisfitsThroughDecode(t *testing.T) {
	tests := []struct {
		name  string
		msg   []byte
		want  []string
		check func(*testing.T, *events.Experiment)
	}{
		{
			name: "fixed as a list (issue 21)",
			msg:  mutate(experimentJSON, edit{"data.fixed", `["image", "model", "input"]`}),
			check: func(t *testing.T, e *events.Experiment) {
				if !cmp.Equal(e.Fixed.List, []string{"image", "model", "input"}) {
					t.Errorf("fixed %+v, want the list", e.Fixed)
				}
			},
		},
		{
			name: "repeats a word",
			msg:  mutate(experimentJSON, edit{"data.repeats", `"three"`}),
			want: []string{`repeats: want an integer from 0 to 2147483647, got "three"`},
		},
		{
			name: "repeats beyond 32 bits",
			msg:  mutate(experimentJSON, edit{"data.repeats", `2147483648`}),
			want: []string{"repeats: want an integer from 0 to 2147483647, got 2147483648"},
		},
		{
			name: "alpha out of range",
			msg:  mutate(experimentJSON, edit{"data.alpha", `2`}),
			want: []string{"alpha: want a number in (0, 1), got 2"},
			check: func(t *testing.T, e *events.Experiment) {
				if e.Alpha != 0 || string(e.Extra["alpha"]) != "2" {
					t.Errorf("alpha %v, kept %s; want 0 (the default) and 2 kept", e.Alpha, e.Extra["alpha"])
				}
			},
		},
		{
			name: "metrics an object, fixed port a word, an arm a list",
			msg: mutate(experimentJSON, edit{"data.metrics", `{"pending":true}`},
				edit{"data.fixed", `{"request":{"port":"http"}}`}, edit{"data.arms", `["control",{"name":"treatment"},["x"]]`}),
			want: []string{
				"arms[2]: want a name or an object, got a list",
				`fixed.request.port: want a port from 1 to 65535, got "http"`,
				"metrics: want a list of names or a comma-separated string, got an object",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := events.Decode(tt.msg, events.WithClock(clock))
			if err != nil {
				t.Fatalf("Decode: %v\n%s", err, tt.msg)
			}
			e := env.Payload.(*events.Experiment)
			if diff := cmp.Diff(tt.want, e.Misfits()); diff != "" {
				t.Errorf("Misfits (-want +got):\n%s", diff)
			}
			wantArms := []string{"control", "treatment"}
			if strings.Contains(tt.name, "an arm") {
				wantArms = nil // the arms list holds a misfit: kept whole as it came
			}
			wantRepeats := 3
			if strings.HasPrefix(tt.name, "repeats") {
				wantRepeats = 0
			}
			if e.Baseline != "control" || !cmp.Equal(e.ArmNames(), wantArms, cmpopts.EquateEmpty()) || e.Repeats != wantRepeats ||
				!cmp.Equal(e.Thresholds, map[string]any{"pending_p50_ms": 500.0}) {
				t.Errorf("baseline %q, arms %q, repeats %d, thresholds %v: want control, %q, %d and the fixture's",
					e.Baseline, e.ArmNames(), e.Repeats, e.Thresholds, wantArms, wantRepeats)
			}
			if tt.check != nil {
				tt.check(t, e)
			}
			checkDecode(t, tt.msg) // and the round trip keeps it
		})
	}
}
