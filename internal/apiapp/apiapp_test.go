package apiapp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/apiapp"
	"github.com/schedlens/schedlens/internal/auth"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/pipetest"
	"github.com/schedlens/schedlens/internal/store"
)

const (
	readToken  = "read-0123456789abcdef0123456789"
	writeToken = "write-0123456789abcdef0123456789"
)

// start runs the api with o on a loopback port until the test ends and returns its base URL.
func start(t *testing.T, o apiapp.Options) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	bound := make(chan string, 1)
	done := make(chan error, 1)
	o.HTTPAddr, o.Bound = "127.0.0.1:0", func(addr string) { bound <- addr }
	go func() { done <- apiapp.Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("api: %v", err)
		}
	})
	select {
	case addr := <-bound:
		return "http://" + addr
	case err := <-done:
		t.Fatalf("api did not start: %v", err)
	}
	return ""
}

func do(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("%s %s: %d %s, not problem+json", method, url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp.StatusCode, string(b)
}

// The api with a token file, on the real database: /v1/* and /ui/ without a token are 401,
// a read token reads and is refused a PUT (403), a write token PUTs (204); the probes stay open.
func TestTokenFileProtectsTheAPI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(readToken+" read dashboards\n"+writeToken+" write owner\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := auth.NewTokenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := start(t, apiapp.Options{DatabaseURL: pgtest.URL(t), Auth: tf})
	def := `{"name":"day1","arms":["control","priority"]}`
	for _, tc := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/healthz", "", "", 200},
		{"GET", "/readyz", "", "", 200},
		{"GET", "/v1/stats", "", "", 401},
		{"GET", "/v1/experiments", "", "", 401},
		{"GET", "/ui/", "", "", 401},
		{"GET", "/v1/stats", "wrong-0123456789abcdef", "", 401},
		{"GET", "/v1/stats", readToken, "", 200},
		{"GET", "/ui/", readToken, "", 200},
		{"PUT", "/v1/experiments/day1", "", def, 401},
		{"PUT", "/v1/experiments/day1", readToken, def, 403},
		{"PUT", "/v1/experiments/day1", writeToken, def, 204},
		{"GET", "/v1/experiments/day1", readToken, "", 200},
	} {
		if code, body := do(t, tc.method, base+tc.path, tc.token, tc.body); code != tc.want {
			t.Errorf("%s %s with token %q: %d, want %d\n%s", tc.method, tc.path, tc.token, code, tc.want, body)
		}
	}
}

// Without authentication the api refuses a non-loopback address before anything else, and
// serves one with -insecure-no-auth.
func TestNoAuthNeedsLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, addr := range []string{":0", "0.0.0.0:0"} {
		err := apiapp.Run(ctx, apiapp.Options{HTTPAddr: addr, DatabaseURL: "postgres://root@127.0.0.1:1/none?sslmode=disable"})
		if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
			t.Errorf("%q without auth: %v, want a refusal", addr, err)
		}
	}
	base := start(t, apiapp.Options{DatabaseURL: pgtest.URL(t), InsecureNoAuth: true})
	if code, body := do(t, "GET", base+"/v1/stats", "", ""); code != 200 {
		t.Errorf("loopback without auth: %d %s", code, body)
	}
}

// The api on a role with only store.ReadOnlyGrants (docs/security.md): every read endpoint
// answers, the web UI too, and a PUT fails cleanly (a problem, nothing stored).
func TestAPIOnAReadOnlyRole(t *testing.T) {
	ctx := context.Background()
	owner := pgtest.URL(t)
	role := "schedlens_ro_" + strings.ReplaceAll(t.Name(), "Test", "")[:8]
	role = strings.ToLower(role) + fmt.Sprint(time.Now().UnixNano()%1_000_000)
	if err := store.CreateLoginRole(ctx, pgtest.AdminURL(), role, "ro-password"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.DropRole(context.Background(), owner, role); err != nil {
			t.Errorf("drop role: %v", err)
		}
	})
	if err := store.GrantReadOnly(ctx, owner, role); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(owner)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "ro-password")
	base := start(t, apiapp.Options{DatabaseURL: u.String(), InsecureNoAuth: true})
	for _, path := range []string{"/readyz", "/v1/stats", "/v1/pods", "/v1/experiments", "/v1/dead-letters", "/v1/unattributed-requests",
		"/v1/experiments/none", "/ui/"} {
		code, body := do(t, "GET", base+path, "", "")
		if code != 200 && !(code == 404 && path == "/v1/experiments/none") {
			t.Errorf("GET %s on the read-only role: %d %s", path, code, body)
		}
	}
	if code, body := do(t, "POST", base+"/v1/requests/lookup", "", `{"ids":["request/x/1"]}`); code != 200 {
		t.Errorf("POST /v1/requests/lookup on the read-only role: %d %s", code, body)
	}
	code, body := do(t, "PUT", base+"/v1/experiments/day1", "", `{"name":"day1","arms":["control","priority"]}`)
	if code != 500 || !strings.Contains(body, "Database Refused the Write") {
		t.Errorf("PUT on the read-only role: %d %s, want the 500 problem that says the role may only read", code, body)
	}
	if code, _ := do(t, "GET", base+"/v1/experiments/day1", "", ""); code != 404 {
		t.Errorf("after the refused PUT the experiment is %d, want 404 (nothing stored)", code)
	}
}

// -gpu-idle-threshold 0 is a threshold (no GPU time counts as idle), not "the default": an
// api given 0 counts no idle GPU seconds, one given nothing counts them under
// align.IdleUtilThreshold (eventgen's GPUs idle at 0–3 % until their model is Ready).
func TestIdleThresholdZeroIsAThreshold(t *testing.T) {
	p := pipetest.Start(t)
	cfg := eventgen.Default()
	cfg.Runs, cfg.PodsPerArm = 1, 2
	p.Publish(eventgen.Generate(cfg))
	idleRuns := regexp.MustCompile(`"gpu_idle_s","unit":"s",[^}]*?"runs":\[([0-9.,]*)\]`)
	idle := func(threshold *float64) (sum float64) {
		base := start(t, apiapp.Options{DatabaseURL: p.URL, IdleThreshold: threshold, InsecureNoAuth: true})
		code, body := do(t, http.MethodGet, base+"/v1/experiments/day20/comparison", "", "")
		if code != http.StatusOK {
			t.Fatalf("comparison: %d %s", code, body)
		}
		arms := idleRuns.FindAllStringSubmatch(body, -1)
		if len(arms) == 0 {
			t.Fatalf("the comparison has no gpu_idle_s:\n%.600s", body)
		}
		for _, m := range arms {
			for v := range strings.SplitSeq(m[1], ",") {
				if v == "" {
					continue
				}
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				sum += f
			}
		}
		return sum
	}
	if got := idle(nil); got <= 0 {
		t.Errorf("default threshold: %g idle GPU seconds over the arms' runs, want some", got)
	}
	if got := idle(new(0.0)); got != 0 {
		t.Errorf("threshold 0: %g idle GPU seconds, want none", got)
	}
}
