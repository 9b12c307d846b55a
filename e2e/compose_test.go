package e2e_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/testenv"
)

// composeCommand is `docker compose` when the plugin is installed, else Debian's docker-compose.
func composeCommand(t *testing.T) []string {
	t.Helper()
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	testenv.Unavailable(t, "neither `docker compose` nor docker-compose is installed; .ci/run installs docker-compose")
	return nil
}

// The README's compose path: `docker-compose up` starts Postgres, NATS, the correlator, the api
// and a collector replaying the sample; the API then serves the sample's timelines as align
// computes them, and only 127.0.0.1 is published.
func TestComposeStack(t *testing.T) {
	postgresImage, natsImage := dockerImages(t)
	compose := composeCommand(t)
	project := "schedlens-e2e-" + randomSuffix(t)
	password := randomSuffix(t) + randomSuffix(t)
	envFile := filepath.Join(t.TempDir(), "compose.env")
	envText := strings.Join([]string{
		"POSTGRES_USER=schedlens", "POSTGRES_PASSWORD=" + password, "POSTGRES_DB=schedlens",
		"PGPASSWORD=" + password, "SCHEDLENS_DATABASE_URL=postgres://schedlens@postgres:5432/schedlens?sslmode=disable", "",
	}, "\n")
	if err := os.WriteFile(envFile, []byte(envText), 0o600); err != nil {
		t.Fatal(err)
	}
	apiPort, correlatorPort := strconv.Itoa(testenv.FreePort(t)), strconv.Itoa(testenv.FreePort(t))
	env := append(os.Environ(),
		"SCHEDLENS_COMPOSE_ENV="+envFile,
		"SCHEDLENS_IMAGE="+testImage,
		"SCHEDLENS_POSTGRES_IMAGE="+postgresImage,
		"SCHEDLENS_NATS_IMAGE="+natsImage,
		"SCHEDLENS_API_PORT="+apiPort,
		"SCHEDLENS_CORRELATOR_PORT="+correlatorPort,
	)
	run := func(args ...string) (string, error) {
		full := append(append(compose[1:], "-f", "../docker-compose.yaml", "-p", project), args...)
		cmd := exec.Command(compose[0], full...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := run("logs", "--no-color")
			t.Logf("compose logs:\n%s", logs)
		}
		if out, err := run("down", "-v", "--remove-orphans"); err != nil {
			t.Errorf("compose down: %v\n%s", err, out)
		}
	})
	start := time.Now()
	if out, err := run("up", "-d"); err != nil {
		t.Fatalf("compose up: %v\n%s", err, out)
	}
	base := "http://127.0.0.1:" + apiPort
	waitUntil(t, "api /readyz", 2*time.Minute, func() bool { code, _, _ := get(t, base+"/readyz"); return code == 200 })
	t.Logf("compose up to api ready: %s", time.Since(start).Round(100*time.Millisecond))
	checkSampleServed(t, base)

	// Each process set its soft memory limit to 90 % of its container's (-auto-gomemlimit).
	for _, c := range []struct {
		metrics string
		limit   float64
	}{
		{"http://127.0.0.1:" + correlatorPort + "/metrics", 512 << 20},
		{base + "/metrics", 256 << 20},
	} {
		if got, want := scrapeValue(t, c.metrics, "go_gc_gomemlimit_bytes"), math.Floor(c.limit*0.9); got != want {
			t.Errorf("%s: go_gc_gomemlimit_bytes %.0f, want %.0f (0.9 × the container's mem_limit)", c.metrics, got, want)
		}
	}

	ids, err := run("ps", "-q")
	if err != nil {
		t.Fatalf("compose ps: %v\n%s", err, ids)
	}
	services := map[string]containerInfo{}
	for _, id := range strings.Fields(ids) {
		c := inspectContainer(t, id)
		checkPublishedOnLoopback(t, c)
		for _, s := range []string{"postgres", "nats", "correlator", "api", "collector"} {
			// v1 names containers project_service_1, v2 project-service-1.
			if strings.HasSuffix(c.Name, "_"+s+"_1") || strings.HasSuffix(c.Name, "-"+s+"-1") {
				services[s] = c
			}
		}
	}
	if len(services) != 5 {
		t.Fatalf("compose ps found %d of the 5 services: %v", len(services), services)
	}
	if c := services["collector"]; c.State.Status != "exited" || c.State.ExitCode != 0 {
		t.Errorf("collector replay: %s, exit code %d; want exited 0", c.State.Status, c.State.ExitCode)
	}
	for _, s := range []string{"correlator", "api", "collector"} {
		if c := services[s]; c.Config.User != "65532:65532" {
			t.Errorf("%s runs as %q", s, c.Config.User)
		}
	}
	if got := fmt.Sprint(len(services["postgres"].NetworkSettings.Ports["5432/tcp"])); got != "0" {
		t.Errorf("postgres is published on the host (%s bindings): it must stay on the compose network", got)
	}
}

// scrapeValue is the sample of the unlabelled metric name in the Prometheus text at url.
func scrapeValue(t *testing.T, url, name string) float64 {
	t.Helper()
	code, _, body := get(t, url)
	if code != 200 {
		t.Fatalf("GET %s: %d", url, code)
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %s: %v", url, line, err)
			}
			return f
		}
	}
	t.Fatalf("%s has no %s", url, name)
	return 0
}
