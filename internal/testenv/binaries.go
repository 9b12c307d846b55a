package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Binaries is a set of packages built together into one temporary directory on first use; the
// package's TestMain calls Remove after m.Run.
type Binaries struct {
	pkgs []string
	once sync.Once
	dir  string
	err  error
}

// NewBinaries is the set of pkgs (import paths, or paths relative to the test's package
// directory), built once per test process for the tests that run the real binaries (the e2e
// tests, the fault tests, the chart's process tests).
func NewBinaries(pkgs ...string) *Binaries { return &Binaries{pkgs: pkgs} }

// Dir builds the set the first time it is asked for and returns the directory holding one
// binary per package, named after it; a failed build fails every test that asks.
func (s *Binaries) Dir(t testing.TB) string {
	t.Helper()
	s.once.Do(func() {
		if s.dir, s.err = os.MkdirTemp("", "schedlens-test-bin-"); s.err != nil {
			return
		}
		goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goBin); err != nil {
			goBin = "go"
		}
		cmd := exec.Command(goBin, append([]string{"build", "-o", s.dir + string(filepath.Separator)}, s.pkgs...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			s.err = fmt.Errorf("go build %v: %v\n%s", s.pkgs, err, out)
		}
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.dir
}

// Remove deletes the built binaries, if any were built.
func (s *Binaries) Remove() {
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}
