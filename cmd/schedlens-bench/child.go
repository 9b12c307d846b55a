package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/schedlens/schedlens/internal/config"
)

// childFlag, as the first argument, makes the bench run one schedlens component alone in this
// process (the bench re-executes itself), so /proc/<pid>/status measures that component only.
// It is not in the usage: only the bench passes it.
const childFlag = "-child"

// Components a child runs.
const (
	childCorrelator = "correlator"
	childCollector  = "collector"
)

// isChild reports whether args (os.Args) ask for a child component.
func isChild(args []string) bool { return len(args) > 2 && args[1] == childFlag }

// runChild runs the component args[2] with the flags after it until ctx ends or its stdin
// closes (the parent went away or is done measuring).
func runChild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	switch args[2] {
	case childCorrelator:
		return runCorrelatorChild(ctx, args[3:], stdout, stderr)
	case childCollector:
		return runCollectorChild(ctx, args[3:], stdout, stderr)
	}
	return fmt.Errorf("unknown child component %q", args[2])
}

// childFlags is the flag set of a child component: the flags only the bench passes it, and
// -log-level, which every child takes.
type childFlags struct {
	*flag.FlagSet
	component string
	level     string
	stderr    io.Writer
}

func newChildFlags(component string, stderr io.Writer) *childFlags {
	f := &childFlags{FlagSet: flag.NewFlagSet("schedlens-bench -child "+component, flag.ContinueOnError), component: component, stderr: stderr}
	f.SetOutput(stderr)
	f.StringVar(&f.level, "log-level", "info", "")
	return f
}

// parse parses args and returns the component's text logger at -log-level.
func (f *childFlags) parse(args []string) (*slog.Logger, error) {
	if err := f.Parse(args); err != nil {
		return nil, err
	}
	return config.Logging{Format: "text", Level: f.level}.Logger(f.stderr, f.component)
}

// child is a component running in a process of its own, started by startChild.
type child struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // the child's stdout, line by line; closed at its end
	done  chan error
}

// startChild re-executes the bench as component name with args and this process's environment
// plus env; the child's stderr (its log) goes to stderr.
func startChild(name string, args, env []string, stderr io.Writer) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the bench's executable to re-run it as the %s: %w", name, err)
	}
	return startChildFrom(exe, name, args, env, stderr)
}

// freshExecutable copies the bench's executable into dir, for a child whose memory is measured.
// The kernel keeps the text of a binary that ran for minutes in huge pages (khugepaged), and
// every later run of that file maps them whole: after `make bench`'s lag and soak runs a child
// started from the bench's own file began at VmRSS 53–59 MB instead of 42 MB, its anonymous
// memory the same — a state of the machine's page cache, not of the code measured. A fresh copy
// starts as a newly installed binary does.
func freshExecutable(dir string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the bench's executable: %w", err)
	}
	src, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer src.Close()
	path := filepath.Join(dir, filepath.Base(exe))
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return "", fmt.Errorf("copy the bench's executable: %w", err)
	}
	return path, dst.Close()
}

// startChildFrom is startChild running the executable exe (the bench's own, or a copy).
func startChildFrom(exe, name string, args, env []string, stderr io.Writer) (*child, error) {
	cmd := exec.Command(exe, append([]string{childFlag, name}, args...)...)
	cmd.Stderr = stderr
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the %s child: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, stdin: stdin, lines: make(chan string, 16), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.done <- cmd.Wait()
	}()
	return c, nil
}

// pid is the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// expect waits for the child's next stdout line starting with prefix and returns the rest.
func (c *child) expect(ctx context.Context, prefix string, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return "", fmt.Errorf("the %s child ended before saying %q (see its log above)", c.name, prefix)
			}
			if rest, found := strings.CutPrefix(line, prefix); found {
				return strings.TrimSpace(rest), nil
			}
		case <-t.C:
			return "", fmt.Errorf("the %s child did not say %q within %s", c.name, prefix, timeout)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// stop closes the child's stdin (it shuts down), waits for it, and kills it when it takes
// longer than 30 s.
func (c *child) stop() error {
	_ = c.stdin.Close()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	go func() {
		for range c.lines { // keep draining so the child never blocks on a full pipe
		}
	}()
	select {
	case err := <-c.done:
		return err
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("the %s child did not stop within 30 s; killed", c.name)
	}
}

// procMemory is what /proc/<pid>/status says of a process's memory, in bytes.
type procMemory struct {
	RSS  int64 `json:"vm_rss_bytes"` // resident now (VmRSS)
	Peak int64 `json:"vm_hwm_bytes"` // highest resident so far (VmHWM)
	// Anon is the anonymous part of RSS (RssAnon: heap, stacks); the rest is mostly the
	// executable's pages (RssFile), which the kernel can drop and re-read.
	Anon int64 `json:"rss_anon_bytes"`
}

// readProcMemory reads VmRSS and VmHWM of pid (0: this process).
func readProcMemory(pid int) (procMemory, error) {
	path := "/proc/self/status"
	if pid != 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return procMemory{}, fmt.Errorf("read memory of process %d: %w", pid, err)
	}
	return parseProcStatus(string(b))
}

// parseProcStatus reads the VmRSS and VmHWM lines ("VmRSS:	  123456 kB") of a status file.
func parseProcStatus(s string) (procMemory, error) {
	var m procMemory
	for line := range strings.Lines(s) {
		key, val, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "VmHWM" && key != "RssAnon") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return procMemory{}, fmt.Errorf("unexpected /proc status line %q", strings.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return procMemory{}, fmt.Errorf("unexpected /proc status line %q", strings.TrimSpace(line))
		}
		switch key {
		case "VmRSS":
			m.RSS = kb << 10
		case "VmHWM":
			m.Peak = kb << 10
		default:
			m.Anon = kb << 10
		}
	}
	if m.RSS == 0 || m.Peak == 0 {
		return procMemory{}, errors.New("no VmRSS/VmHWM in /proc status (not Linux?)")
	}
	return m, nil
}

// mb formats bytes as decimal megabytes, the unit of the targets.
func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
