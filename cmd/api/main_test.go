package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/schedlens/schedlens/internal/pgtest"
)

// `api compare NAME` takes its flags before the command, before NAME or after it: the
// environment names an unreachable database, so only an honoured -database-url reaches the
// empty test database and its answer that there is no such experiment.
func TestCompareFlagsInAnyOrder(t *testing.T) {
	url := pgtest.URL(t)
	env := func(k string) string {
		if k == "SCHEDLENS_DATABASE_URL" {
			return "postgres://root@127.0.0.1:1/nothing?sslmode=disable&connect_timeout=2"
		}
		return ""
	}
	for _, args := range [][]string{
		{"compare", "day99", "-database-url", url, "-baseline", "control"},
		{"compare", "-database-url", url, "-baseline", "control", "day99"},
		{"compare", "-baseline", "control", "day99", "-database-url", url},
		{"-database-url", url, "compare", "day99", "-namespace", "ai-lab"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"api"}, args...), env, &stdout, &stderr)
		if err == nil || err.Error() != `compare: no experiment "day99"` {
			t.Errorf("api %q: %v; want the database reached and no experiment day99\n%s", args, err, stderr.String())
		}
	}
	for _, args := range [][]string{
		{"compare"},
		{"compare", "-baseline", "control"},
		{"compare", "a", "-baseline", "control", "b"},
		{"frobnicate"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"api"}, args...), env, &bytes.Buffer{}, &stderr)
		if err == nil || !strings.Contains(stderr.String(), "usage:") {
			t.Errorf("api %q: %v; want a usage error", args, err)
		}
	}
}
