package testenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/testenv"
)

// TestUnavailableHelper is not a test of its own: TestUnavailable runs it in a child process,
// where it calls Unavailable as a test lacking a browser would.
func TestUnavailableHelper(t *testing.T) {
	if os.Getenv("TESTENV_HELPER") != "1" {
		return
	}
	testenv.Unavailable(t, "chromium not\n  installed at %s", "/nowhere/chromium")
	t.Log("after Unavailable")
}

// Unavailable skips and writes the skip log on a developer's machine, and fails — writing no
// skip — under CI=true or SCHEDLENS_TEST_STRICT=1. Nothing after it runs either way.
func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      []string
		wantFail bool
	}{
		{name: "laptop"},
		{name: "CI", env: []string{"CI=true"}, wantFail: true},
		{name: "STRICT", env: []string{"SCHEDLENS_TEST_STRICT=1"}, wantFail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "skips.log")
			cmd := exec.Command(os.Args[0], "-test.run=^TestUnavailableHelper$", "-test.v")
			cmd.Env = append(os.Environ(), append(tc.env, "TESTENV_HELPER=1", testenv.SkipLogEnv+"="+log)...)
			if tc.env == nil {
				cmd.Env = append(cmd.Env, "CI=", "SCHEDLENS_TEST_STRICT=")
			}
			out, err := cmd.CombinedOutput()
			if (err != nil) != tc.wantFail {
				t.Fatalf("child: err %v, want failure %v\n%s", err, tc.wantFail, out)
			}
			if strings.Contains(string(out), "after Unavailable") {
				t.Errorf("the test went on after Unavailable:\n%s", out)
			}
			skips, err := os.ReadFile(log)
			if tc.wantFail {
				if err == nil {
					t.Errorf("a strict run wrote the skip log: %q", skips)
				}
				return
			}
			if err != nil {
				t.Fatalf("read the skip log: %v", err)
			}
			want := "internal/testenv TestUnavailableHelper: chromium not installed at /nowhere/chromium\n"
			if string(skips) != want {
				t.Errorf("skip log = %q, want %q", skips, want)
			}
		})
	}
}

func TestUntil(t *testing.T) {
	calls := 0
	if !testenv.Until(time.Minute, time.Millisecond, func() bool { calls++; return calls == 3 }) {
		t.Error("Until of a condition that comes to hold = false, want true")
	}
	if calls != 3 {
		t.Errorf("ok called %d times, want 3 (until it held)", calls)
	}
	if testenv.Until(0, time.Millisecond, func() bool { return false }) {
		t.Error("Until of a condition that never holds = true, want false")
	}
}
