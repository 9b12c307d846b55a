package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedlens/schedlens/internal/scope"
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

// ScopeRule is what a Kubernetes caller must be allowed in a namespace to read what schedlens
// holds of it: Verb on Resource (in Group) in that namespace; allowed cluster-wide, every
// namespace.
type ScopeRule struct {
	Group, Resource, Verb string
}

// DefaultScope is get on pods: a caller reads in schedlens the namespaces whose pods it may get
// with kubectl.
var DefaultScope = ScopeRule{Resource: "pods", Verb: "get"}

// ParseScopeResource reads RESOURCE[.GROUP] as kubectl writes it (pods,
// namespaces.schedlens.io, deployments.apps).
func ParseScopeResource(s string) (resource, group string, err error) {
	resource, group, _ = strings.Cut(strings.TrimSpace(s), ".")
	if resource == "" {
		return "", "", fmt.Errorf("resource %q: want RESOURCE[.GROUP], such as pods or namespaces.schedlens.io", s)
	}
	return resource, group, nil
}

// String is the rule as kubectl names its resource: verb resource[.group].
func (r ScopeRule) String() string {
	if r.Group == "" {
		return r.Verb + " " + r.Resource
	}
	return r.Verb + " " + r.Resource + "." + r.Group
}

// Verb is the verb a role is checked with.
func Verb(need Role) string {
	if need >= Write {
		return "create"
	}
	return "get"
}

// DefaultCacheTTL is how long a Kubernetes decision is reused for the same token and role (or
// namespace).
const DefaultCacheTTL = 30 * time.Second

// maxCache bounds the token reviews and the decisions kept (a decision per token and role, and
// per token and namespace read); beyond, that cache starts again empty.
const maxCache = 1 << 16

// Kubernetes authenticates a bearer token with a TokenReview and authorizes it with a
// SubjectAccessReview for Verb(need) on Resource, through the API server (the caller needs the
// system:auth-delegator rights: create tokenreviews and subjectaccessreviews). The namespaces
// a caller reads are checked the same way, one SubjectAccessReview per namespace for the
// ScopeRule (Namespaces). Reviews and decisions — allowed or refused, for an authenticated
// token — are cached for TTL under the token's digest (and the role or namespace); unknown tokens
// are not cached (random tokens cannot fill the cache), nor are failures to ask.
type Kubernetes struct {
	client    kubernetes.Interface
	resource  Resource
	scope     ScopeRule
	audiences []string
	ttl       time.Duration
	now       func() time.Time

	mu      sync.Mutex
	reviews map[[32]byte]review
	cache   map[cacheKey]decision
}

// cacheKey is what a decision is about: a token's role (namespaced false), or whether it may
// read a namespace ("" for every namespace).
type cacheKey struct {
	digest     [32]byte
	need       Role
	namespaced bool
	namespace  string
}

// review is an authenticated token's user, as the TokenReview said.
type review struct {
	user  authenticationv1.UserInfo
	until time.Time
}

type decision struct {
	allowed bool
	until   time.Time
}

// NewKubernetes returns an Authenticator asking the API server of client. ttl 0 is
// DefaultCacheTTL (negative: nothing cached); audiences, when given, are the TokenReview's (a
// token must be meant for one). Its namespaces are checked with DefaultScope until WithScope.
func NewKubernetes(client kubernetes.Interface, r Resource, ttl time.Duration, audiences ...string) (*Kubernetes, error) {
	if r.Resource == "" {
		return nil, errors.New("kubernetes auth: no resource to authorize against")
	}
	if ttl == 0 {
		ttl = DefaultCacheTTL
	}
	return &Kubernetes{client: client, resource: r, scope: DefaultScope, audiences: audiences, ttl: ttl, now: time.Now,
		reviews: map[[32]byte]review{}, cache: map[cacheKey]decision{}}, nil
}

// WithScope sets what a caller must be allowed in a namespace to read it (verb get when rule
// names none); it returns k.
func (k *Kubernetes) WithScope(rule ScopeRule) (*Kubernetes, error) {
	if rule.Resource == "" {
		return nil, errors.New("kubernetes auth: no resource to check namespaces against")
	}
	if rule.Verb == "" {
		rule.Verb = "get"
	}
	k.scope = rule
	return k, nil
}

// Authorize implements Authenticator.
func (k *Kubernetes) Authorize(ctx context.Context, token string, need Role) (string, error) {
	d := digest(token)
	u, err := k.review(ctx, d, token)
	if err != nil {
		return "", err
	}
	allowed, err := k.decide(ctx, cacheKey{digest: d, need: need}, u, &authorizationv1.ResourceAttributes{
		Namespace: k.resource.Namespace, Verb: Verb(need), Group: k.resource.Group,
		Resource: k.resource.Resource, Name: k.resource.Name,
	})
	if err != nil {
		return "", err
	}
	if !allowed {
		return u.Username, ErrForbidden
	}
	return u.Username, nil
}

// Namespaces implements Scoper: the caller may read a namespace where the ScopeRule allows it
// (a SubjectAccessReview in that namespace, cached like the role's), every namespace where it
// allows it cluster-wide.
func (k *Kubernetes) Namespaces(ctx context.Context, token string) (scope.Checker, error) {
	d := digest(token)
	u, err := k.review(ctx, d, token)
	if err != nil {
		return nil, err
	}
	return namespaceChecker{k: k, digest: d, user: u}, nil
}

// namespaceChecker is one caller's scope.Checker.
type namespaceChecker struct {
	k      *Kubernetes
	digest [32]byte
	user   authenticationv1.UserInfo
}

// Allows implements scope.Checker.
func (c namespaceChecker) Allows(ctx context.Context, ns string) (bool, error) {
	r := c.k.scope
	return c.k.decide(ctx, cacheKey{digest: c.digest, namespaced: true, namespace: ns}, c.user,
		&authorizationv1.ResourceAttributes{Namespace: ns, Verb: r.Verb, Group: r.Group, Resource: r.Resource})
}

// review returns the user of an authenticated token: cached, or from a TokenReview.
func (k *Kubernetes) review(ctx context.Context, d [32]byte, token string) (authenticationv1.UserInfo, error) {
	now := k.now()
	k.mu.Lock()
	r, ok := k.reviews[d]
	k.mu.Unlock()
	if ok && !now.After(r.until) {
		return r.user, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, err := k.client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: k.audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("%w: token review: %v", ErrUnavailable, err)
	}
	if !tr.Status.Authenticated {
		return authenticationv1.UserInfo{}, ErrUnauthenticated
	}
	k.mu.Lock()
	if len(k.reviews) >= maxCache {
		k.reviews = map[[32]byte]review{}
	}
	k.reviews[d] = review{user: tr.Status.User, until: now.Add(k.ttl)}
	k.mu.Unlock()
	return tr.Status.User, nil
}

// decide returns whether u may do attrs: cached under key, or from a SubjectAccessReview.
func (k *Kubernetes) decide(ctx context.Context, key cacheKey, u authenticationv1.UserInfo, attrs *authorizationv1.ResourceAttributes) (bool, error) {
	now := k.now()
	k.mu.Lock()
	d, ok := k.cache[key]
	k.mu.Unlock()
	if ok && !now.After(d.until) {
		return d.allowed, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := k.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra, ResourceAttributes: attrs,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("%w: subject access review: %v", ErrUnavailable, err)
	}
	d = decision{allowed: sar.Status.Allowed && !sar.Status.Denied, until: now.Add(k.ttl)}
	k.mu.Lock()
	if len(k.cache) >= maxCache {
		k.cache = map[cacheKey]decision{}
	}
	k.cache[key] = d
	k.mu.Unlock()
	return d.allowed, nil
}
