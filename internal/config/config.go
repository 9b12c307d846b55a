// Package config defines command-line flags whose defaults come from SCHEDLENS_* environment
// variables, so every setting can be given either way and -h documents both.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/schedlens/schedlens/internal/events"
)

// Common environment variables shared by the binaries.
const (
	EnvNATSURL     = "SCHEDLENS_NATS_URL"
	EnvDatabaseURL = "SCHEDLENS_DATABASE_URL"
	EnvHTTPAddr    = "SCHEDLENS_HTTP_ADDR"
	EnvMetricsAddr = "SCHEDLENS_METRICS_ADDR"
	EnvCluster     = "SCHEDLENS_CLUSTER"
	EnvLogFormat   = "SCHEDLENS_LOG_FORMAT"
	EnvLogLevel    = "SCHEDLENS_LOG_LEVEL"
)

// Defaults for a local machine (Postgres and NATS on loopback).
const (
	DefaultNATSURL     = "nats://127.0.0.1:4222"
	DefaultDatabaseURL = "postgres://root@127.0.0.1:5432/schedlens?sslmode=disable"
)

// FlagSet is a flag.FlagSet whose flags may default from the environment and may come before,
// between or after the positional arguments (a command, a format, a FILE, a NAME).
type FlagSet struct {
	*flag.FlagSet
	getenv func(string) string
	errs   []error
	args   []string
}

// New returns a FlagSet that reports errors instead of exiting and prints usage to out.
func New(name string, getenv func(string) string, out io.Writer) *FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	return &FlagSet{FlagSet: fs, getenv: getenv}
}

func (f *FlagSet) env(name, env string, parse func(string) error) {
	if env == "" {
		return
	}
	if v := f.getenv(env); v != "" {
		if err := parse(v); err != nil {
			f.errs = append(f.errs, fmt.Errorf("invalid %s=%q (for -%s): %v", env, v, name, err))
		}
	}
}

func usage(u, env string) string {
	if env == "" {
		return u
	}
	return u + " (env " + env + ")"
}

// String defines a string flag defaulting to $env, else def.
func (f *FlagSet) String(p *string, name, env, def, u string) {
	*p = def
	f.env(name, env, func(v string) error { *p = v; return nil })
	f.StringVar(p, name, *p, usage(u, env))
}

// Bool defines a bool flag defaulting to $env (true, 1, false, 0, …), else def.
func (f *FlagSet) Bool(p *bool, name, env string, def bool, u string) {
	*p = def
	f.env(name, env, func(v string) (err error) { *p, err = strconv.ParseBool(v); return err })
	f.BoolVar(p, name, *p, usage(u, env))
}

// Int defines an int flag defaulting to $env, else def.
func (f *FlagSet) Int(p *int, name, env string, def int, u string) {
	*p = def
	f.env(name, env, func(v string) (err error) { *p, err = strconv.Atoi(v); return err })
	f.IntVar(p, name, *p, usage(u, env))
}

// Int64 defines an int64 flag defaulting to $env, else def.
func (f *FlagSet) Int64(p *int64, name, env string, def int64, u string) {
	*p = def
	f.env(name, env, func(v string) (err error) { *p, err = strconv.ParseInt(v, 10, 64); return err })
	f.Int64Var(p, name, *p, usage(u, env))
}

// Float64 defines a float64 flag defaulting to $env, else def.
func (f *FlagSet) Float64(p *float64, name, env string, def float64, u string) {
	*p = def
	f.env(name, env, func(v string) (err error) { *p, err = strconv.ParseFloat(v, 64); return err })
	f.Float64Var(p, name, *p, usage(u, env))
}

// Duration defines a duration flag defaulting to $env, else def.
func (f *FlagSet) Duration(p *time.Duration, name, env string, def time.Duration, u string) {
	*p = def
	f.env(name, env, func(v string) (err error) { *p, err = time.ParseDuration(v); return err })
	f.DurationVar(p, name, *p, usage(u, env))
}

// Parse parses args, flags and positional arguments in any order: `import vegeta -cluster bar
// FILE` is `import -cluster bar vegeta FILE`. Everything after "--" is positional (a FILE named
// "-x"); "-" alone is positional (stdin). Bad environment values are reported like bad flags:
// with the usage, as an error. A request for help returns flag.ErrHelp.
func (f *FlagSet) Parse(args []string) error {
	f.args = nil
	for {
		if err := f.FlagSet.Parse(args); err != nil {
			return err
		}
		rest := f.FlagSet.Args()
		// flag stops at the first non-flag, and also after "--", which it consumes: tell the
		// two apart by what preceded the remainder.
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			f.args = append(f.args, rest...)
			break
		}
		f.args = append(f.args, rest[0])
		args = rest[1:]
	}
	if len(f.errs) > 0 {
		err := errors.Join(f.errs...)
		fmt.Fprintln(f.Output(), err)
		f.Usage()
		return err
	}
	return nil
}

// UsageText makes the usage text, then the flags and their defaults.
func (f *FlagSet) UsageText(text string) {
	f.Usage = func() {
		fmt.Fprint(f.Output(), text)
		f.PrintDefaults()
	}
}

// ParseOrHelp is Parse for a process's command line: a request for help (-h, which has printed
// the usage) is help, not an error.
func (f *FlagSet) ParseOrHelp(args []string) (help bool, err error) {
	err = f.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return true, nil
	}
	return false, err
}

// Args returns the positional arguments, wherever they stood among the flags.
func (f *FlagSet) Args() []string { return f.args }

// NArg is the number of positional arguments.
func (f *FlagSet) NArg() int { return len(f.args) }

// Arg returns the i'th positional argument, or "" when there is none.
func (f *FlagSet) Arg(i int) string {
	if i < 0 || i >= len(f.args) {
		return ""
	}
	return f.args[i]
}

// Logging holds the log settings every binary shares.
type Logging struct {
	Format, Level string
}

// Define registers -log-format and -log-level.
func (l *Logging) Define(f *FlagSet) {
	f.String(&l.Format, "log-format", EnvLogFormat, "text", "log format: text or json")
	f.String(&l.Level, "log-level", EnvLogLevel, "info", "log level: debug, info, warn or error")
}

// ErrUsage marks an error caused by how the command was called.
var ErrUsage = errors.New("usage")

// Usagef returns an error wrapping ErrUsage.
func Usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// Lower normalises a user-supplied keyword.
func Lower(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// Labels registers -label-experiment, -label-arm and -label-run: the pod label keys that
// attribute a pod to an experiment arm and run.
func Labels(f *FlagSet, keys *events.LabelKeys) {
	def := events.DefaultLabelKeys
	f.String(&keys.Experiment, "label-experiment", "SCHEDLENS_LABEL_EXPERIMENT", def.Experiment, "pod label key naming the experiment")
	f.String(&keys.Arm, "label-arm", "SCHEDLENS_LABEL_ARM", def.Arm, "pod label key naming the experiment arm")
	f.String(&keys.Run, "label-run", "SCHEDLENS_LABEL_RUN", def.Run, "pod label key naming the run (repeat)")
}

// StreamFlags defines the SCHEDLENS stream's bounds and replicas, shared by the collector and
// the correlator (whichever starts first creates the stream): defaults from the arguments.
func StreamFlags(f *FlagSet, maxAge *time.Duration, maxBytes *int64, duplicates *time.Duration, replicas *int) {
	f.Duration(maxAge, "stream-max-age", "SCHEDLENS_STREAM_MAX_AGE", *maxAge, "drop stream messages older than this")
	f.Int64(maxBytes, "stream-max-bytes", "SCHEDLENS_STREAM_MAX_BYTES", *maxBytes, "most bytes the stream holds")
	f.Duration(duplicates, "stream-duplicate-window", "SCHEDLENS_STREAM_DUPLICATE_WINDOW", *duplicates, "window in which JetStream drops a repeated message id")
	f.Int(replicas, "stream-replicas", "SCHEDLENS_STREAM_REPLICAS", *replicas, "copies of the stream a JetStream cluster keeps (3 on a 3-node cluster; 1 on a single server)")
}

// TLSFlags registers -tls-cert-file and -tls-key-file: every HTTP listener of the binary serves
// HTTPS with that pair, loaded again when the files change.
func TLSFlags(f *FlagSet, certFile, keyFile *string) {
	f.String(certFile, "tls-cert-file", "SCHEDLENS_TLS_CERT_FILE", "", "PEM certificate (chain) the HTTP listeners serve HTTPS with, read again when it changes (with -tls-key-file)")
	f.String(keyFile, "tls-key-file", "SCHEDLENS_TLS_KEY_FILE", "", "PEM private key of -tls-cert-file")
}

// Age defines a flag for how long something is kept, in Prometheus' notation — 15d, 2w, 36h,
// 1h30m; 0 keeps it for ever — defaulting to $env, else def.
func (f *FlagSet) Age(p *time.Duration, name, env string, def time.Duration, u string) {
	*p = def
	v := (*ageValue)(p)
	f.env(name, env, v.Set)
	f.Var(v, name, usage(u, env))
}

// ageValue is a time.Duration read and written as a Prometheus duration.
type ageValue time.Duration

func (a *ageValue) String() string { return model.Duration(*a).String() }

func (a *ageValue) Set(s string) error {
	d, err := model.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 15d, 2w or 36h (0 keeps for ever): %w", err)
	}
	*a = ageValue(d)
	return nil
}
