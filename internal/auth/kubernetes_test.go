package auth_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/schedlens/schedlens/internal/auth"
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
