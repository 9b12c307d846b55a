package manifest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/testenv"
)

// bindInNamespace binds ServiceAccount saNS/name to ClusterRole clusterRole in namespace ns
// alone (a RoleBinding), as a team's admin grants reading its namespace.
func bindInNamespace(t *testing.T, ns, saNS, name, clusterRole string) {
	t.Helper()
	b := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: saNS + "-" + name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: saNS}},
	}
	if _, err := cp.Client.RbacV1().RoleBindings(ns).Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// teams is what eventgen.Teams stored holds, as a caller limited to team-a may and may not see
// it: a team-a pod, a team-b pod, and the words that name team-b's objects.
type teams struct {
	podA, podB string
	hidden     []string
}

func storeTeams(t *testing.T, dbURL string) teams {
	t.Helper()
	envs := eventgen.Teams()
	if _, err := pgtest.Open(t, dbURL).Append(context.Background(), envs, nil); err != nil {
		t.Fatal(err)
	}
	tm := teams{hidden: []string{eventgen.TeamB, "infer-b", "exp-b"}}
	for _, env := range envs {
		switch {
		case env.Pod == nil:
		case env.Pod.Namespace == eventgen.TeamA && strings.HasPrefix(env.Pod.Name, "infer-a"):
			tm.podA = env.Pod.UID
		case env.Pod.Namespace == eventgen.TeamB && strings.HasPrefix(env.Pod.Name, "infer-b"):
			tm.podB = env.Pod.UID
			tm.hidden = append(tm.hidden, env.Pod.UID, env.Pod.Name)
		}
	}
	return tm
}

// readsOnlyTeamA holds the api at base to what a caller with token, limited to team-a, may
// read: team-a's workloads, pods, disruptions, experiments and UI pages, each list saying one
// namespace is hidden and naming nothing of team-b; team-b's workload and pod by name are 403,
// in the API and the UI. all is a token of every namespace: it reads team-b's, so the data is
// there to hide.
func readsOnlyTeamA(t *testing.T, base, token, all string, tm teams) {
	t.Helper()
	win := url.Values{"from": {eventgen.TeamsStart.Add(-time.Minute).Format(time.RFC3339)}, "to": {eventgen.TeamsStart.Add(10 * time.Minute).Format(time.RFC3339)}}.Encode()
	get := func(token, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		path, has string
		want      int
	}{
		{"/v1/workloads?" + win, `"name":"infer-a"`, 200},
		{"/v1/pods?limit=1000", tm.podA, 200},
		{"/v1/disruptions?" + win, `"kind":"drain"`, 200},
		{"/v1/experiments", `"name":"exp-a"`, 200},
		{"/v1/stats", `"pods_total"`, 200},
		{"/v1/workloads/team-a/deployment/infer-a?" + win, `"name":"infer-a"`, 200},
		{"/v1/pods/" + tm.podA + "/timeline", tm.podA, 200},
		{"/ui/", "exp-a", 200},
		{"/ui/workloads?" + win, "team-a/Deployment/infer-a", 200},
		{"/ui/disruptions?" + win, "drain of node", 200},
		{"/ui/workloads/team-a/Deployment/infer-a?" + win, "infer-a", 200},
		{"/ui/pods/" + tm.podA, tm.podA, 200},
		{"/v1/workloads/team-b/deployment/infer-b?" + win, "", 403},
		{"/v1/pods/" + tm.podB + "/timeline", "", 403},
		{"/v1/experiments/exp-b", "", 403},
		{"/v1/workloads?namespace=team-b&" + win, "", 403},
		{"/ui/workloads/team-b/Deployment/infer-b?" + win, "", 403},
		{"/ui/pods/" + tm.podB, "", 403},
	} {
		code, body := get(token, tc.path)
		if code != tc.want || !strings.Contains(body, tc.has) {
			t.Errorf("GET %s: %d, want %d with %q\n%.300s", tc.path, code, tc.want, tc.has, body)
		}
		for _, h := range tm.hidden {
			if strings.Contains(body, h) && !strings.Contains(tc.path, h) {
				t.Errorf("GET %s names %q of team-b", tc.path, h)
			}
		}
		switch {
		case code != 200:
		case strings.HasPrefix(tc.path, "/ui/workloads?"), strings.HasPrefix(tc.path, "/ui/disruptions?"), tc.path == "/ui/":
			if !strings.Contains(body, "1 namespace is hidden") {
				t.Errorf("GET %s: no note that a namespace is hidden", tc.path)
			}
		case strings.HasPrefix(tc.path, "/v1/") && !strings.Contains(tc.path, "team-a/") && !strings.Contains(tc.path, "/timeline"):
			var page struct {
				Hidden *int `json:"namespaces_hidden"`
			}
			if err := json.Unmarshal([]byte(body), &page); err != nil || page.Hidden == nil || *page.Hidden != 1 {
				t.Errorf("GET %s: namespaces_hidden %v (%v), want 1", tc.path, page.Hidden, err)
			}
		}
	}
	for _, path := range []string{"/v1/workloads/team-b/deployment/infer-b?" + win, "/v1/pods/" + tm.podB + "/timeline", "/ui/workloads?" + win} {
		if code, body := get(all, path); code != 200 || !strings.Contains(body, "infer-b") {
			t.Errorf("GET %s as a caller of every namespace: %d, want 200 with infer-b: the test would prove nothing", path, code)
		}
	}
}

// The api binary with the chart's -auth kubernetes settings against the lab's real API server
// (RBAC on): a ServiceAccount bound to the chart's read role, and to its -read-namespace
// ClusterRole by a RoleBinding in team-a only, reads team-a's workloads, pods, disruptions and
// UI pages, gets 403 for team-b's by name, and sees none of team-b's in any list, each saying one
// namespace is hidden; one bound to -read-namespace cluster-wide reads both. The same api in
// token mode with a token line limited to team-a (namespaces=team-a) behaves the same.
func TestKubernetesAuthScopesReadsToANamespace(t *testing.T) {
	bin := binaries(t)
	s := scenarioNamed(t, "07-kubernetes-auth")
	const ns = "authscope"
	objs := installScenario(t, s, ns)
	env := deploymentEnv(t, objs, "-api")
	if env["SCHEDLENS_AUTH_SCOPE_RESOURCE"] != "pods" || env["SCHEDLENS_AUTH_SCOPE_VERB"] != "get" {
		t.Fatalf("the chart's api environment %v: want the scope get pods", env)
	}
	ensureNamespaces(t, eventgen.TeamA, eventgen.TeamB)
	dbURL := pgtest.URL(t)
	tm := storeTeams(t, dbURL)

	t.Run("kubernetes", func(t *testing.T) {
		kubeconfig, _ := serviceAccountClient(t, ns, ns+"-schedlens")
		addr := testenv.FreeAddr(t)
		env["SCHEDLENS_HTTP_ADDR"], env["SCHEDLENS_DATABASE_URL"], env["KUBECONFIG"] = addr, dbURL, kubeconfig
		env["SCHEDLENS_AUTH_CACHE_TTL"] = "1s"
		api := start(t, bin+"/api", env)
		waitReady(t, "api", "http://"+addr+"/readyz", api)

		reader := caller(t, ns, "team-a-reader", ns+"-schedlens-read")
		bindInNamespace(t, eventgen.TeamA, ns, "team-a-reader", ns+"-schedlens-read-namespace")
		admin := caller(t, ns, "platform", ns+"-schedlens-read")
		bindClusterWide(t, ns, "platform", ns+"-schedlens-read-namespace")
		readsOnlyTeamA(t, "http://"+addr, reader, admin, tm)
		if strings.Contains(api.String(), reader) {
			t.Errorf("the api logged a token:\n%s", api.String())
		}
	})

	t.Run("token", func(t *testing.T) {
		const teamA, all = "team-a-token-0123456789abcdef", "platform-token-0123456789abcdef"
		path := filepath.Join(t.TempDir(), "tokens")
		if err := os.WriteFile(path, []byte(all+" read platform\n"+teamA+" read team-a namespaces=team-a\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		addr := testenv.FreeAddr(t)
		api := start(t, bin+"/api", map[string]string{"SCHEDLENS_HTTP_ADDR": addr, "SCHEDLENS_DATABASE_URL": dbURL, "SCHEDLENS_AUTH_TOKEN_FILE": path})
		waitReady(t, "api", "http://"+addr+"/readyz", api)
		readsOnlyTeamA(t, "http://"+addr, teamA, all, tm)
	})
}
