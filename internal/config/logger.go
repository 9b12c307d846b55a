package config

import (
	"io"
	"log/slog"
)

// Logger builds the process logger: JSON in a cluster, text locally, tagged with the component.
func (l Logging) Logger(w io.Writer, component string) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.Level)); err != nil {
		return nil, Usagef("bad -log-level %q: %v", l.Level, err)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch Lower(l.Format) {
	case "text", "":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, Usagef("bad -log-format %q: want text or json", l.Format)
	}
	return slog.New(h).With("component", component), nil
}

// Process is what the collector, the correlator and the api set up before their work: the
// logger (-log-format, -log-level) and the Go runtime's memory limit (-auto-gomemlimit).
type Process struct {
	Log    Logging
	Memory MemoryLimit
}

// Define registers the flags of both.
func (p *Process) Define(f *FlagSet) {
	p.Log.Define(f)
	p.Memory.Define(f)
}

// Start builds the logger, tagged with component, and sets the memory limit from the
// container's (MemoryLimit.Apply). Its errors are usage errors: a bad flag value.
func (p Process) Start(stderr io.Writer, component string, getenv func(string) string) (*slog.Logger, error) {
	logger, err := p.Log.Logger(stderr, component)
	if err != nil {
		return nil, err
	}
	if _, err := p.Memory.Apply(getenv, nil, logger); err != nil {
		return nil, err
	}
	return logger, nil
}
