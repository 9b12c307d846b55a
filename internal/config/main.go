package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main is the main of every schedlens command: it calls run with the process's arguments,
// environment and output and a context that ends on SIGINT or SIGTERM. When run fails it prints
// the error on stderr and exits 1, or exits with an ExitStatus the error carries and prints
// nothing more.
func Main(run func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		var st ExitStatus
		if errors.As(err, &st) {
			os.Exit(int(st))
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// ExitStatus is a non-zero exit status of a command that has reported its own failure.
type ExitStatus int

func (e ExitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
