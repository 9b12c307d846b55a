package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `make test` runs its steps with a skip log and STRICT passed down, and ends — passed or
// failed — naming the tests that skipped and the command that installs what they lacked. The
// steps here are test-main with a stand-in `go` that skips one test the way
// testenv.Unavailable does (appending its line to $SCHEDLENS_SKIP_LOG) and records the
// strictness it was given.
func TestMakeTestNamesItsSkips(t *testing.T) {
	for _, tc := range []struct {
		name       string
		env        []string
		goExit     int
		wantStrict string
		wantFail   bool
	}{
		{name: "a laptop", wantStrict: ""},
		{name: "STRICT=1", env: []string{"STRICT=1"}, wantStrict: "1"},
		{name: "CI", env: []string{"CI=true"}, wantStrict: "1"},
		{name: "a failing step", goExit: 1, wantStrict: "", wantFail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fakeGo := filepath.Join(dir, "go")
			script := "#!/bin/sh\n" +
				`echo "internal/ui TestRunPage: chromium not installed at /usr/bin/chromium" >> "$SCHEDLENS_SKIP_LOG"` + "\n" +
				`printf '%s' "$SCHEDLENS_TEST_STRICT" > "` + filepath.Join(dir, "strict") + `"` + "\n" +
				"exit " + string(rune('0'+tc.goExit)) + "\n"
			if err := os.WriteFile(fakeGo, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("make", "--no-print-directory", "-C", "..", "test", "TEST_STEPS=test-main", "GO="+fakeGo)
			cmd.Env = append(cleanEnv(), append(tc.env, "TEST_SKIP_LOG="+filepath.Join(dir, "skips.log"))...)
			out, err := cmd.CombinedOutput()
			if (err != nil) != tc.wantFail {
				t.Fatalf("make test: err %v, want failure %v\n%s", err, tc.wantFail, out)
			}
			text := string(out)
			for _, want := range []string{"1 test(s) did NOT run", "internal/ui TestRunPage: chromium not installed", "'make deps'", "STRICT=1"} {
				if !strings.Contains(text, want) {
					t.Errorf("output lacks %q:\n%s", want, text)
				}
			}
			if i := strings.Index(text, "did NOT run"); i < 0 || strings.Contains(text[i:], "go test") {
				t.Errorf("the skips are not the end of the output:\n%s", text)
			}
			strict, err := os.ReadFile(filepath.Join(dir, "strict"))
			if err != nil {
				t.Fatal(err)
			}
			if string(strict) != tc.wantStrict {
				t.Errorf("SCHEDLENS_TEST_STRICT = %q, want %q", strict, tc.wantStrict)
			}
		})
	}
}

// cleanEnv is this process's environment without what `make test` itself sets or reads, so
// the make under test starts as on a developer's machine.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CI", "STRICT", "SCHEDLENS_TEST_STRICT", "SCHEDLENS_SKIP_LOG", "TEST_SKIP_LOG", "MAKEFLAGS", "MAKELEVEL", "MFLAGS":
			continue
		}
		env = append(env, kv)
	}
	return env
}
