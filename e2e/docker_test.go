package e2e_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/testenv"
)

// The images the container tests run. schedlens:e2e is built from this tree by
// scripts/images.sh (FROM $IMAGE_BASE, default scratch: no registry needed); Postgres and NATS
// are the stand-ins of scripts/standin-images.sh unless SCHEDLENS_TEST_POSTGRES_IMAGE /
// SCHEDLENS_TEST_NATS_IMAGE name others (e.g. postgres:15-bookworm and nats:2.10 where a
// registry is reachable).
const (
	testImage         = "schedlens:e2e"
	standinPostgres   = "schedlens-standin/postgres:15"
	standinNATS       = "schedlens-standin/nats:2.9"
	envPostgresImage  = "SCHEDLENS_TEST_POSTGRES_IMAGE"
	envNATSImage      = "SCHEDLENS_TEST_NATS_IMAGE"
	envTestImageBase  = "IMAGE_BASE"
	imageBuildTimeout = 15 * time.Minute
)

var (
	imagesOnce sync.Once
	imagesErr  error
)

// dockerImages makes sure a Docker engine answers and the images the container tests need are
// built (once per test process; the scripts themselves skip what is cached). It returns the
// Postgres and NATS images.
func dockerImages(t *testing.T) (postgres, nats string) {
	t.Helper()
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		testenv.Unavailable(t, "no Docker engine answers (docker info: %v: %s); .ci/run installs and starts one", err, bytes.TrimSpace(out))
	}
	postgres, nats = os.Getenv(envPostgresImage), os.Getenv(envNATSImage)
	imagesOnce.Do(func() {
		env := append(os.Environ(), "IMAGE_TAG=e2e")
		if os.Getenv(envTestImageBase) == "" {
			env = append(env, envTestImageBase+"=scratch")
		}
		if err := script(env, "../scripts/images.sh"); err != nil {
			imagesErr = err
			return
		}
		if postgres == "" || nats == "" {
			imagesErr = script(os.Environ(), "../scripts/standin-images.sh")
		}
	})
	if imagesErr != nil {
		t.Fatal(imagesErr)
	}
	if postgres == "" {
		postgres = standinPostgres
	}
	if nats == "" {
		nats = standinNATS
	}
	return postgres, nats
}

func script(env []string, path string, args ...string) error {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", path, err, out.String())
		}
		return nil
	case <-time.After(imageBuildTimeout):
		_ = cmd.Process.Kill()
		return fmt.Errorf("%s: not done after %s\n%s", path, imageBuildTimeout, out.String())
	}
}

func randomSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// waitUntil polls ok every 250ms until it holds or timeout passes.
func waitUntil(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	if !testenv.Until(timeout, 250*time.Millisecond, ok) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// checkSampleServed waits until the API at base has stored every envelope of the sample, then
// checks every pod's timeline as served equals align's over the sample.
func checkSampleServed(t *testing.T, base string) {
	t.Helper()
	sample := readSample(t)
	var stats struct {
		EventsTotal      int64 `json:"events_total"`
		DeadLettersTotal int64 `json:"dead_letters_total"`
		PodsTotal        int64 `json:"pods_total"`
	}
	waitUntil(t, "every sample event stored", 2*time.Minute, func() bool {
		_, _, b := get(t, base+"/v1/stats")
		return json.Unmarshal(b, &stats) == nil && stats.EventsTotal == int64(len(sample))
	})
	uids := map[string]bool{}
	for _, env := range sample {
		if env.PodUID() != "" {
			uids[env.PodUID()] = true
		}
	}
	if stats.PodsTotal != int64(len(uids)) || stats.DeadLettersTotal != 0 {
		t.Errorf("stats: %d pods, %d dead letters; want %d pods, none dead", stats.PodsTotal, stats.DeadLettersTotal, len(uids))
	}
	for uid := range uids {
		code, _, body := get(t, base+"/v1/pods/"+uid+"/timeline")
		if code != 200 {
			t.Fatalf("timeline %s: %d %s", uid, code, body)
		}
		want, _ := align.Build(uid, sample, events.DefaultLabelKeys)
		wantJSON, _ := json.Marshal(want)
		if diff := cmp.Diff(decodeJSON(t, wantJSON), decodeJSON(t, body)); diff != "" {
			t.Errorf("timeline %s (-align +api):\n%s", uid, diff)
		}
	}
}

// inspectContainer returns `docker inspect` of a container, decoded.
func inspectContainer(t *testing.T, id string) containerInfo {
	t.Helper()
	out, err := exec.Command("docker", "inspect", id).Output()
	if err != nil {
		t.Fatalf("docker inspect %s: %v", id, err)
	}
	var infos []containerInfo
	if err := json.Unmarshal(out, &infos); err != nil || len(infos) != 1 {
		t.Fatalf("docker inspect %s: %v %s", id, err, out)
	}
	return infos[0]
}

// containerInfo is the part of `docker inspect` the tests look at.
type containerInfo struct {
	Name   string
	Config struct {
		User  string
		Image string
	}
	State struct {
		Status   string
		ExitCode int
	}
	NetworkSettings struct {
		Ports map[string][]struct {
			HostIP   string `json:"HostIp"`
			HostPort string
		}
	}
}

// checkPublishedOnLoopback fails for a port of the container published beyond 127.0.0.1.
func checkPublishedOnLoopback(t *testing.T, c containerInfo) {
	t.Helper()
	for port, bindings := range c.NetworkSettings.Ports {
		for _, b := range bindings {
			if b.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %s on %q:%s, want 127.0.0.1 only", c.Name, port, b.HostIP, b.HostPort)
			}
		}
	}
}

// checkSchedlensImage fails unless the schedlens image runs as the non-root user and has no shell.
func checkSchedlensImage(t *testing.T, image string) {
	t.Helper()
	out, err := exec.Command("docker", "image", "inspect", "-f", "{{.Config.User}}", image).Output()
	if err != nil {
		t.Fatalf("docker image inspect %s: %v", image, err)
	}
	if user := strings.TrimSpace(string(out)); user != "65532:65532" {
		t.Errorf("%s runs as %q, want 65532:65532 (non-root)", image, user)
	}
	for _, sh := range []string{"/bin/sh", "/bin/bash", "/busybox/sh"} {
		if out, err := exec.Command("docker", "run", "--rm", "--entrypoint", sh, image, "-c", "true").CombinedOutput(); err == nil {
			t.Errorf("%s has a shell: %s ran (%s)", image, sh, out)
		}
	}
}
