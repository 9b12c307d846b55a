package config

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"strings"
)

// FileSuffix names the variable that gives a secret setting from a file: SCHEDLENS_DATABASE_URL
// may instead be SCHEDLENS_DATABASE_URL_FILE=/run/secrets/database-url (a Kubernetes Secret
// mounted as a file keeps the value out of the pod spec, `ps` and /proc/<pid>/environ).
const FileSuffix = "_FILE"

// Redacted stands for a secret in usage, logs and errors.
const Redacted = "xxxxx"

// maxSecretFile bounds a secret file: a URL or a token, not a blob.
const maxSecretFile = 64 << 10

// Secret defines a string flag holding a secret — a password, a token, a credentialed URL. Like
// String it defaults to $env, else def; it may also come from the file $env_FILE names (its
// content, trailing newlines and spaces trimmed; setting both is an error). Its default and
// its value are shown only through Redact: in -h, in the usage printed after a bad flag, and
// by the flag's String (so a logged flag set leaks nothing). Errors name the variables and
// the file, never the value.
func (f *FlagSet) Secret(p *string, name, env, def, u string) {
	*p = def
	if env != "" {
		v, fromEnv := f.getenv(env), false
		if v != "" {
			*p, fromEnv = v, true
		}
		if path := f.getenv(env + FileSuffix); path != "" {
			switch s, err := readSecretFile(path); {
			case fromEnv:
				f.errs = append(f.errs, fmt.Errorf("both %s and %s%s are set (for -%s): set one", env, env, FileSuffix, name))
			case err != nil:
				f.errs = append(f.errs, fmt.Errorf("%s%s (for -%s): %v", env, FileSuffix, name, err))
			default:
				*p = s
			}
		}
		u += " (env " + env + " or " + env + FileSuffix + ")"
	}
	f.Var(&secretValue{p}, name, u)
}

// readSecretFile reads a secret from a file, without its trailing newline.
func readSecretFile(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read secret file: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxSecretFile+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("read secret file %s: %w", path, err)
	case len(b) > maxSecretFile:
		return "", fmt.Errorf("read secret file %s: larger than %d bytes", path, maxSecretFile)
	}
	s := strings.TrimRight(string(b), "\r\n\t ")
	if s == "" {
		return "", fmt.Errorf("secret file %s is empty", path)
	}
	return s, nil
}

// secretValue is the flag.Value of a Secret: it sets like a string and shows only redacted.
type secretValue struct{ p *string }

func (v *secretValue) Set(s string) error { *v.p = s; return nil }

// String is what flag prints as the default, redacted.
func (v *secretValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return RedactSecret(*v.p)
}

// RedactSecret shows a secret setting: a URL through Redact (its host and user stay readable,
// its password goes), a keyword/value DSN with its password redacted, anything else — a
// token, a password, a DSN without a password setting — as Redacted; "" stays "".
func RedactSecret(s string) string {
	switch {
	case s == "":
		return ""
	case strings.Contains(s, "://"):
		return Redact(s)
	}
	if r := Redact(s); r != s {
		return r
	}
	return Redacted
}

var (
	// userinfo of a URL that does not parse: scheme://user:password@, to the last '@' (where
	// url.Parse ends the userinfo; redacting too much is safe)
	userinfoRE = regexp.MustCompile(`(://[^:/@\s]*):.*@`)
	// keyword/value settings that are secrets, in a DSN ("host=db password=secret") or a query
	secretKV = regexp.MustCompile(`(?i)\b((?:ssl)?password|passwd|pwd|token|secret|api_?key|auth|nkey|seed)=('(?:[^'\\]|\\.)*'|[^\s&;,]*)`)
)

// Redact returns a URL (or a comma-separated list of them, as NATS takes, or a Postgres
// keyword/value DSN) fit to print: a password in the userinfo becomes Redacted
// (postgres://user:password@db/x → postgres://user:xxxxx@db/x), and so does the value of a
// password, token, secret or key parameter; the rest — scheme, user, host, path — is kept.
func Redact(s string) string {
	if s == "" {
		return ""
	}
	if !strings.Contains(s, "://") {
		return secretKV.ReplaceAllString(s, "${1}="+Redacted)
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = redactURL(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		// Unparseable (a space or a '#' in a password): redact by shape.
		s = userinfoRE.ReplaceAllString(s, "${1}:"+Redacted+"@")
		return secretKV.ReplaceAllString(s, "${1}="+Redacted)
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Redacted)
		} else if u.User.Username() != "" && u.Scheme != "postgres" && u.Scheme != "postgresql" {
			// nats://TOKEN@host: a lone NATS user is a token.
			u.User = url.User(Redacted)
		}
	}
	if u.RawQuery != "" {
		u.RawQuery = secretKV.ReplaceAllString(u.RawQuery, "${1}="+Redacted)
	}
	return u.String()
}
