package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/schedlens/schedlens/internal/api/apitest"
)

// Bad lookups and bad pages are 400 problem+json, answered before the database is asked.
func TestRequestLookupRejectsBadBodies(t *testing.T) {
	srv := apitest.Serve(t, nil)
	many := `{"ids":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 1001), ",") + `]}`
	for _, tc := range []struct{ method, path, body, detail string }{
		{"POST", "/v1/requests/lookup", `not json`, "want {\"ids\""},
		{"POST", "/v1/requests/lookup", `{"ids":[]}`, "1 to 1000 ids, got 0"},
		{"POST", "/v1/requests/lookup", `{}`, "1 to 1000 ids, got 0"},
		{"POST", "/v1/requests/lookup", `{"id":["a"]}`, "unknown field"},
		{"POST", "/v1/requests/lookup", many, "got 1001"},
		{"GET", "/v1/unattributed-requests?limit=0", "", "limit must be an integer from 1 to 1000"},
		{"GET", "/v1/requests/lookup", "", "GET is not allowed"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Status int
			Detail string
		}
		_ = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if resp.StatusCode/100 != 4 || resp.Header.Get("Content-Type") != "application/problem+json" || p.Status != resp.StatusCode || !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("%s %s %.40s: %d %s %+v; want 4xx problem+json saying %q", tc.method, tc.path, tc.body, resp.StatusCode, resp.Header.Get("Content-Type"), p, tc.detail)
		}
	}
}
