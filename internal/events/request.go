package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// FixedRequestMethods are the methods a fixed request may use.
var FixedRequestMethods = []string{"GET", "HEAD", "POST", "PUT"}

// MaxFixedRequestPath bounds the path (and query) of a fixed request.
const MaxFixedRequestPath = 2048

// FixedRequestOf reads the fixed.request of a definition over def (the prober's default
// request): nil when the definition names none, an error naming the bad key when the request
// it names cannot be sent safely (a method beyond FixedRequestMethods, a port outside
// 1..65535, a path that is not an absolute path, a body beyond MaxStringLen) or holds a value
// of the wrong type (kept in Extra by the lenient decoding).
func FixedRequestOf(exp *Experiment, def FixedRequest) (*FixedRequest, error) {
	if exp.Fixed == nil {
		return nil, nil
	}
	for _, m := range exp.Fixed.misfits("fixed") {
		if strings.HasPrefix(m, "fixed.request") {
			return nil, errors.New(m)
		}
	}
	r := exp.Fixed.Request
	if r == nil {
		return nil, nil
	}
	req := FixedRequest{Method: def.Method, Port: def.Port, Path: def.Path, Body: def.Body}
	if r.Method != "" {
		req.Method = strings.ToUpper(strings.TrimSpace(r.Method))
	}
	if r.Path != "" {
		req.Path = r.Path
	}
	if r.Body != "" {
		req.Body = r.Body
	}
	if r.Port != 0 {
		req.Port = r.Port
	}
	if err := req.Check(); err != nil {
		return nil, err
	}
	return &req, nil
}

// Check reports why r cannot be sent safely, nil when it can.
func (r FixedRequest) Check() error {
	switch {
	case !validMethod(r.Method):
		return fmt.Errorf("fixed.request.method: %q is not one of %s", r.Method, strings.Join(FixedRequestMethods, ", "))
	case r.Port < 1 || r.Port > 65535:
		return fmt.Errorf("fixed.request.port: want a port from 1 to 65535, got %d", r.Port)
	case len(r.Body) > MaxStringLen:
		return fmt.Errorf("fixed.request.body: longer than %d bytes", MaxStringLen)
	}
	if _, err := parsePath(r.Path); err != nil {
		return fmt.Errorf("fixed.request.path: %w", err)
	}
	return nil
}

// URL is the request's URL on a pod: http://<podIP>:<port><path>, built with net/url so that
// nothing in the path can change the host.
func (r FixedRequest) URL(podIP string) (string, error) {
	if err := r.Check(); err != nil {
		return "", err
	}
	ip, err := netip.ParseAddr(podIP)
	if err != nil || ip.Zone() != "" {
		return "", fmt.Errorf("pod IP %q is not an IP address", podIP)
	}
	p, _ := parsePath(r.Path)
	u := url.URL{Scheme: "http", Host: netip.AddrPortFrom(ip, uint16(r.Port)).String(),
		Path: p.Path, RawPath: p.RawPath, RawQuery: p.RawQuery}
	return u.String(), nil
}

// parsePath accepts an absolute path with an optional query: "/", then no authority
// ("//host"), no scheme, no fragment, no spaces or control characters.
func parsePath(s string) (*url.URL, error) {
	switch {
	case s == "":
		return nil, fmt.Errorf("missing")
	case len(s) > MaxFixedRequestPath:
		return nil, fmt.Errorf("longer than %d bytes", MaxFixedRequestPath)
	case s[0] != '/':
		return nil, fmt.Errorf("%q does not start with /", s)
	case strings.HasPrefix(s, "//") || strings.HasPrefix(s, "/\\"):
		return nil, fmt.Errorf("%q names a host", s)
	case strings.ContainsAny(s, "#\\"):
		return nil, fmt.Errorf("%q holds a fragment or a backslash", s)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c <= ' ' || c == 0x7f:
			return nil, fmt.Errorf("%q holds a space or a control character", s)
		case c > 0x7f:
			return nil, fmt.Errorf("%q holds a byte beyond ASCII (percent-encode it)", s)
		}
	}
	u, err := url.ParseRequestURI(s)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", s, err)
	}
	if u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return nil, fmt.Errorf("%q is not an absolute path", s)
	}
	if strings.HasPrefix(u.Path, "//") || strings.HasPrefix(u.EscapedPath(), "//") {
		return nil, fmt.Errorf("%q names a host once decoded", s) // "/%2F…"
	}
	return u, nil
}

func validMethod(m string) bool {
	for _, ok := range FixedRequestMethods {
		if m == ok {
			return true
		}
	}
	return false
}

// rawKind names the JSON type of a raw value, as a misfit's reason does: "a list", "null".
func rawKind(raw json.RawMessage) string {
	switch jsonType(raw) {
	case "null":
		return "null"
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "boolean":
		return "a boolean"
	case "array":
		return "a list"
	case "object":
		return "an object"
	}
	return "nothing"
}
