package config_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/config"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://schedlens:s3cr3t@db.prod:5432/schedlens?sslmode=verify-full", "postgres://schedlens:xxxxx@db.prod:5432/schedlens?sslmode=verify-full"},
		{"postgres://root@127.0.0.1:5432/schedlens?sslmode=disable", "postgres://root@127.0.0.1:5432/schedlens?sslmode=disable"},
		{"postgres://u@db/x?password=s3cr3t&sslmode=require", "postgres://u@db/x?password=xxxxx&sslmode=require"},
		{"postgres://u:p%40ss@db/x", "postgres://u:xxxxx@db/x"},
		{"postgres://u:p@ss@db/x", "postgres://u:xxxxx@db/x"},
		{"postgres://u:pa ss@db/x", "postgres://u:xxxxx@db/x"},
		{"postgres://u:p#ss@db/x", "postgres://u:xxxxx@db/x"},
		{"host=db user=schedlens password=s3cr3t sslmode=require", "host=db user=schedlens password=xxxxx sslmode=require"},
		{"host=db password='s3 cr3t' sslpassword=k", "host=db password=xxxxx sslpassword=xxxxx"},
		{"nats://collector:s3cr3t@nats-0:4222,nats://collector:s3cr3t@nats-1:4222", "nats://collector:xxxxx@nats-0:4222,nats://collector:xxxxx@nats-1:4222"},
		{"nats://s3cr3ttoken@nats:4222", "nats://xxxxx@nats:4222"},
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"https://api.example/v1?token=s3cr3t", "https://api.example/v1?token=xxxxx"},
		{"", ""},
	} {
		if got := config.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"s3cr3t", "xxxxx"}, {"c2VjcmV0Cg==", "xxxxx"}, {"host=db user=u", "xxxxx"}, {"", ""},
		{"postgres://u:s3cr3t@db/x", "postgres://u:xxxxx@db/x"},
	} {
		if got := config.RedactSecret(tc.in); got != tc.want {
			t.Errorf("RedactSecret(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

const dbURL = "postgres://schedlens:s3cr3t@db.prod:5432/schedlens"

// secretFlags is a flag set with one secret flag, over the given environment.
func secretFlags(env map[string]string, out *strings.Builder) (*config.FlagSet, *string) {
	fs := config.New("api", func(k string) string { return env[k] }, out)
	var v string
	fs.Secret(&v, "database-url", config.EnvDatabaseURL, config.DefaultDatabaseURL, "Postgres URL")
	var n int
	fs.Int(&n, "port", "", 1, "a port")
	return fs, &v
}

// A secret comes from its variable, or from the file its _FILE variable names; never both.
func TestSecretSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "database-url")
	if err := os.WriteFile(file, []byte(dbURL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		want    string
		wantErr string
	}{
		{"default", nil, nil, config.DefaultDatabaseURL, ""},
		{"from the variable", map[string]string{"SCHEDLENS_DATABASE_URL": dbURL}, nil, dbURL, ""},
		{"from the file, newline trimmed", map[string]string{"SCHEDLENS_DATABASE_URL_FILE": file}, nil, dbURL, ""},
		{"a flag wins", map[string]string{"SCHEDLENS_DATABASE_URL_FILE": file}, []string{"-database-url", "postgres://other@x/y"}, "postgres://other@x/y", ""},
		{"both set", map[string]string{"SCHEDLENS_DATABASE_URL": dbURL, "SCHEDLENS_DATABASE_URL_FILE": file}, nil, "",
			"both SCHEDLENS_DATABASE_URL and SCHEDLENS_DATABASE_URL_FILE are set (for -database-url): set one"},
		{"missing file", map[string]string{"SCHEDLENS_DATABASE_URL_FILE": filepath.Join(dir, "nope")}, nil, "", "SCHEDLENS_DATABASE_URL_FILE (for -database-url): read secret file: open " + filepath.Join(dir, "nope")},
		{"empty file", map[string]string{"SCHEDLENS_DATABASE_URL_FILE": empty}, nil, "", "secret file " + empty + " is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			fs, v := secretFlags(tc.env, &out)
			err := fs.Parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error()+out.String(), "s3cr3t") {
					t.Errorf("the secret leaked:\n%v\n%s", err, out.String())
				}
				return
			}
			if err != nil || *v != tc.want {
				t.Errorf("value %q, err %v; want %q", *v, err, tc.want)
			}
		})
	}
}

// Neither -h, nor the usage printed after a bad flag or a bad variable, nor the flag's String
// shows a secret that came from the environment or a file: only its redacted form.
func TestSecretNeverPrinted(t *testing.T) {
	file := filepath.Join(t.TempDir(), "url")
	if err := os.WriteFile(file, []byte(dbURL), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"-h, from the variable", map[string]string{"SCHEDLENS_DATABASE_URL": dbURL}, []string{"-h"}},
		{"-h, from the file", map[string]string{"SCHEDLENS_DATABASE_URL_FILE": file}, []string{"-h"}},
		{"a bad flag", map[string]string{"SCHEDLENS_DATABASE_URL": dbURL}, []string{"-no-such-flag"}},
		{"a bad flag value", map[string]string{"SCHEDLENS_DATABASE_URL": dbURL}, []string{"-port", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			fs, _ := secretFlags(tc.env, &out)
			err := fs.Parse(tc.args)
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if tc.args[0] == "-h" && !errors.Is(err, flag.ErrHelp) {
				t.Errorf("-h: %v", err)
			}
			printed := out.String() + err.Error() + fs.Lookup("database-url").Value.String()
			if strings.Contains(printed, "s3cr3t") {
				t.Errorf("the password was printed:\n%s", printed)
			}
			if !strings.Contains(out.String(), "postgres://schedlens:xxxxx@db.prod:5432/schedlens") || !strings.Contains(out.String(), "SCHEDLENS_DATABASE_URL_FILE") {
				t.Errorf("usage does not show the redacted default and the _FILE variable:\n%s", out.String())
			}
		})
	}
}

// Only secrets are redacted: other flags print their defaults as before.
func TestSecretUsageLine(t *testing.T) {
	var out strings.Builder
	fs := config.New("api", func(k string) string { return map[string]string{"SCHEDLENS_NATS_URL": "nats://c:pw@n:4222"}[k] }, &out)
	var nats, addr string
	fs.Secret(&nats, "nats-url", config.EnvNATSURL, config.DefaultNATSURL, "NATS server URL")
	fs.String(&addr, "http-addr", config.EnvHTTPAddr, "127.0.0.1:8080", "listen address")
	fs.PrintDefaults()
	want := "  -http-addr string\n    \tlisten address (env SCHEDLENS_HTTP_ADDR) (default \"127.0.0.1:8080\")\n" +
		"  -nats-url value\n    \tNATS server URL (env SCHEDLENS_NATS_URL or SCHEDLENS_NATS_URL_FILE) (default nats://c:xxxxx@n:4222)\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}
