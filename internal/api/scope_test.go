package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/auth"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

// Tokens of TestReadsAreScopedToTheCallersNamespaces' token file.
const (
	adminToken  = "admin-token-0123456789abcdef"
	teamAToken  = "team-a-token-0123456789abcdef"
	teamAWriter = "team-a-writer-0123456789abcdef"
)

// teamsAPI is the api over eventgen.Teams behind the token file's authentication: an admin
// token of every namespace, a read token and a write token of team-a alone.
func teamsAPI(t *testing.T) (*httptest.Server, []string) {
	t.Helper()
	db := pgtest.DB(t)
	envs := eventgen.Teams()
	if _, err := db.Append(context.Background(), envs, nil); err != nil {
		t.Fatal(err)
	}
	return teamsServer(t, db), teamBNames(envs)
}

// teamBNames are what a caller of team-a alone must never read: team-b's namespace, workload,
// experiment, and the UIDs and names of its pods (but for names team-a's pods have too: the
// shared experiment's pods are named alike in both).
func teamBNames(envs []*events.Envelope) []string {
	inA := map[string]bool{}
	for _, env := range envs {
		if env.Pod != nil && env.Pod.Namespace == eventgen.TeamA {
			inA[env.Pod.Name] = true
		}
	}
	var hidden []string
	for _, env := range envs {
		if env.Pod != nil && env.Pod.Namespace == eventgen.TeamB {
			hidden = append(hidden, env.Pod.UID)
			if !inA[env.Pod.Name] {
				hidden = append(hidden, env.Pod.Name)
			}
		}
	}
	slices.Sort(hidden)
	return append(slices.Compact(hidden), eventgen.TeamB, "infer-b", "exp-b")
}

// teamsServer serves the api over db behind a token file's authentication.
func teamsServer(t *testing.T, db *store.DB) *httptest.Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	tokens := adminToken + " read admin\n" + teamAToken + " read team-a namespaces=team-a\n" + teamAWriter + " write namespaces=team-a\n"
	if err := os.WriteFile(path, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := auth.NewTokenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(auth.Middleware(tf, auth.APIPolicy(false), nil)(apitest.Handler(t, db)))
	t.Cleanup(srv.Close)
	return srv
}

// get answers a request with token: its status and body.
func get(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("%s %s: %d with content type %q, want problem+json", method, url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp.StatusCode, string(b)
}

// A caller limited to team-a (a token line's namespaces=) reads team-a's workloads, pods,
// disruptions, experiments and stats, each list saying one namespace is hidden; gets 403 for
// team-b's by name — whether the object exists or not —, for an experiment with pods in both,
// and for what no namespace owns; and no answer it gets names anything of team-b. A caller of
// every namespace reads both, with nothing hidden; a write token limited to team-a still writes.
func TestReadsAreScopedToTheCallersNamespaces(t *testing.T) {
	srv, hidden := teamsAPI(t)
	win := url.Values{"from": {eventgen.TeamsStart.Add(-time.Minute).Format(time.RFC3339)}, "to": {eventgen.TeamsStart.Add(10 * time.Minute).Format(time.RFC3339)}}.Encode()
	u := func(path string) string { return srv.URL + path }

	// What each caller's lists hold: the namespaces of their items and the count hidden.
	type list struct {
		path, key string
		field     func(item map[string]any) string // the item's namespace, or its name
	}
	ns := func(keys ...string) func(map[string]any) string {
		return func(m map[string]any) string {
			var v any = m
			for _, k := range keys {
				v = v.(map[string]any)[k]
			}
			return v.(string)
		}
	}
	lists := []list{
		{"/v1/workloads?" + win, "workloads", ns("namespace")},
		{"/v1/pods?limit=1000", "pods", ns("pod", "namespace")},
		{"/v1/experiments", "experiments", ns("name")},
		{"/v1/disruptions?" + win, "disruptions", func(m map[string]any) string {
			var nss []string
			for _, w := range m["workloads"].([]any) {
				nss = append(nss, w.(map[string]any)["workload"].(map[string]any)["namespace"].(string))
			}
			slices.Sort(nss)
			return strings.Join(slices.Compact(nss), "+")
		}},
	}
	want := map[string]map[string][]string{ // caller → list → the distinct values seen
		adminToken: {"workloads": {"team-a", "team-b"}, "pods": {"team-a", "team-b"}, "experiments": {"exp-a", "exp-b", "shared"}, "disruptions": {"team-a", "team-a+team-b", "team-b"}},
		teamAToken: {"workloads": {"team-a"}, "pods": {"team-a"}, "experiments": {"exp-a"}, "disruptions": {"team-a"}},
	}
	for token, hiddenWant := range map[string]float64{adminToken: 0, teamAToken: 1} {
		for _, l := range lists {
			code, body := get(t, "GET", u(l.path), token, "")
			if code != 200 {
				t.Fatalf("%s: GET %s: %d %s", token, l.path, code, body)
			}
			var page map[string]any
			if err := json.Unmarshal([]byte(body), &page); err != nil {
				t.Fatal(err)
			}
			if page["namespaces_hidden"] != hiddenWant {
				t.Errorf("%s: GET %s: namespaces_hidden %v, want %v", token, l.path, page["namespaces_hidden"], hiddenWant)
			}
			var seen []string
			for _, item := range page[l.key].([]any) {
				seen = append(seen, l.field(item.(map[string]any)))
			}
			slices.Sort(seen)
			seen = slices.Compact(seen)
			w := want[token][l.key]
			// The drains and node failures of both teams' workloads on one node at one time are
			// one disruption to the admin; which are depends on where the pods ran.
			if l.key == "disruptions" && token == adminToken {
				if !slices.Contains(seen, "team-b") && !slices.Contains(seen, "team-a+team-b") {
					t.Errorf("admin: disruptions of %v, want team-b's too", seen)
				}
				continue
			}
			if !slices.Equal(seen, w) {
				t.Errorf("%s: GET %s: %v, want %v", token, l.path, seen, w)
			}
		}
	}

	// Stats: the caller's pods only, and nothing no namespace owns.
	var all, scoped map[string]any
	_, body := get(t, "GET", u("/v1/stats"), adminToken, "")
	_ = json.Unmarshal([]byte(body), &all)
	_, body = get(t, "GET", u("/v1/stats"), teamAToken, "")
	_ = json.Unmarshal([]byte(body), &scoped)
	if scoped["namespaces_hidden"] != 1.0 || scoped["events_total"] != nil || scoped["pods_total"] == nil ||
		scoped["pods_total"].(float64) <= 0 || scoped["pods_total"].(float64) >= all["pods_total"].(float64) || all["namespaces_hidden"] != 0.0 {
		t.Errorf("stats: team-a %v, admin %v; want team-a's pods alone, one namespace hidden", scoped, all)
	}

	// By name.
	var podA, podB string
	_, body = get(t, "GET", u("/v1/pods?limit=1000"), adminToken, "")
	var pods struct {
		Pods []struct {
			Pod struct{ Namespace, UID string }
		}
	}
	_ = json.Unmarshal([]byte(body), &pods)
	for _, p := range pods.Pods {
		if p.Pod.Namespace == eventgen.TeamA {
			podA = p.Pod.UID
		} else {
			podB = p.Pod.UID
		}
	}
	const unknownUID = "00000000-0000-4000-8000-000000000000"
	for _, tc := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/v1/workloads/team-a/deployment/infer-a?" + win, teamAToken, "", 200},
		{"GET", "/v1/workloads/team-a/deployment/infer-a/trace.json?" + win, teamAToken, "", 200},
		{"GET", "/v1/workloads/team-b/deployment/infer-b?" + win, teamAToken, "", 403},
		{"GET", "/v1/workloads/team-b/deployment/no-such-workload?" + win, teamAToken, "", 403},
		{"GET", "/v1/workloads/team-b/deployment/infer-b/trace.json?" + win, teamAToken, "", 403},
		{"GET", "/v1/workloads/team-b/deployment/infer-b/compare?before=1&after=2&" + win, teamAToken, "", 403},
		{"GET", "/v1/workloads/team-b/deployment/infer-b?" + win, adminToken, "", 200},
		{"GET", "/v1/workloads?namespace=team-b&" + win, teamAToken, "", 403},
		{"GET", "/v1/disruptions?namespace=team-b&" + win, teamAToken, "", 403},
		{"GET", "/v1/pods?namespace=team-b", teamAToken, "", 403},
		{"GET", "/v1/pods/" + podA + "/timeline", teamAToken, "", 200},
		{"GET", "/v1/pods/" + podB + "/timeline", teamAToken, "", 403},
		{"GET", "/v1/pods/" + unknownUID + "/timeline", teamAToken, "", 403},
		{"GET", "/v1/pods/" + unknownUID + "/timeline", adminToken, "", 404},
		{"GET", "/v1/pods/" + podB + "/timeline", adminToken, "", 200},
		{"GET", "/v1/experiments/exp-a", teamAToken, "", 200},
		{"GET", "/v1/experiments/exp-a/comparison", teamAToken, "", 200},
		{"GET", "/v1/experiments/exp-a/runs/1/trace.json", teamAToken, "", 200},
		{"GET", "/v1/experiments/exp-b", teamAToken, "", 403},
		{"GET", "/v1/experiments/shared", teamAToken, "", 403},
		{"GET", "/v1/experiments/no-such-experiment", teamAToken, "", 403},
		{"GET", "/v1/experiments/no-such-experiment", adminToken, "", 404},
		{"GET", "/v1/experiments/shared/comparison", teamAToken, "", 403},
		{"GET", "/v1/experiments/exp-b/comparison.csv", teamAToken, "", 403},
		{"GET", "/v1/experiments/exp-b/record", teamAToken, "", 403},
		{"GET", "/v1/experiments/exp-a/record", teamAToken, "", 200},
		{"GET", "/v1/experiments/exp-a/against/exp-a", teamAToken, "", 200},
		{"GET", "/v1/experiments/exp-a/against/exp-b", teamAToken, "", 403},
		{"GET", "/v1/experiments/exp-b/against/exp-a", teamAToken, "", 403},
		{"GET", "/v1/experiments/exp-b/runs/1/interruptions", teamAToken, "", 403},
		{"GET", "/v1/experiments/exp-b/runs/1/trace.json", teamAToken, "", 403},
		{"GET", "/v1/experiments/shared/comparison", adminToken, "", 200},
		{"GET", "/v1/dead-letters", teamAToken, "", 403},
		{"GET", "/v1/unattributed-requests", teamAToken, "", 403},
		{"POST", "/v1/requests/lookup", teamAToken, `{"ids":["x"]}`, 403},
		{"GET", "/v1/dead-letters", adminToken, "", 200},
		{"PUT", "/v1/experiments/exp-a", teamAToken, `{"baseline":"control"}`, 403},
		{"PUT", "/v1/experiments/exp-b", teamAWriter, `{"baseline":"control"}`, 204}, // writes keep their roles
	} {
		code, body := get(t, tc.method, u(tc.path), tc.token, tc.body)
		if code != tc.want {
			t.Errorf("%s %s as %s: %d, want %d\n%s", tc.method, tc.path, tc.token, code, tc.want, body)
		}
	}

	// Nothing a team-a caller reads names team-b's objects.
	for _, path := range []string{"/v1/workloads?" + win, "/v1/pods?limit=1000", "/v1/experiments", "/v1/disruptions?" + win, "/v1/stats",
		"/v1/workloads/team-a/deployment/infer-a?" + win, "/v1/workloads/team-a/deployment/infer-a/trace.json?" + win,
		"/v1/pods/" + podA + "/timeline", "/v1/experiments/exp-a/comparison", "/v1/experiments/exp-a/runs/1/trace.json",
		"/v1/workloads/team-b/deployment/infer-b?" + win, "/v1/experiments/shared", "/v1/pods/" + podB + "/timeline"} {
		_, body := get(t, "GET", u(path), teamAToken, "")
		for _, h := range hidden {
			if strings.Contains(body, h) && !strings.Contains(path, h) {
				t.Errorf("GET %s as team-a names %q:\n%.500s", path, h, body)
			}
		}
	}
}
