package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/pgtest"
)

// -database-url is honoured before and after the command (the environment names an
// unreachable server, so an ignored flag fails).
func TestFlagsBeforeOrAfterTheCommand(t *testing.T) {
	url := pgtest.URL(t)
	env := pgtest.UnreachableEnv("root")
	for _, args := range [][]string{
		{"migrate", "-database-url", url},
		{"-database-url", url, "migrate"},
		{"-log-level", "warn", "migrate", "-database-url=" + url},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), append([]string{"correlator"}, args...), env, &stdout, &stderr); err != nil {
			t.Errorf("correlator %q: %v\n%s", args, err, stderr.String())
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "-database-url", url, "extra"}, `unexpected arguments ["extra"]`},
		{[]string{"-database-url", url, "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"migrate", "-database-url", url, "-auto-gomemlimit-ratio", "1.5"}, `-auto-gomemlimit-ratio must be in (0, 1], got 1.5`},
		{[]string{"migrate", "-database-url", url, "-log-level", "loud"}, `bad -log-level "loud"`},
		{[]string{"migrate", "-database-url", url, "-gpu-idle-threshold", "101"}, `-gpu-idle-threshold must be in 0..100`},
		{[]string{"migrate", "-database-url", url, "-comparison-warm-interval", "soon"}, `-comparison-warm-interval`},
		{[]string{"serve", "-database-url", url, "-concurrent-batches", "0"}, `concurrent batches must be between 1 and 16, got 0`},
		{[]string{"serve", "-database-url", url, "-concurrent-batches", "17"}, `concurrent batches must be between 1 and 16, got 17`},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"correlator"}, tc.args...), env, &bytes.Buffer{}, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(stderr.String(), "usage:") {
			t.Errorf("correlator %q: err %v; want a usage error saying %q", tc.args, err, tc.want)
		}
	}
}

// Neither the database password nor the NATS password is printed: not by -h, not with the usage
// after a bad flag or value, not in the error of a failed connection.
func TestSecretsAreNotPrinted(t *testing.T) {
	const dbPassword, natsPassword = "db-pw-do-not-print", "nats-pw-do-not-print"
	env := func(k string) string {
		switch k {
		case "SCHEDLENS_DATABASE_URL":
			return pgtest.UnreachableURL("schedlens:" + dbPassword)
		case "SCHEDLENS_NATS_URL":
			return "nats://correlator:" + natsPassword + "@127.0.0.1:1"
		}
		return ""
	}
	for _, args := range [][]string{{"-h"}, {"-no-such-flag"}, {"-batch-size", "x"}, {"migrate"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"correlator"}, args...), env, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if err != nil {
			out += err.Error()
		}
		if strings.Contains(out, dbPassword) || strings.Contains(out, natsPassword) {
			t.Errorf("correlator %q printed a password:\n%s", args, out)
		}
	}
}

// `correlator maintain` migrates, creates the coming days' partitions and says what it did; a
// retention that is not a duration is a usage error.
func TestMaintainCommand(t *testing.T) {
	url := pgtest.URL(t)
	env := pgtest.UnreachableEnv("root")
	var stdout, stderr bytes.Buffer
	args := []string{"correlator", "maintain", "-database-url", url, "-retention-events", "15d", "-retention-dead-letters", "2w"}
	if err := run(context.Background(), args, env, &stdout, &stderr); err != nil {
		t.Fatalf("%q: %v\n%s", args, err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "events_raw_"+time.Now().UTC().Format("20060102")) || !strings.Contains(stdout.String(), "dropped 0") {
		t.Errorf("maintain printed %q; want today's partitions created and none dropped", stdout.String())
	}
	stdout.Reset()
	if err := run(context.Background(), args, env, &stdout, &stderr); err != nil {
		t.Fatalf("%q again: %v", args, err)
	}
	if !strings.Contains(stdout.String(), "created 0 partitions") {
		t.Errorf("maintain again printed %q; want nothing created", stdout.String())
	}
	stderr.Reset()
	err := run(context.Background(), []string{"correlator", "maintain", "-database-url", url, "-retention-events", "15days"}, env, &bytes.Buffer{}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "15days") || !strings.Contains(stderr.String(), "usage:") {
		t.Errorf("-retention-events 15days: %v; want a usage error naming the value", err)
	}
}
