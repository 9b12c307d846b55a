package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/auth"
	"github.com/schedlens/schedlens/internal/scope"
	"github.com/schedlens/schedlens/internal/testenv"
)

const (
	readToken  = "read-token-0123456789abcdef"
	writeToken = "write-token-0123456789abcdef"
)

// writeFile replaces path's content the way a Secret volume does: a new file renamed over it.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func tokenFile(t *testing.T, content string) (string, *auth.TokenFile) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, content)
	tf, err := auth.NewTokenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return path, tf
}

type answer struct {
	code      int
	challenge []string
	problem   map[string]any
}

func call(t *testing.T, h http.Handler, method, path, authz string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader("{}"))
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := answer{code: rec.Code, challenge: rec.Result().Header.Values("WWW-Authenticate")}
	if rec.Code >= 400 {
		if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("%s %s: %d with content type %q, want application/problem+json", method, path, rec.Code, ct)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &a.problem); err != nil || a.problem["status"] != float64(rec.Code) {
			t.Errorf("%s %s: problem %q (%v)", method, path, rec.Body.String(), err)
		}
	}
	return a
}

// ok answers 204 and says who called.
var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Caller", auth.Caller(r.Context()))
	w.WriteHeader(http.StatusNoContent)
})

// The api's policy with a token file: everything but the probes needs a token, a read token
// reads, only a write token writes; refusals are problem+json with a challenge on 401.
func TestTokenFileRoles(t *testing.T) {
	_, tf := tokenFile(t, "# the dashboards\n"+readToken+" read grafana\n\n"+writeToken+"   write  # the load generator\n")
	h := auth.Middleware(tf, auth.APIPolicy(false), nil)(ok)
	for _, tc := range []struct {
		method, path, authz string
		want                int
	}{
		{"GET", "/healthz", "", 204},
		{"GET", "/readyz", "", 204},
		{"GET", "/metrics", "", 204},
		{"GET", "/v1/stats", "", 401},
		{"GET", "/ui/", "", 401},
		{"GET", "/", "", 401},
		{"GET", "/openapi.json", "", 401},
		{"GET", "/v1/stats", "Bearer nonsense-token-000000000", 401},
		{"GET", "/v1/stats", "Bearer " + readToken, 204},
		{"GET", "/ui/experiments", "Bearer " + readToken, 204},
		{"GET", "/ui/", "Basic " + base64.StdEncoding.EncodeToString([]byte("me:"+readToken)), 204},
		{"POST", "/v1/requests/lookup", "Bearer " + readToken, 204},
		{"PUT", "/v1/experiments/day1", "", 401},
		{"PUT", "/v1/experiments/day1", "Bearer " + readToken, 403},
		{"PUT", "/v1/experiments/day1", "bearer " + writeToken, 204},
		{"DELETE", "/v1/experiments/day1", "Bearer " + readToken, 403},
		{"DELETE", "/v1/experiments/day1", "Bearer " + writeToken, 204},
		{"GET", "/v1/experiments/day1", "Bearer " + writeToken, 204}, // write implies read
		{"POST", "/v1/ingest/requests", "Bearer " + readToken, 403},
		{"POST", "/v1/records", "Bearer " + readToken, 403},
		{"POST", "/v1/records", "Bearer " + writeToken, 204},
		{"GET", "/v1/experiments/day1/record", "Bearer " + readToken, 204},
	} {
		a := call(t, h, tc.method, tc.path, tc.authz)
		if a.code != tc.want {
			t.Errorf("%s %s (%q): %d, want %d", tc.method, tc.path, tc.authz, a.code, tc.want)
		}
		if tc.want == 401 && (len(a.challenge) == 0 || !strings.HasPrefix(a.challenge[0], "Bearer ")) {
			t.Errorf("%s %s: 401 with WWW-Authenticate %q, want a Bearer challenge", tc.method, tc.path, a.challenge)
		}
		if tc.want == 401 && strings.HasPrefix(tc.path, "/ui/") && len(a.challenge) != 2 {
			t.Errorf("%s: challenges %q, want Bearer and Basic (a browser asks for the token)", tc.path, a.challenge)
		}
	}
	if a := call(t, auth.Middleware(tf, auth.APIPolicy(true), nil)(ok), "GET", "/metrics", ""); a.code != 401 {
		t.Errorf("/metrics with -auth-metrics and no token: %d, want 401", a.code)
	}
	// The name given in the file reaches the handler.
	req := httptest.NewRequest("GET", "/v1/stats", nil)
	req.Header.Set("Authorization", "Bearer "+readToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got := rec.Header().Get("X-Caller"); got != "grafana" {
		t.Errorf("caller %q, want grafana", got)
	}
}

// The ingest listener's policy: everything needs write.
func TestIngestNeedsWrite(t *testing.T) {
	_, tf := tokenFile(t, readToken+" read\n"+writeToken+" write\n")
	h := auth.Middleware(tf, auth.IngestPolicy(), nil)(ok)
	for authz, want := range map[string]int{"": 401, "Bearer " + readToken: 403, "Bearer " + writeToken: 204} {
		if a := call(t, h, "POST", "/v1/ingest/requests", authz); a.code != want {
			t.Errorf("ingest with %q: %d, want %d", authz, a.code, want)
		}
	}
}

// A changed file is read again: a new token works and a removed one is refused; a change that
// does not parse keeps the tokens read before.
func TestTokenFileIsReadAgain(t *testing.T) {
	path, tf := tokenFile(t, readToken+" read\n")
	ctx := context.Background()
	if _, err := tf.Authorize(ctx, readToken, auth.Read); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, writeToken+" write new\n")
	until := func(what string, cond func() bool) {
		t.Helper()
		if !testenv.Until(10*time.Second, 20*time.Millisecond, cond) {
			t.Fatalf("%s: not within 10s", what)
		}
	}
	until("the new token accepted", func() bool { _, err := tf.Authorize(ctx, writeToken, auth.Write); return err == nil })
	if _, err := tf.Authorize(ctx, readToken, auth.Read); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("the removed token: %v, want ErrUnauthenticated", err)
	}
	writeFile(t, path, "short read\n")
	time.Sleep(1100 * time.Millisecond) // past the once-a-second check
	if _, err := tf.Authorize(ctx, writeToken, auth.Write); err != nil {
		t.Errorf("after a change that does not parse: %v, want the tokens read before kept", err)
	}
}

// A token file that does not parse is refused at start, naming the line, never the token.
func TestTokenFileErrors(t *testing.T) {
	for content, want := range map[string]string{
		"":                     "no tokens",
		"# only a comment\n":   "no tokens",
		readToken + "\n":       "line 1: want TOKEN ROLE [NAME]",
		readToken + " admin\n": `line 1: role "admin"`,
		"\nshort read\n":       "line 2: the token is shorter than 16",
		readToken + " read\n" + readToken + " write\n":  "line 2: the same token as line 1",
		readToken + " read a b\n":                       "line 1: want TOKEN ROLE [NAME] [namespaces=NS,NS…], got 4 fields",
		readToken + " read a namespaces=x b\n":          "line 1: want TOKEN ROLE [NAME] [namespaces=NS,NS…], got 5 fields",
		"\n" + readToken + " read namespaces=\n":        `line 2: namespaces=: "" is not a namespace name`,
		readToken + " read namespaces=team-a,Team_B\n":  `line 1: namespaces=: "Team_B" is not a namespace name`,
		readToken + " read namespaces=a,,b\n":           `line 1: namespaces=: "" is not a namespace name`,
		readToken + " read namespaces=a namespaces=b\n": "line 1: namespaces= given twice",
	} {
		path := filepath.Join(t.TempDir(), "tokens")
		writeFile(t, path, content)
		_, err := auth.NewTokenFile(path, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", content, err, want)
		}
		if err != nil && strings.Contains(err.Error(), readToken) {
			t.Errorf("%q: the error shows the token: %v", content, err)
		}
		if err != nil && !strings.Contains(err.Error(), path) {
			t.Errorf("%q: the error does not name the file: %v", content, err)
		}
	}
}

// A token line may name the namespaces its caller reads; a line without namespaces= reads every
// namespace, as before. The middleware hands the handler the caller's scope.
func TestTokenFileNamespaces(t *testing.T) {
	const teamA, teamAB = "team-a-token-0123456789", "team-ab-token-0123456789"
	_, tf := tokenFile(t, readToken+" read grafana\n"+
		teamA+" read team-a namespaces=team-a\n"+
		teamAB+" write namespaces=team-b,team-a # NAME defaults to token-3\n")
	known := func(context.Context) ([]string, error) { return []string{"team-a", "team-b", "team-c"}, nil }
	var got scope.Scope
	h := auth.Middleware(tf, auth.APIPolicy(false), nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		if got, err = scope.Resolve(r.Context(), known); err != nil {
			t.Error(err)
		}
		w.Header().Set("X-Caller", auth.Caller(r.Context()))
		w.WriteHeader(http.StatusNoContent)
	}))
	for _, tc := range []struct {
		token, caller string
		want          []string // nil: every namespace
		hidden        int
	}{
		{readToken, "grafana", nil, 0},
		{teamA, "team-a", []string{"team-a"}, 2},
		{teamAB, "token-3", []string{"team-a", "team-b"}, 1},
	} {
		req := httptest.NewRequest("GET", "/v1/workloads", nil)
		req.Header.Set("Authorization", "Bearer "+tc.token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 204 || rec.Header().Get("X-Caller") != tc.caller {
			t.Fatalf("%s: %d, caller %q", tc.caller, rec.Code, rec.Header().Get("X-Caller"))
		}
		if diff := cmp.Diff(tc.want, got.Namespaces()); diff != "" || got.Hidden() != tc.hidden {
			t.Errorf("%s: %v, want %v with %d hidden (-want +got):\n%s", tc.caller, got, tc.want, tc.hidden, diff)
		}
	}
	// The scope limits reads; a write token limited to namespaces still writes.
	if a := call(t, auth.Middleware(tf, auth.APIPolicy(false), nil)(ok), "PUT", "/v1/experiments/day1", "Bearer "+teamAB); a.code != 204 {
		t.Errorf("PUT with a write token limited to namespaces: %d, want 204", a.code)
	}
}

// Without authentication only loopback addresses may be served, unless insecure.
func TestCheckBind(t *testing.T) {
	for _, tc := range []struct {
		addr          string
		authenticated bool
		insecure      bool
		ok            bool
	}{
		{"127.0.0.1:8080", false, false, true},
		{"127.0.0.2:0", false, false, true},
		{"[::1]:8080", false, false, true},
		{"localhost:8080", false, false, true},
		{":8080", false, false, false},
		{"0.0.0.0:8080", false, false, false},
		{"10.1.2.3:8080", false, false, false},
		{"[::]:8080", false, false, false},
		{"api.example:8080", false, false, false},
		{":8080", true, false, true},
		{":8080", false, true, true},
	} {
		err := auth.CheckBind("api", tc.addr, tc.authenticated, tc.insecure)
		if (err == nil) != tc.ok {
			t.Errorf("%q authenticated %v insecure %v: %v, want ok %v", tc.addr, tc.authenticated, tc.insecure, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "-insecure-no-auth") {
			t.Errorf("%q: %v does not say how to proceed", tc.addr, err)
		}
	}
}
