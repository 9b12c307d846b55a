// Package scripts_test tests the repository's shell scripts.
package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// check-tree.sh fails on a tracked executable binary or a tracked file over 5 MB, and passes a
// tree without either.
func TestCheckTree(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    []byte
		wantErr string
	}{
		{"source only", []byte("package main\n"), ""},
		{"an ELF binary", append([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1}, make([]byte, 64)...), "is an executable binary"},
		{"a Windows executable", append([]byte("MZ\x90\x00"), make([]byte, 64)...), "is an executable binary"},
		{"a 6 MB file", make([]byte, 6<<20), "over 5 MB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			git := func(args ...string) {
				cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			git("init", "-q")
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "thing"), tc.file, 0o755); err != nil {
				t.Fatal(err)
			}
			git("add", ".")
			out, err := exec.Command("bash", "check-tree.sh", dir).CombinedOutput()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("clean tree: %v\n%s", err, out)
			case tc.wantErr != "" && (err == nil || !strings.Contains(string(out), tc.wantErr)):
				t.Errorf("err %v, output %q; want a failure saying %q", err, out, tc.wantErr)
			}
		})
	}
}
