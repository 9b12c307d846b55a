package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/schedlens/schedlens/internal/testenv"
)

// commands are the binaries whose flags the README names, built from the main module (the lab
// module can build them all; the main module's docs tests cannot build the lab).
var commands = testenv.NewBinaries(
	"github.com/schedlens/schedlens/cmd/collector",
	"github.com/schedlens/schedlens/cmd/correlator",
	"github.com/schedlens/schedlens/cmd/api",
	"github.com/schedlens/schedlens/cmd/schedlens-bench",
)

var helpFlag = regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)

// flagsOf are the flags a command's usage (-h) lists.
func flagsOf(usage string) map[string]bool {
	out := map[string]bool{"h": true} // every command prints its usage for -h
	for _, m := range helpFlag.FindAllStringSubmatch(usage, -1) {
		out[m[1]] = true
	}
	return out
}

// knownFlags maps each command of the README (collector, correlator, api, schedlens-bench, lab)
// to the flags its -h lists.
func knownFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	dir := commands.Dir(t)
	known := map[string]map[string]bool{}
	for _, c := range []string{"collector", "correlator", "api", "schedlens-bench"} {
		out, _ := exec.Command(filepath.Join(dir, c), "-h").CombinedOutput() // -h exits 0 or 2, both print the usage
		if !bytes.Contains(out, []byte("usage:")) {
			t.Fatalf("%s -h printed no usage:\n%s", c, out)
		}
		known[c] = flagsOf(string(out))
	}
	known["lab"] = map[string]bool{}
	for _, args := range [][]string{{"lab", "-h"}, {"lab", "preflight", "-h"}} {
		var stderr bytes.Buffer
		_ = run(context.Background(), args, func(string) string { return "" }, &stderr, &stderr)
		if !strings.Contains(stderr.String(), "usage:") {
			t.Fatalf("%v printed no usage:\n%s", args, stderr.String())
		}
		for f := range flagsOf(stderr.String()) {
			known["lab"][f] = true
		}
	}
	return known
}

var (
	codeBlock  = regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")
	codeSpan   = regexp.MustCompile("`([^`\n]+)`")
	flagToken  = regexp.MustCompile(`(?:^|[\s=\[|])-([a-z][a-z0-9-]*)`)
	commandRef = regexp.MustCompile(`^(?:\$ )?(?:\./)?(?:bin/)?(collector|correlator|api|schedlens-bench|lab)(?:\s|$)`)
)

// notOurs are flags the README names that belong to other tools (go build's -trimpath).
var notOurs = map[string]bool{"trimpath": true}

// TestREADMEFlags holds the README to the code where it names flags: every flag written with a
// command (`collector run -kubeconfig …`, a code block's `bin/lab demo -exit`) is one that
// command's -h lists, and every flag written alone (`-cluster`) is one some command lists.
func TestREADMEFlags(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	known := knownFlags(t)
	any := map[string]bool{}
	for _, fs := range known {
		for f := range fs {
			any[f] = true
		}
	}
	check := func(where, text string, flags map[string]bool, of string) {
		for _, m := range flagToken.FindAllStringSubmatch(text, -1) {
			if f := m[1]; !notOurs[f] && !flags[f] {
				t.Errorf("README %s %q: -%s is no flag of %s", where, text, f, of)
			}
		}
	}
	text := string(b)
	for _, block := range codeBlock.FindAllStringSubmatch(text, -1) {
		for _, line := range strings.Split(block[1], "\n") {
			line = strings.TrimSpace(line)
			if m := commandRef.FindStringSubmatch(line); m != nil {
				check("code line", strings.SplitN(line, " #", 2)[0], known[m[1]], m[1])
			}
		}
	}
	spans := codeSpan.FindAllStringSubmatch(codeBlock.ReplaceAllString(text, ""), -1)
	checked := 0
	for _, s := range spans {
		span := s[1]
		switch m := commandRef.FindStringSubmatch(span); {
		case m != nil:
			check("span", span, known[m[1]], m[1])
			checked++
		case strings.HasPrefix(span, "-") && span != "-":
			check("span", span, any, "any command")
			checked++
		case strings.Contains(span, "DEMO_ARGS="):
			check("span", span, known["lab"], "lab")
			checked++
		case strings.Contains(span, "BENCH_ARGS="):
			check("span", span, known["schedlens-bench"], "schedlens-bench")
			checked++
		}
	}
	if checked < 50 {
		t.Errorf("checked %d code spans naming flags; the README names many more: is the parsing broken?", checked)
	}
}
