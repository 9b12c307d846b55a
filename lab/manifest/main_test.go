package manifest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

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
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	return code
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds the collector, correlator and api once per test process.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "schedlens-manifest-bin-"); buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+string(filepath.Separator),
			"github.com/schedlens/schedlens/cmd/collector", "github.com/schedlens/schedlens/cmd/correlator", "github.com/schedlens/schedlens/cmd/api")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}
