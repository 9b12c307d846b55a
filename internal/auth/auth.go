// Package auth authenticates and authorizes the callers of schedlens' HTTP listeners (the api
// with its web UI, the collector's ingest): a bearer token, checked against a token file
// (TokenFile) or by the Kubernetes API (Kubernetes: TokenReview, then SubjectAccessReview), is
// allowed a role, read or write, and (Scoper) the namespaces it may read. Middleware puts it in
// front of a handler; Policy says which role each request needs. Without an Authenticator a
// server may only listen on loopback (CheckBind).
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/schedlens/schedlens/internal/ops"
	"github.com/schedlens/schedlens/internal/scope"
)

// Role is what a caller may do. Write implies Read.
type Role int

const (
	// None: the request needs no authentication (/healthz, /readyz).
	None Role = iota
	// Read: every GET of the api and the web UI (and POST /v1/requests/lookup, a read).
	Read
	// Write: Read, plus PUT and DELETE /v1/experiments/{name} and POST /v1/ingest/requests.
	Write
)

func (r Role) String() string {
	switch r {
	case None:
		return "none"
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// ParseRole reads "read" or "write".
func ParseRole(s string) (Role, error) {
	switch s {
	case "read":
		return Read, nil
	case "write":
		return Write, nil
	}
	return None, fmt.Errorf("role %q: want read or write", s)
}

// Errors an Authenticator returns: ErrUnauthenticated is a 401 (no token, an unknown or expired
// token), ErrForbidden a 403 (a known caller without the role), ErrUnavailable a 503 (the
// authority — the Kubernetes API — did not answer).
var (
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("forbidden")
	ErrUnavailable     = errors.New("authentication unavailable")
)

// Authenticator decides whether the caller holding token may act in role need, and names it.
type Authenticator interface {
	Authorize(ctx context.Context, token string, need Role) (name string, err error)
}

// Scoper is an Authenticator whose callers may read some namespaces only: Namespaces returns
// what decides which, for a token Authorize allowed. The middleware puts it in the request's
// context (scope.NewContext), where the api and the web UI find it; the role still decides what a
// caller may do, and writes are not scoped.
type Scoper interface {
	Namespaces(ctx context.Context, token string) (scope.Checker, error)
}

// Policy says which role a request needs (None: open to anyone).
type Policy func(r *http.Request) Role

// APIPolicy is the api's: /healthz and /readyz open, /metrics open unless protectMetrics (then
// read), PUT and DELETE /v1/experiments/{name}, POST /v1/records and POST /v1/ingest/… write, everything else — /v1/*, /ui/,
// /openapi.json — read.
func APIPolicy(protectMetrics bool) Policy {
	return func(r *http.Request) Role {
		switch p := r.URL.Path; {
		case p == "/healthz" || p == "/readyz":
			return None
		case p == "/metrics":
			if protectMetrics {
				return Read
			}
			return None
		case (r.Method == http.MethodPut || r.Method == http.MethodDelete) && strings.HasPrefix(p, "/v1/experiments/"),
			r.Method == http.MethodPost && p == "/v1/records",
			strings.HasPrefix(p, "/v1/ingest/"):
			return Write
		}
		return Read
	}
}

// IngestPolicy is the collector's ingest listener's: everything needs write.
func IngestPolicy() Policy { return func(*http.Request) Role { return Write } }

// MetricsPolicy is a metrics listener's (/metrics, /healthz, /readyz): /metrics needs read when
// protectMetrics, everything else is open.
func MetricsPolicy(protectMetrics bool) Policy {
	api := APIPolicy(protectMetrics)
	return func(r *http.Request) Role {
		if r.URL.Path == "/metrics" {
			return api(r)
		}
		return None
	}
}

type ctxKey struct{}

// Caller returns the name the Authenticator gave the request's caller ("" when the request
// needed no authentication).
func Caller(ctx context.Context) string {
	s, _ := ctx.Value(ctxKey{}).(string)
	return s
}

// Middleware puts a in front of a handler: a request the policy opens passes; any other needs a
// bearer token (`Authorization: Bearer TOKEN`; `Basic` with the token as the password is taken
// too, so a browser can open /ui/ by itself) that a allows the role the request needs; when a is
// a Scoper, the caller's namespaces go in the request's context (scope.NewContext). Refusals are
// problem+json: 401 with a WWW-Authenticate challenge, 403, or 503 with Retry-After.
func Middleware(a Authenticator, p Policy, logger *slog.Logger) func(http.Handler) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			need := p(r)
			if need == None {
				next.ServeHTTP(w, r)
				return
			}
			token, ok := Token(r)
			if !ok {
				challenge(w, r, "")
				ops.Problem(w, http.StatusUnauthorized, "Unauthorized", "this endpoint needs a bearer token (Authorization: Bearer TOKEN)")
				return
			}
			name, err := a.Authorize(r.Context(), token, need)
			ctx := context.WithValue(r.Context(), ctxKey{}, name)
			if s, ok := a.(Scoper); ok && err == nil {
				var c scope.Checker
				if c, err = s.Namespaces(ctx, token); err == nil {
					ctx = scope.NewContext(ctx, c)
				}
			}
			switch {
			case err == nil:
				next.ServeHTTP(w, r.WithContext(ctx))
			case errors.Is(err, ErrForbidden):
				logger.Info("request refused", "caller", name, "method", r.Method, "path", r.URL.Path, "needs", need.String())
				w.Header().Set("WWW-Authenticate", `Bearer realm="schedlens", error="insufficient_scope"`)
				ops.Problem(w, http.StatusForbidden, "Forbidden", fmt.Sprintf("%s %s needs role %s", r.Method, r.URL.Path, need))
			case errors.Is(err, ErrUnauthenticated):
				challenge(w, r, "invalid_token")
				ops.Problem(w, http.StatusUnauthorized, "Unauthorized", "the bearer token is not valid")
			default:
				logger.Warn("authentication failed", "error", err)
				w.Header().Set("Retry-After", "5")
				ops.Problem(w, http.StatusServiceUnavailable, "Authentication Unavailable", "the token could not be checked now; retry")
			}
		})
	}
}

// challenge sets WWW-Authenticate on a 401: Bearer, and Basic for the web UI (a browser then asks
// for the token).
func challenge(w http.ResponseWriter, r *http.Request, errCode string) {
	c := `Bearer realm="schedlens"`
	if errCode != "" {
		c += `, error="` + errCode + `"`
	}
	w.Header().Add("WWW-Authenticate", c)
	if p := r.URL.Path; p == "/" || strings.HasPrefix(p, "/ui") {
		w.Header().Add("WWW-Authenticate", `Basic realm="schedlens", charset="UTF-8"`)
	}
}

// Token returns the request's bearer token: `Authorization: Bearer TOKEN`, or the password of
// `Authorization: Basic` (any user name).
func Token(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, rest, _ := strings.Cut(h, " ")
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, "Bearer") && rest != "":
		return rest, true
	case strings.EqualFold(scheme, "Basic"):
		b, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return "", false
		}
		if _, pw, ok := strings.Cut(string(b), ":"); ok && pw != "" {
			return pw, true
		}
	}
	return "", false
}

// digest is what authenticators keep of a token: they compare and cache digests, never tokens.
func digest(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// CheckBind refuses to serve addr without authentication unless it is a loopback address:
// without an Authenticator (authenticated false) only 127.0.0.0/8, ::1 or localhost, unless
// insecure (-insecure-no-auth). An address without a host (":8080") listens on every interface.
func CheckBind(listener, addr string, authenticated, insecure bool) error {
	if authenticated || insecure || Loopback(addr) {
		return nil
	}
	return fmt.Errorf("%s listener %q is not a loopback address and no authentication is configured: "+
		"set -auth-token-file or -auth kubernetes, listen on 127.0.0.1, or pass -insecure-no-auth "+
		"(only behind something that authenticates)", listener, addr)
}

// Loopback reports whether addr (host:port) names only loopback interfaces.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Protect is how a server puts authentication in front of its handler: with a, the middleware
// with policy p; without, h as it is — after CheckBind allowed addr, and with a warning logged
// when insecure lets it serve a non-loopback address unauthenticated.
func Protect(listener, addr string, h http.Handler, a Authenticator, p Policy, insecure bool, logger *slog.Logger) (http.Handler, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if a != nil {
		return Middleware(a, p, logger)(h), nil
	}
	if err := CheckBind(listener, addr, false, insecure); err != nil {
		return nil, err
	}
	if !Loopback(addr) {
		logger.Warn("serving without authentication (-insecure-no-auth): anyone who reaches this address may read and write", "listener", listener, "addr", addr)
	}
	return h, nil
}
