package e2e_test

import (
	"context"
	"io"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	mobynetwork "github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Ryuk, testcontainers' reaper, is an image from a registry: it stays off (each container and
// the network are removed by the test's cleanups instead) unless the caller chose otherwise.
// The containers are reached on 127.0.0.1 only: inside a container (/.dockerenv), testcontainers
// would otherwise take the default gateway for the Docker host, and only loopback may be a
// target of the tests' traffic.
func init() {
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
}

// loopbackPorts publishes every exposed port on an ephemeral port of 127.0.0.1 only.
func loopbackPorts(ports ...string) testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		if hc.PortBindings == nil {
			hc.PortBindings = mobynetwork.PortMap{}
		}
		for _, p := range ports {
			hc.PortBindings[mobynetwork.MustParsePort(p)] = []mobynetwork.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "0"}}
		}
	})
}

// The whole stack as containers through testcontainers-go — Postgres, NATS, the correlator and
// the api from the schedlens image, and `collector replay` of the sample — serves the sample's
// timelines exactly as align computes them.
func TestContainerStack(t *testing.T) {
	postgresImage, natsImage := dockerImages(t)
	checkSchedlensImage(t, testImage)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	nw, err := network.New(ctx)
	if err != nil {
		t.Fatalf("network: %v", err)
	}
	testcontainers.CleanupNetwork(t, nw)
	password := randomSuffix(t)
	start := func(name, image string, opts ...testcontainers.ContainerCustomizer) *testcontainers.DockerContainer {
		t.Helper()
		opts = append([]testcontainers.ContainerCustomizer{network.WithNetwork([]string{name}, nw)}, opts...)
		c, err := testcontainers.Run(ctx, image, opts...)
		testcontainers.CleanupContainer(t, c)
		if err != nil {
			if c != nil {
				if logs, lerr := c.Logs(ctx); lerr == nil {
					b, _ := io.ReadAll(logs)
					t.Logf("%s logs:\n%s", name, b)
				}
			}
			t.Fatalf("start %s (%s): %v", name, image, err)
		}
		return c
	}
	began := time.Now()
	start("postgres", postgresImage,
		testcontainers.WithEnv(map[string]string{"POSTGRES_USER": "schedlens", "POSTGRES_PASSWORD": password, "POSTGRES_DB": "schedlens"}),
		testcontainers.WithWaitStrategy(wait.ForExec([]string{"pg_isready", "-h", "127.0.0.1", "-U", "schedlens", "-d", "schedlens"}).WithStartupTimeout(time.Minute)))
	start("nats", natsImage,
		testcontainers.WithCmd("-js", "-sd", "/data"),
		testcontainers.WithWaitStrategy(wait.ForLog("Server is ready").WithStartupTimeout(time.Minute)))
	env := map[string]string{
		"SCHEDLENS_NATS_URL":     "nats://nats:4222",
		"SCHEDLENS_DATABASE_URL": "postgres://schedlens@postgres:5432/schedlens?sslmode=disable",
		"PGPASSWORD":             password,
		"SCHEDLENS_LOG_FORMAT":   "json",
	}
	start("correlator", testImage,
		testcontainers.WithCmd("/usr/local/bin/correlator", "serve"),
		testcontainers.WithEnv(env), testcontainers.WithEnv(map[string]string{"SCHEDLENS_METRICS_ADDR": ":9091", "SCHEDLENS_BATCH_WAIT": "50ms"}),
		testcontainers.WithExposedPorts("9091/tcp"), loopbackPorts("9091/tcp"),
		testcontainers.WithWaitStrategy(wait.ForHTTP("/readyz").WithPort("9091/tcp").WithForcedIPv4LocalHost().WithStartupTimeout(time.Minute)))
	api := start("api", testImage,
		testcontainers.WithCmd("/usr/local/bin/api"),
		testcontainers.WithEnv(env), testcontainers.WithEnv(map[string]string{"SCHEDLENS_HTTP_ADDR": ":8080", "SCHEDLENS_INSECURE_NO_AUTH": "true"}),
		testcontainers.WithExposedPorts("8080/tcp"), loopbackPorts("8080/tcp"),
		testcontainers.WithWaitStrategy(wait.ForHTTP("/readyz").WithPort("8080/tcp").WithForcedIPv4LocalHost().WithStartupTimeout(time.Minute)))
	t.Logf("stack ready in %s", time.Since(began).Round(100*time.Millisecond))

	replay := start("collector", testImage,
		testcontainers.WithCmd("/usr/local/bin/collector", "replay", "/sample/sample.jsonl"),
		testcontainers.WithEnv(env),
		testcontainers.WithFiles(testcontainers.ContainerFile{HostFilePath: "../testdata/sample.jsonl", ContainerFilePath: "/sample/sample.jsonl", FileMode: 0o644}),
		testcontainers.WithWaitStrategy(wait.ForExit().WithExitTimeout(2*time.Minute)))
	state, err := replay.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if state.ExitCode != 0 {
		logs, _ := replay.Logs(ctx)
		b, _ := io.ReadAll(logs)
		t.Fatalf("collector replay exited %d:\n%s", state.ExitCode, b)
	}

	endpoint, err := api.PortEndpoint(ctx, "8080/tcp", "http")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") && !strings.HasPrefix(endpoint, "http://localhost:") {
		t.Fatalf("api endpoint %s is not on loopback", endpoint)
	}
	checkSampleServed(t, endpoint)
	checkPublishedOnLoopback(t, inspectContainer(t, api.GetContainerID()))
	if code, _, _ := get(t, endpoint+"/metrics"); code != 200 {
		t.Errorf("api /metrics: %d", code)
	}
}
