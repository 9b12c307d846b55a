package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/lab/labenv"
	"github.com/schedlens/schedlens/lab/preflight"
	"github.com/schedlens/schedlens/lab/preflight/app"
)

// childLab is the environment variable that makes this test binary a lab process: the live
// test needs the lab's API server and, in this process, the dry run's own control plane, and
// kube-apiserver runs once per process.
const childLab = "SCHEDLENS_PREFLIGHT_TEST_LAB_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childLab); dir != "" {
		os.Exit(runChildLab(dir))
	}
	os.Exit(m.Run())
}

// runChildLab starts a lab, prints "kubeconfig <path>" and runs until stdin closes.
func runChildLab(dir string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := labenv.Start(ctx, labenv.Options{Dir: dir, Seed: 20, Speed: 0.1})
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		return 1
	}
	defer l.Stop()
	fmt.Printf("kubeconfig %s\n", l.Kubeconfig)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := app.Run(ctx, args, func(string) string { return "" }, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

const good = `apiVersion: apps/v1
kind: Deployment
metadata: {name: llm, namespace: ai-lab}
spec:
  replicas: 2
  selector: {matchLabels: {app: llm}}
  template:
    metadata: {labels: {app: llm}}
    spec:
      containers:
      - name: model
        image: triton
        ports: [{containerPort: 8000}]
        resources: {limits: {nvidia.com/gpu: 1}}
        readinessProbe: {httpGet: {path: /v2/health/ready, port: 8000}}
`

// Exit statuses: 0 without errors, 1 with errors, 2 for bad usage or input (the report is still
// written, with the file and line of what could not be read).
func TestExitStatus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodFile := write("good.yaml", good)
	badFile := write("bad.yaml", strings.Replace(good, "limits: {nvidia.com/gpu: 1}", "requests: {nvidia.com/gpu: 1}", 1))
	brokenFile := write("broken.yaml", good+"---\nkind: [\n")
	for _, tc := range []struct {
		name, stdin string
		args        []string
		code        int
		stdout      string
		stderr      string
	}{
		{"clean", "", []string{"-f", goodFile}, 0, "0 errors", ""},
		{"stdin", good, []string{"-f", "-"}, 0, "0 errors", ""},
		{"more paths after -f", "", []string{"-f", goodFile, badFile}, 1, "gpu-request-limit", ""},
		{"error finding", "", []string{"-f", badFile}, 1, badFile + ":14", ""},
		{"malformed document", "", []string{"-f", brokenFile}, 2, brokenFile + ":17: malformed YAML", ""},
		{"json", "", []string{"-f", badFile, "-o", "json"}, 1, `"schema": "schedlens.io/preflight/v1"`, ""},
		{"sarif", "", []string{"-f", badFile, "-o", "sarif"}, 1, `"version": "2.1.0"`, ""},
		{"lab experiment", "", []string{"-experiment", "day20"}, 0, "0 errors", ""},
		{"cluster spec", "", []string{"-f", goodFile, "-cluster", "../../cmd/lab/testdata/mini.yaml"}, 2, "", "cluster spec"},
		{"no manifests", "", nil, 2, "", "-f PATH (or -experiment) is required"},
		{"bad flag", "", []string{"-f", goodFile, "-frobnicate"}, 2, "", "usage: lab preflight"},
		{"bad output", "", []string{"-f", goodFile, "-o", "xml"}, 2, "", `-o "xml"`},
		{"both clusters", "", []string{"-f", goodFile, "-kubeconfig", "k", "-cluster", "c"}, 2, "", "exclude each other"},
		{"missing file", "", []string{"-f", dir + "/none.yaml"}, 2, "none.yaml", ""},
		{"unreachable api", "", []string{"-f", goodFile, "-api", "http://127.0.0.1:9"}, 2, "", "lab preflight:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
				t.Errorf("exit %d (want %d)\nstdout (want %q):\n%s\nstderr (want %q):\n%s", code, tc.code, tc.stdout, out, tc.stderr, errs)
			}
		})
	}
}

// startChildLab runs a lab in a child process and returns its kubeconfig.
func startChildLab(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childLab+"="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if k, ok := strings.CutPrefix(sc.Text(), "kubeconfig "); ok {
				line <- k
			}
		}
		close(line)
	}()
	select {
	case k, ok := <-line:
		if !ok {
			t.Fatalf("child lab exited: %s", stderr.String())
		}
		return k
	case <-time.After(2 * time.Minute):
		t.Fatalf("child lab not up after 2 minutes: %s", stderr.String())
	}
	return ""
}

func decodeReport(t *testing.T, out string) *preflight.Report {
	t.Helper()
	var r preflight.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	return &r
}
