package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
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

// FuzzQuery: whatever a client puts in a query parameter, a cursor or a path segment, the API
// answers 2xx or 4xx (a 4xx as problem+json) against the real database — never a 500.
func FuzzQuery(f *testing.F) {
	db, err := store.Open(context.Background(), pgtest.URL(f), slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(db.Close)
	envs := eventgen.Generate(eventgen.Default())
	if _, err := db.Ingest(context.Background(), envs, nil); err != nil {
		f.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	h, err := api.New(db, slog.New(slog.DiscardHandler), reg, reg)
	if err != nil {
		f.Fatal(err)
	}
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
		switch {
		case rec.Code >= 500:
			t.Fatalf("GET %s: %d %s", target, rec.Code, rec.Body.String())
		case rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json":
			t.Fatalf("GET %s: %d with Content-Type %q", target, rec.Code, rec.Header().Get("Content-Type"))
		}
	})
}
