package auth

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/schedlens/schedlens/internal/config"
)

// Flags are the authentication settings of a binary with a protected listener (the api, the
// collector's ingest).
type Flags struct {
	Mode      string // "", "none", "token", "kubernetes"
	TokenFile string
	Resource  Resource
	CacheTTL  time.Duration
	Audiences string // comma-separated TokenReview audiences
	Metrics   bool   // protect /metrics too (role read)
	Insecure  bool   // -insecure-no-auth: serve without authentication on any address
	// ScopeResource (RESOURCE[.GROUP]) and ScopeVerb are what -auth kubernetes checks in a
	// namespace before a caller reads it (DefineScope; DefaultScope when not defined).
	ScopeResource, ScopeVerb string
}

// Define registers -auth, -auth-token-file, -auth-group, -auth-resource, -auth-namespace,
// -auth-resource-name, -auth-audiences, -auth-cache-ttl, -auth-metrics and -insecure-no-auth.
// what names the protected listener(s) in the usage.
func (f *Flags) Define(fs *config.FlagSet, what string) {
	fs.String(&f.Mode, "auth", "SCHEDLENS_AUTH", "", "authentication of "+what+": token (with -auth-token-file; the default when it is set), kubernetes (TokenReview + SubjectAccessReview) or none")
	fs.String(&f.TokenFile, "auth-token-file", "SCHEDLENS_AUTH_TOKEN_FILE", "", "`FILE` of bearer tokens, one TOKEN ROLE [NAME] per line (ROLE read or write), read again when it changes")
	fs.String(&f.Resource.Group, "auth-group", "SCHEDLENS_AUTH_GROUP", DefaultResource.Group, "-auth kubernetes: API group of the resource callers need get (read) or create (write) on")
	fs.String(&f.Resource.Resource, "auth-resource", "SCHEDLENS_AUTH_RESOURCE", DefaultResource.Resource, "-auth kubernetes: the resource callers need get (read) or create (write) on")
	fs.String(&f.Resource.Namespace, "auth-namespace", "SCHEDLENS_AUTH_NAMESPACE", "", "-auth kubernetes: check the resource in this namespace (default: cluster-wide)")
	fs.String(&f.Resource.Name, "auth-resource-name", "SCHEDLENS_AUTH_RESOURCE_NAME", "", "-auth kubernetes: the object name checked (default: any)")
	fs.String(&f.Audiences, "auth-audiences", "SCHEDLENS_AUTH_AUDIENCES", "", "-auth kubernetes: comma-separated audiences a token must be meant for (default: the API server's)")
	fs.Duration(&f.CacheTTL, "auth-cache-ttl", "SCHEDLENS_AUTH_CACHE_TTL", DefaultCacheTTL, "-auth kubernetes: how long a decision is reused for the same token")
	fs.Bool(&f.Metrics, "auth-metrics", "SCHEDLENS_AUTH_METRICS", false, "/metrics needs role read too (default: open, like /healthz and /readyz)")
	fs.Bool(&f.Insecure, "insecure-no-auth", "SCHEDLENS_INSECURE_NO_AUTH", false, "serve "+what+" without authentication on a non-loopback address (only behind something that authenticates)")
}

// DefineScope registers -auth-scope-resource and -auth-scope-verb: what the api checks, in
// -auth kubernetes mode, before a caller reads a namespace (the collector's listeners read no
// namespace and do not define them).
func (f *Flags) DefineScope(fs *config.FlagSet) {
	fs.String(&f.ScopeResource, "auth-scope-resource", "SCHEDLENS_AUTH_SCOPE_RESOURCE", DefaultScope.Resource,
		"-auth kubernetes: a caller reads a namespace where it may -auth-scope-verb this `RESOURCE[.GROUP]` (pods: what it may get with kubectl; or a resource of the chart's, such as namespaces.schedlens.io); cluster-wide, every namespace")
	fs.String(&f.ScopeVerb, "auth-scope-verb", "SCHEDLENS_AUTH_SCOPE_VERB", DefaultScope.Verb, "-auth kubernetes: the verb -auth-scope-resource is checked with")
}

// scopeRule is the ScopeRule the flags name (DefaultScope where they are not set).
func (f Flags) scopeRule() (ScopeRule, error) {
	rule := DefaultScope
	if f.ScopeResource != "" {
		res, group, err := ParseScopeResource(f.ScopeResource)
		if err != nil {
			return rule, config.Usagef("-auth-scope-resource %v", err)
		}
		rule.Resource, rule.Group = res, group
	}
	if f.ScopeVerb != "" {
		rule.Verb = strings.TrimSpace(f.ScopeVerb)
	}
	return rule, nil
}

// Check validates the flags without building anything.
func (f Flags) Check() error {
	switch f.mode() {
	case "none":
		if f.TokenFile != "" {
			return config.Usagef("-auth none with -auth-token-file: choose one")
		}
	case "token":
		if f.TokenFile == "" {
			return config.Usagef("-auth token needs -auth-token-file")
		}
	case "kubernetes":
		if f.TokenFile != "" {
			return config.Usagef("-auth kubernetes with -auth-token-file: choose one")
		}
		if f.Resource.Resource == "" {
			return config.Usagef("-auth kubernetes needs -auth-resource")
		}
		if f.CacheTTL < 0 {
			return config.Usagef("-auth-cache-ttl must be ≥ 0")
		}
		if _, err := f.scopeRule(); err != nil {
			return err
		}
	default:
		return config.Usagef("-auth %q: want token, kubernetes or none", f.Mode)
	}
	return nil
}

func (f Flags) mode() string {
	switch m := config.Lower(f.Mode); {
	case m == "" && f.TokenFile != "":
		return "token"
	case m == "":
		return "none"
	default:
		return m
	}
}

// Kubernetes reports whether the flags ask for -auth kubernetes (the caller then needs a client).
func (f Flags) Kubernetes() bool { return f.mode() == "kubernetes" }

// Build returns the configured Authenticator, nil when none is (client is used by -auth
// kubernetes only).
func (f Flags) Build(client kubernetes.Interface, logger *slog.Logger) (Authenticator, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	switch f.mode() {
	case "token":
		return NewTokenFile(f.TokenFile, logger)
	case "kubernetes":
		if client == nil {
			return nil, fmt.Errorf("-auth kubernetes: no Kubernetes client")
		}
		var aud []string
		for _, a := range strings.Split(f.Audiences, ",") {
			if a = strings.TrimSpace(a); a != "" {
				aud = append(aud, a)
			}
		}
		ttl := f.CacheTTL
		if ttl == 0 {
			ttl = -1 // asked for no cache
		}
		k, err := NewKubernetes(client, f.Resource, ttl, aud...)
		if err != nil {
			return nil, err
		}
		rule, err := f.scopeRule()
		if err != nil {
			return nil, err
		}
		return k.WithScope(rule)
	}
	return nil, nil
}
