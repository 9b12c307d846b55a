package auth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Resource is what a Kubernetes caller must be allowed on (SubjectAccessReview's resource
// attributes): `get` for role read, `create` for role write. The defaults name resource
// experiments in API group schedlens.io, cluster-wide — nothing need serve it; RBAC rules name
// any resource (the kube-rbac-proxy model).
type Resource struct {
	Group, Resource string
	// Namespace, when set, makes the check namespaced: a RoleBinding in that namespace suffices.
	Namespace string
	// Name, when set, is the object name checked (a rule's resourceNames).
	Name string
}

// DefaultResource is experiments.schedlens.io, cluster-wide.
var DefaultResource = Resource{Group: "schedlens.io", Resource: "experiments"}

// Verb is the verb a role is checked with.
func Verb(need Role) string {
	if need >= Write {
		return "create"
	}
	return "get"
}

// DefaultCacheTTL is how long a Kubernetes decision is reused for the same token and role.
const DefaultCacheTTL = 30 * time.Second

// maxCache bounds the decisions kept; beyond, the cache starts again empty.
const maxCache = 4096

// Kubernetes authenticates a bearer token with a TokenReview and authorizes it with a
// SubjectAccessReview for Verb(need) on Resource, through the API server (the caller needs the
// system:auth-delegator rights: create tokenreviews and subjectaccessreviews). Decisions —
// allowed or refused, for an authenticated token — are cached for TTL under the token's digest;
// unknown tokens are not cached (random tokens cannot fill the cache), nor are failures to ask.
type Kubernetes struct {
	client    kubernetes.Interface
	resource  Resource
	audiences []string
	ttl       time.Duration
	now       func() time.Time

	mu    sync.Mutex
	cache map[cacheKey]decision
}

type cacheKey struct {
	digest [32]byte
	need   Role
}

type decision struct {
	name    string
	allowed bool
	until   time.Time
}

// NewKubernetes returns an Authenticator asking the API server of client. ttl 0 is
// DefaultCacheTTL; audiences, when given, are the TokenReview's (a token must be meant for one).
func NewKubernetes(client kubernetes.Interface, r Resource, ttl time.Duration, audiences ...string) (*Kubernetes, error) {
	if r.Resource == "" {
		return nil, errors.New("kubernetes auth: no resource to authorize against")
	}
	if ttl == 0 {
		ttl = DefaultCacheTTL
	}
	return &Kubernetes{client: client, resource: r, audiences: audiences, ttl: ttl, now: time.Now, cache: map[cacheKey]decision{}}, nil
}

// Authorize implements Authenticator.
func (k *Kubernetes) Authorize(ctx context.Context, token string, need Role) (string, error) {
	key := cacheKey{digest(token), need}
	now := k.now()
	k.mu.Lock()
	d, ok := k.cache[key]
	k.mu.Unlock()
	if !ok || now.After(d.until) {
		var err error
		if d, err = k.ask(ctx, token, need); err != nil {
			return "", err
		}
		d.until = now.Add(k.ttl)
		k.mu.Lock()
		if len(k.cache) >= maxCache {
			k.cache = map[cacheKey]decision{}
		}
		k.cache[key] = d
		k.mu.Unlock()
	}
	if !d.allowed {
		return d.name, ErrForbidden
	}
	return d.name, nil
}

func (k *Kubernetes) ask(ctx context.Context, token string, need Role) (decision, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, err := k.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: k.audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("%w: token review: %v", ErrUnavailable, err)
	}
	if !tr.Status.Authenticated {
		return decision{}, ErrUnauthenticated
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := k.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: k.resource.Namespace, Verb: Verb(need), Group: k.resource.Group,
				Resource: k.resource.Resource, Name: k.resource.Name,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("%w: subject access review: %v", ErrUnavailable, err)
	}
	return decision{name: u.Username, allowed: sar.Status.Allowed && !sar.Status.Denied}, nil
}
