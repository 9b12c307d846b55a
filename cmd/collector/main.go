// Command collector publishes what happens to GPU pods as schedlens envelopes on NATS JetStream.
// `collector replay FILE` publishes recorded envelopes (JSONL; - for stdin).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/collector"
	"github.com/schedlens/schedlens/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

const usageText = `usage: collector replay [flags] FILE

commands:
  replay FILE   publish every envelope of a JSONL file (- for stdin) and exit once JetStream
                has acknowledged them all; invalid lines are reported with their line numbers,
                the valid ones are still published, and the exit status is then 1

flags:
`

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	var (
		natsURL, cluster string
		stream           bus.StreamConfig
		log              config.Logging
	)
	fs := config.New("collector", getenv, stderr)
	fs.String(&natsURL, "nats-url", config.EnvNATSURL, config.DefaultNATSURL, "NATS server URL")
	fs.String(&cluster, "cluster", config.EnvCluster, "", "cluster name given to envelopes that name none")
	sdef := bus.DefaultStreamConfig()
	fs.Duration(&stream.MaxAge, "stream-max-age", "SCHEDLENS_STREAM_MAX_AGE", sdef.MaxAge, "drop stream messages older than this")
	fs.Int64(&stream.MaxBytes, "stream-max-bytes", "SCHEDLENS_STREAM_MAX_BYTES", sdef.MaxBytes, "most bytes the stream holds")
	fs.Duration(&stream.Duplicates, "stream-duplicate-window", "SCHEDLENS_STREAM_DUPLICATE_WINDOW", sdef.Duplicates, "window in which JetStream drops a repeated message id")
	log.Define(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}

	rest := args[1:]
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return err
		}
		fs.Usage()
		return config.Usagef("a command is required")
	}
	cmd := rest[0]
	if err := fs.Parse(rest[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	switch cmd {
	case "replay":
		if fs.NArg() != 1 {
			fs.Usage()
			return config.Usagef("replay takes one FILE (or - for stdin)")
		}
	default:
		fs.Usage()
		return config.Usagef("unknown command %q", cmd)
	}
	logger, err := log.Logger(stderr, "collector")
	if err != nil {
		return err
	}

	in := stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		defer f.Close()
		in = f
	}
	nc, err := bus.Connect(natsURL, "schedlens-collector-replay", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(30*time.Second))
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if _, err := bus.EnsureStream(ctx, js, stream); err != nil {
		return err
	}
	res, err := collector.Replay(ctx, js, in, cluster, stderr)
	fmt.Fprintf(stdout, "published %d envelopes (%d already in the stream), %d invalid lines, %d not acknowledged\n",
		res.Published, res.Duplicates, res.Invalid, res.Failed)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if res.Invalid > 0 || res.Failed > 0 {
		return fmt.Errorf("replay: %d invalid lines, %d not acknowledged", res.Invalid, res.Failed)
	}
	return nil
}
