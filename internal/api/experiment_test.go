package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/record"
)

// experimentInfo is what GET /v1/experiments/{name} answers, as a client reads it.
type experimentInfo struct {
	Name               string                     `json:"name"`
	Definition         map[string]json.RawMessage `json:"definition"`
	DefinitionProblems []string                   `json:"definition_problems"`
}

// PUT /v1/experiments/{name}: a definition whose values all fit is stored (204), fixed given as
// a list included; one with a value of a type or range its key does not take is a 400 problem
// naming each such value; a name that is not a string cannot name the experiment.
func TestPutExperiment(t *testing.T) {
	srv := apitest.Serve(t, pgtest.DB(t))
	const base = `"baseline":"control","arms":["control","mps"],"thresholds":{"error_rate":0.01},"repeats":3`
	tests := []struct {
		name, body string
		want       int
		detail     string // a 400's detail, exactly
	}{
		{"fixed as a list", `{"fixed":["image","model","input"],"metrics":["pending","latency"],` + base + `}`, http.StatusNoContent, ""},
		{"fixed as prose", `{"fixed":"image, model, input",` + base + `}`, http.StatusNoContent, ""},
		{"nulls and unknown keys", `{"name":null,"alpha":null,"owner":{"team":5},` + base + `}`, http.StatusNoContent, ""},
		{"repeats a word", `{"name":"day20","repeats":"three","baseline":"control"}`, http.StatusBadRequest,
			`repeats: want an integer from 0 to 2147483647, got "three"`},
		{"repeats negative", `{"repeats":-1}`, http.StatusBadRequest, "repeats: want an integer from 0 to 2147483647, got -1"},
		{"three misfits", `{"alpha":2,"arms":["control",7],"fixed":{"request":{"port":"http"}}}`, http.StatusBadRequest,
			`alpha: want a number in (0, 1), got 2; arms[1]: want a name or an object, got a number; fixed.request.port: want a port from 1 to 65535, got "http"`},
		{"fixed a number", `{"fixed":3}`, http.StatusBadRequest, "fixed: want an object, a list or a string, got a number"},
		{"name a number", `{"name":20}`, http.StatusBadRequest, "name: want a string, got a number"},
		{"not an object", `["day20"]`, http.StatusBadRequest, "want an object, got a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, p := do(t, http.MethodPut, srv.URL+"/v1/experiments/day20", tt.body, false)
			if resp.StatusCode != tt.want {
				t.Fatalf("PUT %s: %d %+v, want %d", tt.body, resp.StatusCode, p, tt.want)
			}
			if tt.want == http.StatusBadRequest && (resp.Header.Get("Content-Type") != "application/problem+json" || p.Detail != tt.detail) {
				t.Errorf("PUT %s: %s %q, want problem+json %q", tt.body, resp.Header.Get("Content-Type"), p.Detail, tt.detail)
			}
		})
	}
	// The last stored definition is the one with nulls and an unknown key, as it came.
	var got experimentInfo
	apitest.GetJSON(t, srv.URL+"/v1/experiments/day20", &got)
	if string(got.Definition["name"]) != `"day20"` || string(got.Definition["owner"]) != `{"team":5}` || string(got.Definition["alpha"]) != "null" {
		t.Errorf("stored definition %v: want the URL's name, owner and alpha kept", got.Definition)
	}
	if got.DefinitionProblems == nil || len(got.DefinitionProblems) > 0 {
		t.Errorf("definition_problems %#v, want []", got.DefinitionProblems)
	}
}

// GET /v1/experiments and /v1/experiments/{name} list the problems of a definition that came
// through the replay path: the collector's errors and the values that do not fit, kept, beside
// the definition that still reads.
func TestExperimentDefinitionProblems(t *testing.T) {
	db := pgtest.DB(t)
	srv := apitest.Serve(t, db)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	line := `{"v":1,"id":"experiment/ai-lab/day21-experiment/7","kind":"experiment","cluster":"lab","source":"collector/lab-0",
		"occurred_at":"` + now + `","observed_at":"` + now + `","experiment":{"name":"day21"},
		"data":{"name":"day21","fixed":{"image":"i","request":{"port":70000}},"metrics":["pending"],"repeats":"three",
			"baseline":"control","arms":["control",{"name":{"x":1}}],"thresholds":{"error_rate":0.01},
			"errors":["alpha: want a number in (0, 1), got \"2\""]}}`
	env, err := events.Decode([]byte(line))
	if err != nil {
		t.Fatalf("the replayed definition is refused: %v", err)
	}
	if _, err := db.Append(context.Background(), []*events.Envelope{env}, nil); err != nil {
		t.Fatal(err)
	}
	if resp, p := do(t, http.MethodPut, srv.URL+"/v1/experiments/day20", `{"fixed":["image","model"],"baseline":"control"}`, false); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT day20: %d %+v", resp.StatusCode, p)
	}

	want := map[string][]string{
		"day20": {},
		"day21": {
			`alpha: want a number in (0, 1), got "2"`,
			"arms[1].name: want a string, got an object",
			"fixed.request.port: want a port from 1 to 65535, got 70000",
			`repeats: want an integer from 0 to 2147483647, got "three"`,
		},
	}
	var list struct{ Experiments []experimentInfo }
	apitest.GetJSON(t, srv.URL+"/v1/experiments", &list)
	got := map[string][]string{}
	for _, e := range list.Experiments {
		got[e.Name] = e.DefinitionProblems
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /v1/experiments definition_problems (-want +got):\n%s", diff)
	}
	var one experimentInfo
	apitest.GetJSON(t, srv.URL+"/v1/experiments/day21", &one)
	if diff := cmp.Diff(want["day21"], one.DefinitionProblems); diff != "" {
		t.Errorf("GET /v1/experiments/day21 definition_problems (-want +got):\n%s", diff)
	}
	if string(one.Definition["repeats"]) != `"three"` || string(one.Definition["baseline"]) != `"control"` || !strings.Contains(string(one.Definition["thresholds"]), "error_rate") {
		t.Errorf("definition %v: want repeats kept as it came beside the baseline and thresholds", one.Definition)
	}
}

// DELETE /v1/experiments/{name}: 204 and the experiment is gone (its page, its comparison);
// again, or an experiment never known, is a 404 problem.
func TestDeleteExperiment(t *testing.T) {
	db := pgtest.DB(t)
	if _, err := db.Append(context.Background(), eventgen.Generate(eventgen.Default()), nil); err != nil {
		t.Fatal(err)
	}
	srv := apitest.Serve(t, db)
	if resp, p := do(t, http.MethodGet, srv.URL+"/v1/experiments/day20/comparison", "", false); resp.StatusCode != http.StatusOK {
		t.Fatalf("comparison before: %d %+v", resp.StatusCode, p)
	}
	if resp, p := do(t, http.MethodDelete, srv.URL+"/v1/experiments/day20", "", false); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE day20: %d %+v", resp.StatusCode, p)
	}
	for _, path := range []string{"/v1/experiments/day20", "/v1/experiments/day20/comparison"} {
		if resp, p := do(t, http.MethodGet, srv.URL+path, "", false); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s after the delete: %d %+v, want 404", path, resp.StatusCode, p)
		}
	}
	for _, name := range []string{"day20", "never"} {
		resp, p := do(t, http.MethodDelete, srv.URL+"/v1/experiments/"+name, "", false)
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("DELETE %s: %d %s %+v, want a 404 problem", name, resp.StatusCode, resp.Header.Get("Content-Type"), p)
		}
	}
}

// GET /v1/experiments/{name}/record: the record as JSON, its digest in the ETag and valid for
// its content, the same bytes on a second read; an experiment without pods is a 404 problem.
func TestRecordEndpoint(t *testing.T) {
	db := pgtest.DB(t)
	cfg := eventgen.Default()
	if _, err := db.Append(context.Background(), eventgen.Generate(cfg), nil); err != nil {
		t.Fatal(err)
	}
	srv := apitest.Serve(t, db)
	get := func() (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/v1/experiments/day20/record")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	resp, body := get()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET record: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var r record.Record
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if err := record.Verify(r); err != nil {
		t.Error(err)
	}
	if resp.Header.Get("ETag") != `"`+r.Digest+`"` || r.Experiment != "day20" || r.SchemaVersion != record.SchemaVersion {
		t.Errorf("ETag %s, record %s %s %s", resp.Header.Get("ETag"), r.Experiment, r.SchemaVersion, r.Digest)
	}
	if _, again := get(); !bytes.Equal(body, again) {
		t.Error("a second read gave other bytes")
	}
	resp, p := do(t, http.MethodGet, srv.URL+"/v1/experiments/day99/record", "", false)
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(p.Detail, "day99") {
		t.Errorf("unknown experiment: %d %s %+v", resp.StatusCode, resp.Header.Get("Content-Type"), p)
	}
}

// GET /v1/experiments/{name}/against/{other}: the two records' digests, their differences
// (eventgen's day20 and day21 differ in seed, not in conditions: the definitions' thresholds
// are equal) and the arms both ran; an unknown other is a 404 problem.
func TestAgainstEndpoint(t *testing.T) {
	db := pgtest.DB(t)
	day21 := eventgen.Default()
	day21.Experiment, day21.IDPrefix, day21.Seed = "day21", "d21/", 21
	for _, cfg := range []eventgen.Config{eventgen.Default(), day21} {
		if _, err := db.Append(context.Background(), eventgen.Generate(cfg), nil); err != nil {
			t.Fatal(err)
		}
	}
	srv := apitest.Serve(t, db)
	var a, b record.Record
	apitest.GetJSON(t, srv.URL+"/v1/experiments/day20/record", &a)
	apitest.GetJSON(t, srv.URL+"/v1/experiments/day21/record", &b)
	var got record.Against
	apitest.GetJSON(t, srv.URL+"/v1/experiments/day20/against/day21", &got)
	if got.A.Digest != a.Digest || got.B.Digest != b.Digest || got.A.Experiment != "day20" || got.B.Experiment != "day21" {
		t.Errorf("a %+v b %+v, want the records' digests", got.A, got.B)
	}
	want := record.Compare(a, b)
	if g, w := jsonOf(t, got), jsonOf(t, want); g != w {
		t.Errorf("against differs from record.Compare of the two records\n%s\n%s", g, w)
	}
	if len(got.Arms) != 4 || got.Baseline.Arm != "control" || len(got.Baseline.Metrics) == 0 {
		t.Errorf("arms %+v, baseline %+v", got.Arms, got.Baseline)
	}
	resp, p := do(t, http.MethodGet, srv.URL+"/v1/experiments/day20/against/day99", "", false)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(p.Detail, "day99") {
		t.Errorf("unknown other: %d %+v", resp.StatusCode, p)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// POST /v1/records: a record read from one schedlens, imported into another that holds no
// event of it, is listed there marked imported, and its record (the same bytes), comparison (as
// recorded) and against read from it; importing it again changes nothing; a record whose digest
// is not its content's, of another schema, or with an unknown field is a 400 problem.
func TestImportRecord(t *testing.T) {
	origin := pgtest.DB(t)
	day21 := eventgen.Default()
	day21.Experiment, day21.IDPrefix, day21.Seed = "day21", "d21/", 21
	for _, cfg := range []eventgen.Config{eventgen.Default(), day21} {
		if _, err := origin.Append(context.Background(), eventgen.Generate(cfg), nil); err != nil {
			t.Fatal(err)
		}
	}
	from := apitest.Serve(t, origin)
	body := func(path string) []byte {
		t.Helper()
		return apitest.Get(t, from.URL+path)
	}
	rec20, rec21 := body("/v1/experiments/day20/record"), body("/v1/experiments/day21/record")
	comparison := body("/v1/experiments/day20/comparison")

	to := apitest.Serve(t, pgtest.DB(t))
	post := func(b []byte) (*http.Response, problemDoc) {
		t.Helper()
		return do(t, http.MethodPost, to.URL+"/v1/records", string(b), false)
	}
	for i, want := range []int{http.StatusCreated, http.StatusOK} {
		if resp, p := post(rec20); resp.StatusCode != want || resp.Header.Get("Location") != "/v1/experiments/day20/record" {
			t.Fatalf("import %d: %d %+v, want %d", i+1, resp.StatusCode, p, want)
		}
	}
	if resp, p := post(rec21); resp.StatusCode != http.StatusCreated {
		t.Fatalf("import day21: %d %+v", resp.StatusCode, p)
	}
	var list struct {
		Experiments []struct {
			Name     string   `json:"name"`
			Arms     []string `json:"arms"`
			Pods     int      `json:"pods"`
			Imported *struct {
				Digest string `json:"digest"`
			} `json:"imported"`
		} `json:"experiments"`
	}
	apitest.GetJSON(t, to.URL+"/v1/experiments", &list)
	var r20 record.Record
	if err := json.Unmarshal(rec20, &r20); err != nil {
		t.Fatal(err)
	}
	pods := 0
	for _, a := range r20.Comparison.Arms {
		pods += a.Pods
	}
	if len(list.Experiments) != 2 || list.Experiments[0].Name != "day20" || list.Experiments[0].Imported == nil ||
		list.Experiments[0].Imported.Digest != r20.Digest || list.Experiments[0].Pods != pods || len(list.Experiments[0].Arms) != len(r20.Comparison.Arms) {
		t.Fatalf("experiments %+v", list.Experiments)
	}
	resp, err := http.Get(to.URL + "/v1/experiments/day20/record")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(got, rec20) {
		t.Error("the imported record reads back other bytes")
	}
	var gotC, wantC compare.Comparison
	apitest.GetJSON(t, to.URL+"/v1/experiments/day20/comparison", &gotC)
	if err := json.Unmarshal(comparison, &wantC); err != nil {
		t.Fatal(err)
	}
	if g, w := jsonOf(t, gotC), jsonOf(t, wantC); g != w {
		t.Errorf("imported comparison differs from the origin's\n%s\n%s", g, w)
	}
	if resp, p := do(t, http.MethodGet, to.URL+"/v1/experiments/day20/comparison?baseline=affinity", "", false); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(p.Detail, "as recorded") {
		t.Errorf("another baseline of an imported comparison: %d %+v", resp.StatusCode, p)
	}
	var againstFrom, againstTo record.Against
	apitest.GetJSON(t, from.URL+"/v1/experiments/day20/against/day21", &againstFrom)
	apitest.GetJSON(t, to.URL+"/v1/experiments/day20/against/day21", &againstTo)
	if g, w := jsonOf(t, againstTo), jsonOf(t, againstFrom); g != w {
		t.Errorf("against from imported records differs from the origin's\n%s\n%s", g, w)
	}

	// DELETE takes the imported experiment away with its records.
	if resp, p := do(t, http.MethodDelete, to.URL+"/v1/experiments/day21", "", false); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE an imported experiment: %d %+v", resp.StatusCode, p)
	}
	if resp, _ := do(t, http.MethodGet, to.URL+"/v1/experiments/day21/record", "", false); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the deleted imported experiment's record: %d, want 404", resp.StatusCode)
	}
	apitest.GetJSON(t, to.URL+"/v1/experiments", &list)
	if len(list.Experiments) != 1 || list.Experiments[0].Name != "day20" {
		t.Errorf("experiments after DELETE day21: %+v", list.Experiments)
	}

	tampered := bytes.Replace(rec20, []byte(`"pods": 9`), []byte(`"pods": 8`), 1)
	for name, b := range map[string][]byte{
		"tampered":      tampered,
		"other schema":  bytes.Replace(rec20, []byte(record.SchemaVersion), []byte("schedlens.io/record/v9"), 1),
		"unknown field": bytes.Replace(rec20, []byte(`"experiment": "day20"`), []byte(`"experiment": "day20", "extra": 1`), 1),
		"not json":      []byte("{"),
	} {
		if bytes.Equal(b, rec20) {
			t.Fatalf("%s: the test's edit did not apply", name)
		}
		if resp, p := post(b); resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %+v, want a 400 problem", name, resp.StatusCode, p)
		}
	}
}
