package config

import (
	"errors"
	"log/slog"
	"math"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// Environment variables of the memory limit flags.
const (
	EnvAutoGoMemLimit      = "SCHEDLENS_AUTO_GOMEMLIMIT"
	EnvAutoGoMemLimitRatio = "SCHEDLENS_AUTO_GOMEMLIMIT_RATIO"
)

// MemoryLimit sets the Go runtime's soft memory limit (GOMEMLIMIT) from the container's memory
// limit, as Prometheus' --auto-gomemlimit does: a process near its limit collects garbage harder
// instead of growing into the OOM killer (the Go GC otherwise lets the heap reach twice what is
// live). GOMEMLIMIT in the environment wins.
type MemoryLimit struct {
	Auto  bool
	Ratio float64
}

// Define registers -auto-gomemlimit and -auto-gomemlimit-ratio.
func (m *MemoryLimit) Define(f *FlagSet) {
	f.Bool(&m.Auto, "auto-gomemlimit", EnvAutoGoMemLimit, true, "set GOMEMLIMIT to -auto-gomemlimit-ratio of the container's memory limit (cgroup v2 or v1); GOMEMLIMIT in the environment wins")
	f.Float64(&m.Ratio, "auto-gomemlimit-ratio", EnvAutoGoMemLimitRatio, 0.9, "with -auto-gomemlimit: the share of the memory limit, in (0, 1]")
}

// Apply sets the limit the container's cgroup reports (memlimit.FromCgroup), once, when the
// process starts; limit is the provider, nil for the cgroup. It returns the limit set in bytes,
// 0 when it set none: -auto-gomemlimit=false, GOMEMLIMIT set, no memory limit, or a limit that
// could not be read (logged; not an error: the process runs as it would without). A ratio outside
// (0, 1] is a usage error.
func (m MemoryLimit) Apply(getenv func(string) string, limit memlimit.Provider, logger *slog.Logger) (int64, error) {
	if math.IsNaN(m.Ratio) || m.Ratio <= 0 || m.Ratio > 1 {
		return 0, Usagef("-auto-gomemlimit-ratio must be in (0, 1], got %v", m.Ratio)
	}
	if !m.Auto {
		return 0, nil
	}
	if v := getenv("GOMEMLIMIT"); v != "" {
		logger.Debug("GOMEMLIMIT set in the environment; -auto-gomemlimit leaves it", "GOMEMLIMIT", v)
		return 0, nil
	}
	if limit == nil {
		limit = memlimit.FromCgroup
	}
	bytes, err := memlimit.ApplyRatio(limit, m.Ratio)()
	switch {
	case errors.Is(err, memlimit.ErrNoLimit), errors.Is(err, memlimit.ErrCgroupsNotSupported):
		// Not in a limited container, or not on Linux (a laptop): nothing to follow.
		logger.Debug("no container memory limit; GOMEMLIMIT not set", "reason", err)
		return 0, nil
	case err != nil:
		logger.Warn("could not read the container's memory limit; GOMEMLIMIT not set", "error", err)
		return 0, nil
	case bytes == 0 || bytes > math.MaxInt64:
		logger.Debug("container memory limit out of range; GOMEMLIMIT not set", "bytes", bytes)
		return 0, nil
	}
	debug.SetMemoryLimit(int64(bytes))
	logger.Info("GOMEMLIMIT set from the container's memory limit", "bytes", bytes, "ratio", m.Ratio)
	return int64(bytes), nil
}
