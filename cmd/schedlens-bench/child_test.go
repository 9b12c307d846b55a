package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/config"
)

// TestMain lets the test binary stand in for the bench when -lag and -memory re-execute
// themselves as a child component (os.Executable is the test binary here).
func TestMain(m *testing.M) {
	if isChild(os.Args) {
		config.Main(run)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseProcStatus(t *testing.T) {
	status := "Name:\tschedlens-bench\nVmPeak:\t 2011176 kB\nVmHWM:\t   68060 kB\nVmRSS:\t   64300 kB\nRssAnon:\t   13848 kB\nRssFile:\t   50452 kB\n"
	got, err := parseProcStatus(status)
	if err != nil {
		t.Fatal(err)
	}
	want := procMemory{RSS: 64300 << 10, Peak: 68060 << 10, Anon: 13848 << 10}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseProcStatus (-want +got):\n%s", diff)
	}
	if _, err := parseProcStatus("Name:\tx\nVmRSS:\t 12 MB\n"); err == nil {
		t.Error("a VmRSS not in kB parsed")
	}
	if _, err := parseProcStatus("Name:\tx\n"); err == nil {
		t.Error("a status without VmRSS parsed")
	}
}

// TestModeUsage checks the new modes' bad input is a usage error before anything starts.
func TestModeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-lag", "-lag-rate", "0"},
		{"-lag", "-lag-duration", "-1s"},
		{"-memory", "-memory-pods", "0"},
		{"-lag", "-memory"},
	} {
		err := run(t.Context(), append([]string{"schedlens-bench"}, args...), noEnv, new(discard), new(discard))
		if !errors.Is(err, config.ErrUsage) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}

type discard struct{}

func (*discard) Write(p []byte) (int, error) { return len(p), nil }

// The memory bench's child runs from a copy of the executable: the same bytes, executable, in
// the directory given, not the bench's own file.
func TestFreshExecutable(t *testing.T) {
	dir := t.TempDir()
	path, err := freshExecutable(dir)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || path == exe || !bytes.Equal(got, want) || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("copy %s (mode %v, %d bytes) of %s (%d bytes): want an executable copy in %s", path, fi.Mode(), len(got), exe, len(want), dir)
	}
	if _, err := freshExecutable(dir); err == nil {
		t.Error("a second copy into the same directory overwrote the first")
	}
}
