package natstest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/natsserver"
	"github.com/schedlens/schedlens/internal/testenv"
)

// The users of a server started with StartWithRoles.
const (
	RoleAdmin      = "admin"      // everything in the account: provisions streams, inspects
	RoleCollector  = "collector"  // bus.CollectorPermissions
	RoleCorrelator = "correlator" // bus.CorrelatorPermissions
)

// Account is the NATS account (with JetStream) the users of StartWithRoles belong to.
const Account = "SCHEDLENS"

// StartWithRoles runs a server like Start whose clients must authenticate, with the least
// privileges of docs/security.md: one account, Account, with JetStream, and the users
// RoleAdmin (all of the account), RoleCollector (bus.CollectorPermissions) and RoleCorrelator
// (bus.CorrelatorPermissions(consumer)), each with a random password. Clients of a role must
// use its inbox prefix (InboxPrefix) for replies. The server is shut down when the test ends.
func StartWithRoles(t testing.TB, consumer string) *Server {
	t.Helper()
	port := testenv.FreePort(t)
	passwords := map[string]string{}
	for _, role := range []string{RoleAdmin, RoleCollector, RoleCorrelator} {
		passwords[role] = randomPassword()
	}
	conf := filepath.Join(t.TempDir(), "nats-server.conf")
	text := fmt.Sprintf("listen: \"127.0.0.1:%d\"\njetstream {\n  store_dir: %s\n}\n", port, strconv.Quote(t.TempDir())) +
		RolesConfig(consumer, passwords)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatalf("write nats-server configuration: %v", err)
	}
	srv, err := natsserver.Start(natsserver.Options{ConfigFile: conf})
	if err != nil {
		t.Fatalf("nats: %v", err)
	}
	t.Cleanup(srv.Close)
	return &Server{t: t, Server: srv, passwords: passwords}
}

// RolesConfig renders the accounts block of a nats-server configuration with the schedlens
// roles (docs/security.md shows it): passwords maps each role to its password (a bcrypt hash
// in production, which nats-server accepts in place of the password).
func RolesConfig(consumer string, passwords map[string]string) string {
	perms := func(p bus.Permissions) string {
		return fmt.Sprintf("permissions: {\n        publish: { allow: %s }\n        subscribe: { allow: %s }\n      }",
			quoteAll(p.Publish), quoteAll(p.Subscribe))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "accounts {\n  %s {\n    jetstream: enabled\n    users: [\n", Account)
	fmt.Fprintf(&b, "      { user: %s, password: %s }\n", RoleAdmin, strconv.Quote(passwords[RoleAdmin]))
	fmt.Fprintf(&b, "      { user: %s, password: %s,\n      %s }\n", RoleCollector, strconv.Quote(passwords[RoleCollector]), perms(bus.CollectorPermissions()))
	fmt.Fprintf(&b, "      { user: %s, password: %s,\n      %s }\n", RoleCorrelator, strconv.Quote(passwords[RoleCorrelator]), perms(bus.CorrelatorPermissions(consumer)))
	b.WriteString("    ]\n  }\n}\n")
	return b.String()
}

func quoteAll(subjects []string) string {
	q := make([]string, len(subjects))
	for i, s := range subjects {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// UserURL is the client URL of the server with role's credentials.
func (s *Server) UserURL(role string) string {
	u := url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", s.Port()), User: url.UserPassword(role, s.passwords[role])}
	return u.String()
}

// Password returns role's password ("" for a server started without roles).
func (s *Server) Password(role string) string { return s.passwords[role] }

// InboxPrefix is the inbox prefix a client of role must use (nats.CustomInboxPrefix); ""
// for RoleAdmin, which may use the default.
func InboxPrefix(role string) string {
	switch role {
	case RoleCollector:
		return bus.CollectorInboxPrefix
	case RoleCorrelator:
		return bus.CorrelatorInboxPrefix
	}
	return ""
}

func randomPassword() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
