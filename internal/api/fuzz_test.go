package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
)

// fuzzRoutes build a request from three fuzzed strings: every route with query parameters or
// path segments a client chooses.
var fuzzRoutes = []func(a, b, c string) string{
	func(a, b, c string) string { return "/v1/pods?" + query("limit", a, "cursor", b, "experiment", c) },
	func(a, b, c string) string { return "/v1/pods?" + query("namespace", a, "node", b, "arm", c, "run", a) },
	func(a, b, c string) string { return "/v1/pods/" + url.PathEscape(a) + "/timeline" },
	func(a, b, c string) string {
		return "/v1/unattributed-requests?" + query("cluster", a, "cursor", b, "limit", c, "source", a)
	},
	func(a, b, c string) string { return "/v1/dead-letters?" + query("limit", a) },
	func(a, b, c string) string {
		return "/v1/experiments/" + url.PathEscape(a) + "/comparison?" + query("baseline", b, "namespace", c)
	},
	func(a, b, c string) string {
		return "/v1/experiments/" + url.PathEscape(a) + "/runs/" + url.PathEscape(b) + "/interruptions?" + query("min_gap", c)
	},
	func(a, b, c string) string {
		return "/v1/experiments/" + url.PathEscape(a) + "/runs/" + url.PathEscape(b) + "/trace.json?" + query("namespace", c)
	},
	func(a, b, c string) string { return "/v1/experiments/" + url.PathEscape(a) },
	func(a, b, c string) string {
		return "/v1/experiments/" + url.PathEscape(a) + "/comparison.csv?" + query("baseline", b)
	},
	func(a, b, c string) string { return "/v1/pods?" + a }, // a raw query string, escapes and all
}

// query encodes name/value pairs, leaving out empty values.
func query(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	return v.Encode()
}

// fuzzAPI is the api over a database of its own holding the generated day20 experiment.
func fuzzAPI(f *testing.F) (http.Handler, []*events.Envelope) {
	db := pgtest.DB(f)
	envs := eventgen.Generate(eventgen.Default())
	if _, err := db.Append(context.Background(), envs, nil); err != nil {
		f.Fatal(err)
	}
	return apitest.Handler(f, db), envs
}

// checkAnswer fails on a 5xx, or a 4xx that is not problem+json.
func checkAnswer(t *testing.T, req string, rec *httptest.ResponseRecorder) {
	switch {
	case rec.Code >= 500:
		t.Fatalf("%s: %d %s", req, rec.Code, rec.Body.String())
	case rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json":
		t.Fatalf("%s: %d with Content-Type %q", req, rec.Code, rec.Header().Get("Content-Type"))
	}
}

// FuzzBody: whatever a client sends as a definition (PUT /v1/experiments/{name}) or a lookup
// (POST /v1/requests/lookup), the answer is 2xx or a 4xx problem — never a 500.
func FuzzBody(f *testing.F) {
	h, envs := fuzzAPI(f)
	var reqID string
	for _, env := range envs {
		if env.Kind == events.KindRequest {
			reqID = env.ID
			break
		}
	}
	for _, seed := range []struct {
		lookup     bool
		name, body string
	}{
		{false, "day20", `{"name":"day20","change":"priority","metrics":["pending"],"repeats":3,"baseline":"control","arms":["control","priority"],"thresholds":{"p95_latency_ms":800},"margins":{"pending":"10%"},"alpha":0.05}`},
		{false, "x", `{"repeats":-1}`}, {false, "x", `{"alpha":2}`}, {false, "x", `{"name":"y"}`}, {false, "x", `{"change":"a\u0000b"}`},
		{false, "x", `{"fixed":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`}, {false, "x", `{"repeats":1e10}`}, {false, "x", `[]`},
		{true, "", `{"ids":["` + reqID + `"]}`}, {true, "", `{"ids":["a\u0000"]}`}, {true, "", `{"ids":["\ud800"]}`}, {true, "", `{"ids":[1]}`},
	} {
		f.Add(seed.lookup, seed.name, seed.body)
	}
	f.Fuzz(func(t *testing.T, lookup bool, name, body string) {
		method, target := http.MethodPut, "/v1/experiments/"+url.PathEscape(name)
		if lookup {
			method, target = http.MethodPost, "/v1/requests/lookup"
		}
		req, err := http.NewRequest(method, target, strings.NewReader(body))
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, method+" "+target+" "+body, rec)
	})
}

// FuzzQuery: whatever a client puts in a query parameter, a cursor or a path segment, the API
// answers 2xx or 4xx (a 4xx as problem+json) against the real database — never a 500.
func FuzzQuery(f *testing.F) {
	h, envs := fuzzAPI(f)
	cursor := func(path, field string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		var page map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &page)
		s, _ := page[field].(string)
		return s
	}
	podCursor := cursor("/v1/pods?limit=2", "next_cursor")
	uid := envs[1].PodUID()
	for i, seed := range [][3]string{
		{"2", podCursor, "day20"}, {"ai-lab", "gpu-node-1", "control"}, {uid, "", ""}, {"lab", "eyJ0IjoiMjAyNi0xMS0zMFQwNDozMjowMFoiLCJpIjoieCJ9", "5"},
		{"10", "", ""}, {"day20", "control", "ai-lab"}, {"day20", "1", "500ms"}, {"day20", "2", ""}, {"day20", "", ""},
		{"day20", "control", ""}, {"limit=1&cursor=" + podCursor, "", ""},
		{"1", "eyJ0IjoiMjAyNi0xMS0zMFQwNDozMjowMFoiLCJ1IjoiXHUwMDAwIn0", "\xff"}, {strings.ToUpper(uid), "", ""},
		{"limit=%ff&experiment=%00", "", ""}, {"\x00", "1", "-1s"},
	} {
		f.Add(uint8(i%len(fuzzRoutes)), seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, route uint8, a, b, c string) {
		target := fuzzRoutes[int(route)%len(fuzzRoutes)](a, b, c)
		req, err := http.NewRequest(http.MethodGet, target, nil)
		if err != nil {
			return // not a request a client can send
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, "GET "+target, rec)
	})
}
