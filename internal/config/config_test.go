package config_test

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/config"
)

// Flags may come before, between or after the positional arguments; "--" ends the flags.
func TestParseFlagsAnywhere(t *testing.T) {
	for _, tc := range []struct {
		args    string
		cluster string
		strict  bool
		pos     []string
	}{
		{"import -cluster bar vegeta FILE", "bar", false, []string{"import", "vegeta", "FILE"}},
		{"import vegeta -cluster bar FILE", "bar", false, []string{"import", "vegeta", "FILE"}},
		{"import vegeta FILE -cluster bar", "bar", false, []string{"import", "vegeta", "FILE"}},
		{"-cluster bar import vegeta FILE", "bar", false, []string{"import", "vegeta", "FILE"}},
		{"import vegeta -strict -cluster=bar -", "bar", true, []string{"import", "vegeta", "-"}},
		{"replay -cluster import FILE", "import", false, []string{"replay", "FILE"}}, // a flag's value is not a command
		{"import vegeta -cluster bar -- -strict", "bar", false, []string{"import", "vegeta", "-strict"}},
		{"-- -cluster", "", false, []string{"-cluster"}},
		{"-strict", "", true, nil},
		{"", "", false, nil},
	} {
		fs := config.New("test", func(string) string { return "" }, io.Discard)
		var cluster string
		var strict bool
		fs.String(&cluster, "cluster", "", "", "cluster")
		fs.BoolVar(&strict, "strict", false, "strict")
		if err := fs.Parse(strings.Fields(tc.args)); err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if cluster != tc.cluster || strict != tc.strict {
			t.Errorf("%q: cluster %q strict %v, want %q %v", tc.args, cluster, strict, tc.cluster, tc.strict)
		}
		if diff := cmp.Diff(tc.pos, fs.Args()); diff != "" {
			t.Errorf("%q: positional arguments (-want +got):\n%s", tc.args, diff)
		}
		if fs.NArg() != len(tc.pos) || (len(tc.pos) > 0 && fs.Arg(0) != tc.pos[0]) || fs.Arg(len(tc.pos)) != "" {
			t.Errorf("%q: NArg %d, Arg(0) %q", tc.args, fs.NArg(), fs.Arg(0))
		}
	}
}

// A bad flag after a positional argument is an error as it is before one; so is -h.
func TestParseBadFlagAfterArgument(t *testing.T) {
	var out strings.Builder
	fs := config.New("test", func(string) string { return "" }, &out)
	if err := fs.Parse([]string{"import", "vegeta", "-no-such-flag", "FILE"}); err == nil || !strings.Contains(out.String(), "no-such-flag") {
		t.Errorf("err %v, output %q: want the unknown flag reported", err, out.String())
	}
	fs = config.New("test", func(string) string { return "" }, io.Discard)
	if err := fs.Parse([]string{"import", "-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h after a command: %v, want flag.ErrHelp", err)
	}
}

// A process's command line: -h prints the usage text and the flags, and is help, not an error;
// a bad flag is an error; anything else parses.
func TestParseOrHelp(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		help, err bool
	}{
		{args: []string{"run", "-h"}, help: true},
		{args: []string{"-no-such-flag"}, err: true},
		{args: []string{"run", "-n", "2"}},
	} {
		var out strings.Builder
		fs := config.New("test", func(string) string { return "" }, &out)
		fs.Int(new(int), "n", "", 1, "how many")
		fs.UsageText("usage: test [flags]\n")
		help, err := fs.ParseOrHelp(tc.args)
		if help != tc.help || (err != nil) != tc.err {
			t.Errorf("%q: help %v, err %v; want help %v, an error %v", tc.args, help, err, tc.help, tc.err)
		}
		if printed := strings.Contains(out.String(), "usage: test [flags]\n") && strings.Contains(out.String(), "how many"); printed != (tc.help || tc.err) {
			t.Errorf("%q: usage printed %v, output %q", tc.args, printed, out.String())
		}
	}
}
