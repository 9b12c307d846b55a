package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/auth"
	"github.com/schedlens/schedlens/internal/scope"
)

// reviewer answers TokenReviews (token "sa-reader" is system:serviceaccount:ns:reader, "down"
// fails as an unreachable API server would) and SubjectAccessReviews (reader may get, not
// create), counting the reviews. The real API server's answers are TestKubernetesAuthAdmitsTheChartsRoles'
// (lab/manifest); this checks what the authenticator does with them.
func reviewer(reviews *atomic.Int32, lastSAR *authorizationv1.SubjectAccessReviewSpec) *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		reviews.Add(1)
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		switch tr.Spec.Token {
		case "down":
			return true, nil, errors.New("connection refused")
		case "sa-reader":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
				Username: "system:serviceaccount:ns:reader", Groups: []string{"system:serviceaccounts"}}}
		}
		return true, tr, nil
	})
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		*lastSAR = sar.Spec
		sar.Status.Allowed = sar.Spec.User == "system:serviceaccount:ns:reader" && sar.Spec.ResourceAttributes.Verb == "get"
		return true, sar, nil
	})
	return c
}

// Read is checked as get and write as create on the configured resource; a decision is reused
// within the TTL, an unknown token is not cached, and an API server that does not answer is a
// 503, not a 401.
func TestKubernetesReviewsAndCaches(t *testing.T) {
	var reviews atomic.Int32
	var sar authorizationv1.SubjectAccessReviewSpec
	res := auth.Resource{Group: "schedlens.io", Resource: "experiments", Namespace: "ai-lab"}
	k, err := auth.NewKubernetes(reviewer(&reviews, &sar), res, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	name, err := k.Authorize(ctx, "sa-reader", auth.Read)
	if err != nil || name != "system:serviceaccount:ns:reader" {
		t.Fatalf("reader, read: %q %v", name, err)
	}
	if ra := sar.ResourceAttributes; ra == nil || ra.Verb != "get" || ra.Group != "schedlens.io" || ra.Resource != "experiments" || ra.Namespace != "ai-lab" ||
		len(sar.Groups) != 1 {
		t.Errorf("SubjectAccessReview %+v %+v, want get on experiments.schedlens.io in ai-lab for the reviewed user and groups", sar, sar.ResourceAttributes)
	}
	if _, err := k.Authorize(ctx, "sa-reader", auth.Write); !errors.Is(err, auth.ErrForbidden) || sar.ResourceAttributes.Verb != "create" {
		t.Errorf("reader, write: %v (verb %s), want ErrForbidden after a create check", err, sar.ResourceAttributes.Verb)
	}
	before := reviews.Load()
	for range 3 {
		if _, err := k.Authorize(ctx, "sa-reader", auth.Read); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Authorize(ctx, "sa-reader", auth.Write); !errors.Is(err, auth.ErrForbidden) {
			t.Fatal(err)
		}
	}
	if got := reviews.Load() - before; got != 0 {
		t.Errorf("%d reviews within the TTL, want the cached decisions", got)
	}
	for range 2 {
		if _, err := k.Authorize(ctx, "random", auth.Read); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Errorf("an unknown token: %v, want ErrUnauthenticated", err)
		}
	}
	if got := reviews.Load() - before; got != 2 {
		t.Errorf("%d reviews of an unknown token asked twice, want 2 (not cached)", got)
	}
	if _, err := k.Authorize(ctx, "down", auth.Read); !errors.Is(err, auth.ErrUnavailable) {
		t.Errorf("API server down: %v, want ErrUnavailable", err)
	}
	h := auth.Middleware(k, auth.APIPolicy(false), nil)(ok)
	for token, want := range map[string]int{"sa-reader": 204, "random": 401, "down": 503} {
		a := call(t, h, http.MethodGet, "/v1/stats", "Bearer "+token)
		if a.code != want {
			t.Errorf("GET /v1/stats with %q: %d, want %d", token, a.code, want)
		}
	}
}

// rbac answers TokenReviews for "team-a" and "admin" and SubjectAccessReviews as RBAC would with
// a RoleBinding of team-a's ServiceAccount in namespace team-a (get pods there, and the role
// get experiments.schedlens.io cluster-wide) and a ClusterRoleBinding of admin (get pods and
// experiments everywhere); "flaky" is reviewed, but its namespace checks fail. It counts the
// SubjectAccessReviews per namespace and keeps the last one.
func rbac(sars map[string]int, last *authorizationv1.ResourceAttributes) *fake.Clientset {
	c := fake.NewClientset()
	c.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if u := tr.Spec.Token; u == "team-a" || u == "admin" || u == "flaky" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: u}}
		}
		return true, tr, nil
	})
	var mu sync.Mutex
	c.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ra := sar.Spec.ResourceAttributes
		mu.Lock()
		sars[ra.Namespace]++
		*last = *ra
		mu.Unlock()
		if sar.Spec.User == "flaky" && ra.Resource != "experiments" {
			return true, nil, errors.New("connection refused")
		}
		switch {
		case ra.Verb == "get" && ra.Resource == "experiments" && ra.Group == "schedlens.io" && ra.Namespace == "":
			sar.Status.Allowed = true // the role, for both
		case ra.Verb == "get" && ra.Resource == "pods" && ra.Group == "":
			sar.Status.Allowed = sar.Spec.User == "admin" || sar.Spec.User == "team-a" && ra.Namespace == "team-a"
		}
		return true, sar, nil
	})
	return c
}

// A caller reads the namespaces where it may get pods (the default scope rule), every namespace
// when it may cluster-wide; each decision is a SubjectAccessReview in that namespace, cached
// per token and namespace within the TTL and asked again without a cache; a check that fails is
// ErrUnavailable, not a refusal.
func TestKubernetesNamespaces(t *testing.T) {
	ctx := context.Background()
	sars := map[string]int{}
	var last authorizationv1.ResourceAttributes
	k, err := auth.NewKubernetes(rbac(sars, &last), auth.DefaultResource, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	known := func(context.Context) ([]string, error) { return []string{"team-a", "team-b", "team-c"}, nil }
	resolve := func(token string) scope.Scope {
		t.Helper()
		if _, err := k.Authorize(ctx, token, auth.Read); err != nil {
			t.Fatalf("%s: %v", token, err)
		}
		c, err := k.Namespaces(ctx, token)
		if err != nil {
			t.Fatalf("%s: %v", token, err)
		}
		s, err := scope.Resolve(scope.NewContext(ctx, c), known)
		if err != nil {
			t.Fatalf("%s: %v", token, err)
		}
		return s
	}
	if s := resolve("team-a"); !s.Limited() || !cmp.Equal(s.Namespaces(), []string{"team-a"}) || s.Hidden() != 2 {
		t.Errorf("team-a reads %v, want team-a only, 2 hidden", s)
	}
	if last.Verb != "get" || last.Resource != "pods" || last.Group != "" {
		t.Errorf("namespace check %+v, want get pods", last)
	}
	if s := resolve("admin"); s.Limited() {
		t.Errorf("admin reads %v, want every namespace (allowed cluster-wide)", s)
	}
	want := map[string]int{"": 4, "team-a": 1, "team-b": 1, "team-c": 1} // "": each one's role and cluster-wide check
	if diff := cmp.Diff(want, sars); diff != "" {
		t.Errorf("SubjectAccessReviews per namespace (-want +got):\n%s", diff)
	}
	for range 3 {
		resolve("team-a")
		resolve("admin")
	}
	if diff := cmp.Diff(want, sars); diff != "" {
		t.Errorf("SubjectAccessReviews within the TTL, want the cached decisions (-want +got):\n%s", diff)
	}
	c, _ := k.Namespaces(ctx, "team-a")
	if ok, err := c.Allows(ctx, "team-b"); ok || err != nil {
		t.Errorf("team-a reads team-b by name: %v %v, want refused", ok, err)
	}
	if _, err := k.Namespaces(ctx, "random"); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("an unknown token's namespaces: %v, want ErrUnauthenticated", err)
	}
	if _, err := k.Authorize(ctx, "flaky", auth.Read); err != nil {
		t.Fatal(err)
	}
	fc, _ := k.Namespaces(ctx, "flaky")
	if _, err := scope.Resolve(scope.NewContext(ctx, fc), known); !errors.Is(err, scope.ErrUnavailable) {
		t.Errorf("namespace checks failing: %v, want ErrUnavailable", err)
	}

	// Without a cache every read asks again; another rule is checked as configured.
	clear(sars)
	nc, err := auth.NewKubernetes(rbac(sars, &last), auth.DefaultResource, -1)
	if err == nil {
		nc, err = nc.WithScope(auth.ScopeRule{Group: "schedlens.io", Resource: "namespaces", Verb: "list"})
	}
	if err != nil {
		t.Fatal(err)
	}
	c, _ = nc.Namespaces(ctx, "team-a")
	for range 2 {
		if ok, _ := c.Allows(ctx, "team-a"); ok {
			t.Errorf("team-a may not list namespaces.schedlens.io, allowed")
		}
	}
	if sars["team-a"] != 2 || last.Verb != "list" || last.Resource != "namespaces" || last.Group != "schedlens.io" {
		t.Errorf("%d checks of team-a without a cache, last %+v; want 2, list namespaces.schedlens.io", sars["team-a"], last)
	}
}

// The middleware puts the caller's namespaces in the request's context.
func TestKubernetesMiddlewareScopes(t *testing.T) {
	sars := map[string]int{}
	var last authorizationv1.ResourceAttributes
	k, err := auth.NewKubernetes(rbac(sars, &last), auth.DefaultResource, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h := auth.Middleware(k, auth.APIPolicy(false), nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, err := scope.Check(r.Context(), r.URL.Query().Get("namespace"))
		switch {
		case err != nil:
			w.WriteHeader(http.StatusServiceUnavailable)
		case !ok:
			w.WriteHeader(http.StatusForbidden)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	for _, tc := range []struct {
		token, ns string
		want      int
	}{{"team-a", "team-a", 204}, {"team-a", "team-b", 403}, {"admin", "team-b", 204}, {"flaky", "team-a", 503}} {
		req := httptest.NewRequest("GET", "/v1/workloads?namespace="+tc.ns, nil)
		req.Header.Set("Authorization", "Bearer "+tc.token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s reads %s: %d, want %d", tc.token, tc.ns, rec.Code, tc.want)
		}
	}
}
