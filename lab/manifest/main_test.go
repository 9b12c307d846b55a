package manifest_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/schedlens/schedlens/internal/testenv"
	"github.com/schedlens/schedlens/lab/controlplane"
)

// One control plane per process (kube-apiserver keeps process-wide state), with RBAC
// authorization on, as in a cluster: the tests apply to it as system:masters and check the
// chart's ServiceAccount can do exactly what its roles grant.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "schedlens-manifest-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cp, err = controlplane.Start(context.Background(), controlplane.Config{Dir: dir, RBAC: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "control plane:", err)
		return 1
	}
	defer cp.Stop()
	code := m.Run()
	commands.Remove()
	return code
}

// commands are the collector, correlator and api, built once per test process.
var commands = testenv.NewBinaries("github.com/schedlens/schedlens/cmd/collector", "github.com/schedlens/schedlens/cmd/correlator", "github.com/schedlens/schedlens/cmd/api")

func binaries(t *testing.T) string { return commands.Dir(t) }
