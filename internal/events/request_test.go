package events_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
)

var defaultRequest = events.FixedRequest{Method: "GET", Port: 8000, Path: "/"}

// fixedOf is a definition whose fixed.request is the JSON text request, decoded as a
// definition from the wire is.
func fixedOf(t testing.TB, request string) *events.Experiment {
	exp, err := definitionOf(request)
	if err != nil {
		t.Fatalf("fixture %s: %v", request, err)
	}
	return exp
}

func definitionOf(request string) (*events.Experiment, error) {
	var exp events.Experiment
	if err := json.Unmarshal([]byte(`{"name":"day20","fixed":{"request":`+request+`}}`), &exp); err != nil {
		return nil, err
	}
	return &exp, nil
}

func TestFixedRequestOf(t *testing.T) {
	tests := []struct {
		name    string
		request string
		want    string // "METHOD URL body" on pod 10.244.1.17, or "error: …"
	}{
		{"lab day20", `{"method":"post","port":8000,"path":"/v2/models/model/infer","body":"{\"inputs\":\"hello\"}"}`,
			`POST http://10.244.1.17:8000/v2/models/model/infer {"inputs":"hello"}`},
		{"defaults", `{}`, "GET http://10.244.1.17:8000/ "},
		{"nulls are defaults", `{"method":null,"port":null,"path":null}`, "GET http://10.244.1.17:8000/ "},
		{"port as string, query kept", `{"port":"9000","path":"/health?full=1&x=%2F"}`, "GET http://10.244.1.17:9000/health?full=1&x=%2F "},
		{"escaped path kept", `{"path":"/v1/models/a%2Fb/infer"}`, "GET http://10.244.1.17:8000/v1/models/a%2Fb/infer "},
		{"an @ stays in the path", `{"path":"/@169.254.169.254/latest/meta-data"}`, "GET http://10.244.1.17:8000/@169.254.169.254/latest/meta-data "},

		{"userinfo and host", `{"path":"@169.254.169.254/latest/meta-data"}`, `error: fixed.request.path: "@169.254.169.254/latest/meta-data" does not start with /`},
		{"scheme-relative", `{"path":"//169.254.169.254/latest"}`, `error: fixed.request.path: "//169.254.169.254/latest" names a host`},
		{"backslash host", `{"path":"/\\169.254.169.254"}`, `error: fixed.request.path: "/\\169.254.169.254" names a host`},
		{"absolute URL", `{"path":"http://169.254.169.254/"}`, `error: fixed.request.path: "http://169.254.169.254/" does not start with /`},
		{"fragment", `{"path":"/a#b"}`, `error: fixed.request.path: "/a#b" holds a fragment or a backslash`},
		{"encoded slash after the first", `{"path":"/%2Fevil/x"}`, `error: fixed.request.path: "/%2Fevil/x" names a host once decoded`},
		{"raw non-ASCII", `{"path":"/modèle"}`, `error: fixed.request.path: "/modèle" holds a byte beyond ASCII (percent-encode it)`},
		{"encoded non-ASCII", `{"path":"/mod%C3%A8le"}`, "GET http://10.244.1.17:8000/mod%C3%A8le "},
		{"space", `{"path":"/a b"}`, `error: fixed.request.path: "/a b" holds a space or a control character`},
		{"newline", `{"path":"/a\r\nHost: evil"}`, `error: fixed.request.path: "/a\r\nHost: evil" holds a space or a control character`},
		{"method not allowed", `{"method":"DELETE"}`, `error: fixed.request.method: "DELETE" is not one of GET, HEAD, POST, PUT`},
		{"method CONNECT", `{"method":"connect"}`, `error: fixed.request.method: "CONNECT" is not one of GET, HEAD, POST, PUT`},
		{"method a number", `{"method":1}`, "error: fixed.request.method: want a string, got a number"},
		{"port 0", `{"port":0}`, "error: fixed.request.port: want a port from 1 to 65535, got 0"},
		{"port 65536", `{"port":65536}`, "error: fixed.request.port: want a port from 1 to 65535, got 65536"},
		{"port fractional", `{"port":80.5}`, "error: fixed.request.port: want a port from 1 to 65535, got 80.5"},
		{"port a word", `{"port":"http"}`, `error: fixed.request.port: want a port from 1 to 65535, got "http"`},
		{"request a string", `"GET /"`, "error: fixed.request: want an object, got a string"},
		{"body too long", `{"body":"` + strings.Repeat("x", events.MaxStringLen+1) + `"}`, "error: fixed.request.body: longer than 65536 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := events.FixedRequestOf(fixedOf(t, tt.request), defaultRequest)
			var got string
			if err != nil {
				got = "error: " + err.Error()
			} else {
				u, err := req.URL("10.244.1.17")
				if err != nil {
					t.Fatalf("URL: %v", err)
				}
				got = req.Method + " " + u + " " + req.Body
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFixedRequestNamesNone(t *testing.T) {
	for _, exp := range []*events.Experiment{
		{Name: "a"},
		{Name: "b", Fixed: &events.Workload{Model: "llama"}},
		{Name: "c", Fixed: &events.Workload{Text: "a string"}},
		fixedOf(t, "null"),
	} {
		if req, err := events.FixedRequestOf(exp, defaultRequest); req != nil || err != nil {
			t.Errorf("%s: got %+v, %v; want nil, nil", exp.Name, req, err)
		}
	}
}

func TestFixedRequestURLNeedsAnIP(t *testing.T) {
	for _, ip := range []string{"", "pod.local", "10.0.0.1:80", "fe80::1%eth0", "10.0.0.1/8"} {
		if u, err := defaultRequest.URL(ip); err == nil {
			t.Errorf("URL(%q) = %q, want an error", ip, u)
		}
	}
	if u, err := defaultRequest.URL("fd00::17"); err != nil || u != "http://[fd00::17]:8000/" {
		t.Errorf("URL(IPv6) = %q, %v", u, err)
	}
}

// FuzzFixedRequest: whatever a definition's fixed.request says, the request that comes out
// goes to the pod's own IP and port, with an allowed method and an absolute path.
func FuzzFixedRequest(f *testing.F) {
	for _, s := range []string{
		`{"method":"POST","port":8000,"path":"/v2/models/model/infer","body":"{\"inputs\":\"hello\"}"}`,
		`{"method":"POST","port":8000,"path":"/v2/models/model/infer"}`,
		`{"port":"9000","path":"/health?full=1"}`,
		`{"path":"@169.254.169.254/latest"}`, `{"path":"//evil/"}`, `{"path":"/%2e%2e/"}`,
		`{"path":"/a?b#c"}`, `{"method":"get","port":1}`, `{"port":65535.0}`, `"x"`, `[]`, `null`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, request string) {
		exp, err := definitionOf(request)
		if err != nil {
			return
		}
		req, err := events.FixedRequestOf(exp, defaultRequest)
		if err != nil || req == nil {
			return
		}
		if !slices.Contains(events.FixedRequestMethods, req.Method) {
			t.Fatalf("method %q accepted", req.Method)
		}
		for _, ip := range []string{"10.244.1.17", "fd00::17"} {
			s, err := req.URL(ip)
			if err != nil {
				t.Fatalf("URL(%s) of an accepted request %+v: %v", ip, req, err)
			}
			u, err := url.Parse(s)
			if err != nil {
				t.Fatalf("URL %q does not parse: %v", s, err)
			}
			if u.Scheme != "http" || u.Hostname() != ip || u.Port() != strconv.Itoa(req.Port) || u.User != nil || u.Fragment != "" {
				t.Fatalf("request %+v on %s goes to %q (scheme %q host %q port %q user %v)", req, ip, s, u.Scheme, u.Hostname(), u.Port(), u.User)
			}
			if !strings.HasPrefix(u.EscapedPath(), "/") || strings.HasPrefix(u.EscapedPath(), "//") {
				t.Fatalf("request %+v: path %q of %q", req, u.EscapedPath(), s)
			}
		}
	})
}
