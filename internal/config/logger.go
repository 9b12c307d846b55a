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
