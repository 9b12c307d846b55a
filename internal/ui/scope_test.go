package ui_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/auth"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/ui"
)

// The web UI of a caller limited to team-a (a token line's namespaces=) over two teams sharing
// nodes (eventgen.Teams): the experiments, workloads and disruptions pages list team-a's alone
// and say that one namespace is hidden; team-a's workload, pod, experiment and run pages open;
// team-b's, an experiment with pods in both, and an unknown pod are the same 403 page; no page
// it reads names team-b's objects. A caller of every namespace sees both, with no note.
func TestPagesAreScopedToTheCallersNamespaces(t *testing.T) {
	db := pgtest.DB(t)
	envs := eventgen.Teams()
	if _, err := db.Append(context.Background(), envs, nil); err != nil {
		t.Fatal(err)
	}
	var podA, podB string
	for _, env := range envs {
		switch {
		case env.Pod == nil:
		case env.Pod.Namespace == eventgen.TeamA && strings.HasPrefix(env.Pod.Name, "infer-a"):
			podA = env.Pod.UID
		case env.Pod.Namespace == eventgen.TeamB && strings.HasPrefix(env.Pod.Name, "infer-b"):
			podB = env.Pod.UID
		}
	}
	const admin, teamA = "admin-token-0123456789abcdef", "team-a-token-0123456789abcdef"
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(admin+" read admin\n"+teamA+" read team-a namespaces=team-a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := auth.NewTokenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	web, err := ui.New(db, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(auth.Middleware(tf, auth.APIPolicy(false), nil)(apitest.Handler(t, db, api.WithUI(web))))
	t.Cleanup(srv.Close)
	win := url.Values{"from": {eventgen.TeamsStart.Add(-time.Minute).Format(time.RFC3339)}, "to": {eventgen.TeamsStart.Add(10 * time.Minute).Format(time.RFC3339)}}.Encode()
	page := func(token, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const note = "1 namespace is hidden: you may not read it"
	for _, tc := range []struct {
		token, path string
		want        int
		has, hasNot []string
	}{
		{teamA, "/ui/", 200, []string{"exp-a", note}, []string{"exp-b", "/ui/experiments/shared"}},
		{admin, "/ui/", 200, []string{"exp-a", "exp-b", "/ui/experiments/shared"}, []string{"namespaces-hidden"}},
		{teamA, "/ui/workloads?" + win, 200, []string{"team-a/Deployment/infer-a", note}, []string{"infer-b"}},
		{admin, "/ui/workloads?" + win, 200, []string{"infer-a", "infer-b"}, []string{"namespaces-hidden"}},
		{teamA, "/ui/disruptions?" + win, 200, []string{"drain of node", "team-a/Deployment/infer-a", note}, []string{"infer-b"}},
		{admin, "/ui/disruptions?" + win, 200, []string{"infer-a", "infer-b"}, []string{"namespaces-hidden"}},
		{teamA, "/ui/workloads/team-a/Deployment/infer-a?" + win, 200, []string{"infer-a"}, nil},
		{teamA, "/ui/pods/" + podA, 200, []string{"infer-a"}, nil},
		{teamA, "/ui/experiments/exp-a", 200, []string{"exp-a"}, nil},
		{teamA, "/ui/experiments/exp-a/runs/1", 200, []string{"exp-a"}, nil},
		{teamA, "/ui/experiments/exp-a/arms/priority", 200, []string{"exp-a"}, nil},
		{teamA, "/ui/workloads/team-b/Deployment/infer-b?" + win, 403, []string{`You may not read namespace &#34;team-b&#34;.`}, nil},
		{teamA, "/ui/workloads/team-b/Deployment/no-such-workload?" + win, 403, []string{`You may not read namespace &#34;team-b&#34;.`}, nil},
		{teamA, "/ui/workloads?namespace=team-b&" + win, 403, nil, nil},
		{teamA, "/ui/disruptions?namespace=team-b&" + win, 403, nil, nil},
		{teamA, "/ui/pods/" + podB, 403, []string{"in the namespaces you may read"}, nil},
		{teamA, "/ui/pods/00000000-0000-4000-8000-000000000000", 403, []string{"in the namespaces you may read"}, nil},
		{admin, "/ui/pods/00000000-0000-4000-8000-000000000000", 404, nil, nil},
		{teamA, "/ui/experiments/exp-b", 403, []string{"No experiment &#34;exp-b&#34; in the namespaces you may read."}, nil},
		{teamA, "/ui/experiments/shared", 403, nil, nil},
		{teamA, "/ui/experiments/no-such-experiment", 403, nil, nil},
		{teamA, "/ui/experiments/exp-b/runs/1", 403, nil, nil},
		{teamA, "/ui/experiments/exp-b/runs/1/version", 403, nil, nil},
		{teamA, "/ui/experiments/shared/arms/control", 403, nil, nil},
		{admin, "/ui/experiments/shared", 200, nil, nil},
		{admin, "/ui/workloads/team-b/Deployment/infer-b?" + win, 200, nil, nil},
	} {
		code, body := page(tc.token, tc.path)
		who := "admin"
		if tc.token == teamA {
			who = "team-a"
			for _, h := range []string{"team-b", "infer-b", "exp-b", podB} {
				if strings.Contains(body, h) && !strings.Contains(tc.path, h) {
					t.Errorf("%s: GET %s names %q", who, tc.path, h)
				}
			}
		}
		if code != tc.want {
			t.Errorf("%s: GET %s: %d, want %d", who, tc.path, code, tc.want)
			continue
		}
		for _, s := range tc.has {
			if !strings.Contains(body, s) {
				t.Errorf("%s: GET %s: no %q in the page", who, tc.path, s)
			}
		}
		for _, s := range tc.hasNot {
			if strings.Contains(body, s) {
				t.Errorf("%s: GET %s: %q in the page", who, tc.path, s)
			}
		}
	}
}
