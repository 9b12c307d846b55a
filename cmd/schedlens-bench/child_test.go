package main

import (
	"errors"
	"os"
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
