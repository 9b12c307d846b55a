package manifest_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/testenv"
)

// deploymentEnv is the plain environment the chart gives the container of the Deployment whose
// name ends in suffix.
func deploymentEnv(t *testing.T, objs []*unstructured.Unstructured, suffix string) map[string]string {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() != "Deployment" || !strings.HasSuffix(u.GetName(), suffix) {
			continue
		}
		var d appsv1.Deployment
		fromUnstructured(t, u, &d)
		env := map[string]string{}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.ValueFrom == nil {
				env[e.Name] = e.Value
			}
		}
		return env
	}
	t.Fatalf("no Deployment *%s rendered", suffix)
	return nil
}

// caller is a ServiceAccount of namespace ns, bound (when role is not "") to the chart's
// ClusterRole <release>-schedlens-<role>, and a token for it.
func caller(t *testing.T, ns, name, clusterRole string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := cp.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if clusterRole != "" {
		bindClusterWide(t, ns, name, clusterRole)
	}
	tr, err := cp.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// bindClusterWide binds ServiceAccount ns/name to clusterRole in every namespace (a
// ClusterRoleBinding).
func bindClusterWide(t *testing.T, ns, name, clusterRole string) {
	t.Helper()
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name + "-" + strings.TrimPrefix(clusterRole, ns+"-")},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}
	if _, err := cp.Client.RbacV1().ClusterRoleBindings().Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The api binary with the chart's -auth kubernetes settings, asking the lab's real API server
// (RBAC authorization on) as the chart's ServiceAccount: a ServiceAccount bound to the chart's
// read ClusterRole reads and is refused a PUT, one bound to the write role PUTs (and, reading
// every namespace, reads the definition back; the reader, of no namespace, may not), one bound
// to neither is refused (403), and a token the API server does not know is 401.
func TestKubernetesAuthAdmitsTheChartsRoles(t *testing.T) {
	bin := binaries(t)
	s := scenarioNamed(t, "07-kubernetes-auth")
	const ns = "authk8s"
	objs := installScenario(t, s, ns)
	env := deploymentEnv(t, objs, "-api")
	if env["SCHEDLENS_AUTH"] != "kubernetes" || env["SCHEDLENS_AUTH_GROUP"] != "schedlens.io" || env["SCHEDLENS_AUTH_RESOURCE"] != "experiments" {
		t.Fatalf("the chart's api environment %v: want SCHEDLENS_AUTH=kubernetes on experiments.schedlens.io", env)
	}
	// The api asks with the chart's own ServiceAccount (auth-delegator through the chart).
	kubeconfig, _ := serviceAccountClient(t, ns, ns+"-schedlens")
	addr := testenv.FreeAddr(t)
	env["SCHEDLENS_HTTP_ADDR"], env["SCHEDLENS_DATABASE_URL"], env["KUBECONFIG"] = addr, pgtest.URL(t), kubeconfig
	env["SCHEDLENS_AUTH_CACHE_TTL"] = "1s"
	api := start(t, bin+"/api", env)
	waitReady(t, "api", "http://"+addr+"/readyz", api)

	reader := caller(t, ns, "dashboards", ns+"-schedlens-read")
	writer := caller(t, ns, "owner", ns+"-schedlens-write")
	// The owner reads every namespace: an experiment defined through the API without pods
	// lives in none, and only such a caller reads it (docs/security.md, Namespaces).
	bindClusterWide(t, ns, "owner", ns+"-schedlens-read-namespace")
	stranger := caller(t, ns, "stranger", "")
	def := `{"name":"day1","arms":["control","priority"]}`
	for _, tc := range []struct {
		who, method, path, token, body string
		want                           int
	}{
		{"nobody", "GET", "/v1/stats", "", "", 401},
		{"an unknown token", "GET", "/v1/stats", "not-a-token-the-api-server-issued", "", 401},
		{"a ServiceAccount without the role", "GET", "/v1/stats", stranger, "", 403},
		{"a ServiceAccount without the role", "GET", "/ui/", stranger, "", 403},
		{"the read role", "GET", "/v1/stats", reader, "", 200},
		{"the read role", "GET", "/ui/", reader, "", 200},
		{"the read role", "PUT", "/v1/experiments/day1", reader, def, 403},
		{"the write role", "PUT", "/v1/experiments/day1", writer, def, 204},
		{"the write role", "GET", "/v1/experiments/day1", writer, "", 200},
		{"the read role of some namespaces", "GET", "/v1/experiments/day1", reader, "", 403},
		{"nobody", "GET", "/healthz", "", "", 200},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+addr+tc.path, strings.NewReader(tc.body))
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %s %s: %d, want %d\n%s", tc.who, tc.method, tc.path, resp.StatusCode, tc.want, body)
		}
		if tc.want >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %s %s: content type %q, want problem+json", tc.who, tc.method, tc.path, resp.Header.Get("Content-Type"))
		}
	}
	if strings.Contains(api.String(), reader) || strings.Contains(api.String(), writer) {
		t.Errorf("the api logged a token:\n%s", api.String())
	}
}
