package config_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/schedlens/schedlens/internal/config"
)

// -auto-gomemlimit sets the runtime's soft limit to the ratio of the container's limit, unless
// GOMEMLIMIT is set, it is off, or there is no limit to read; a bad ratio is a usage error.
func TestMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	const gib = 1 << 30
	noEnv := func(string) string { return "" }
	unreadable := func() (uint64, error) { return 0, errors.New("no cgroup mounted") }
	for _, tc := range []struct {
		name   string
		m      config.MemoryLimit
		getenv func(string) string
		limit  memlimit.Provider
		want   int64
		log    string // what the log says; "" for nothing at all
	}{
		{"limit of 1 GiB, ratio 0.9", config.MemoryLimit{Auto: true, Ratio: 0.9}, noEnv, memlimit.Limit(gib), 966367641, "GOMEMLIMIT set from the container's memory limit"},
		{"ratio 1", config.MemoryLimit{Auto: true, Ratio: 1}, noEnv, memlimit.Limit(512 << 20), 512 << 20, "bytes=536870912"},
		{"off", config.MemoryLimit{Auto: false, Ratio: 0.9}, noEnv, memlimit.Limit(gib), 0, ""},
		{"GOMEMLIMIT in the environment", config.MemoryLimit{Auto: true, Ratio: 0.9}, func(k string) string {
			if k == "GOMEMLIMIT" {
				return "100MiB"
			}
			return ""
		}, memlimit.Limit(gib), 0, "leaves it"},
		{"no limit", config.MemoryLimit{Auto: true, Ratio: 0.9}, noEnv, func() (uint64, error) { return 0, memlimit.ErrNoLimit }, 0, "no container memory limit"},
		{"not on Linux", config.MemoryLimit{Auto: true, Ratio: 0.9}, noEnv, func() (uint64, error) { return 0, memlimit.ErrCgroupsNotSupported }, 0, "level=DEBUG msg=\"no container memory limit"},
		{"unreadable", config.MemoryLimit{Auto: true, Ratio: 0.9}, noEnv, unreadable, 0, "level=WARN msg=\"could not read the container's memory limit"},
	} {
		debug.SetMemoryLimit(math.MaxInt64)
		var logs bytes.Buffer
		got, err := tc.m.Apply(tc.getenv, tc.limit, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
		if err != nil || got != tc.want {
			t.Errorf("%s: Apply = %d, %v; want %d", tc.name, got, err, tc.want)
		}
		wantRuntime := tc.want
		if wantRuntime == 0 {
			wantRuntime = math.MaxInt64
		}
		if have := debug.SetMemoryLimit(-1); have != wantRuntime {
			t.Errorf("%s: the runtime's limit is %d, want %d", tc.name, have, wantRuntime)
		}
		if got := logs.String(); tc.log == "" && got != "" || !strings.Contains(got, tc.log) {
			t.Errorf("%s: log %q; want it to say %q", tc.name, got, tc.log)
		}
	}
	debug.SetMemoryLimit(math.MaxInt64)
	for _, ratio := range []float64{0, -0.5, 1.5, math.NaN()} {
		_, err := config.MemoryLimit{Auto: true, Ratio: ratio}.Apply(noEnv, memlimit.Limit(gib), slog.New(slog.DiscardHandler))
		if !errors.Is(err, config.ErrUsage) || !strings.Contains(err.Error(), "-auto-gomemlimit-ratio must be in (0, 1]") {
			t.Errorf("ratio %v: %v; want a usage error", ratio, err)
		}
		if have := debug.SetMemoryLimit(-1); have != math.MaxInt64 {
			t.Errorf("ratio %v: the runtime's limit became %d", ratio, have)
		}
	}
}

// The flags default from SCHEDLENS_AUTO_GOMEMLIMIT and SCHEDLENS_AUTO_GOMEMLIMIT_RATIO; without
// either, the limit is on at 0.9.
func TestMemoryLimitFlags(t *testing.T) {
	parse := func(env map[string]string, args ...string) config.MemoryLimit {
		t.Helper()
		fs := config.New("x", func(k string) string { return env[k] }, io.Discard)
		var m config.MemoryLimit
		m.Define(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := parse(nil); m != (config.MemoryLimit{Auto: true, Ratio: 0.9}) {
		t.Errorf("defaults %+v", m)
	}
	if m := parse(map[string]string{config.EnvAutoGoMemLimit: "false", config.EnvAutoGoMemLimitRatio: "0.75"}); m != (config.MemoryLimit{Auto: false, Ratio: 0.75}) {
		t.Errorf("from the environment %+v", m)
	}
	if m := parse(map[string]string{config.EnvAutoGoMemLimitRatio: "0.75"}, "-auto-gomemlimit-ratio", "0.5"); m.Ratio != 0.5 {
		t.Errorf("the flag over the environment: %+v", m)
	}
}
