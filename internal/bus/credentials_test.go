package bus_test

import (
	"crypto/tls"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/natsserver"
	"github.com/schedlens/schedlens/internal/tlstest"
)

// A real nats-server that wants TLS with a client certificate (verified against the CA) and
// an nkey user: the client with the CA, its certificate and the seed connects; without any one
// of them it is refused.
func TestCredentialsConnectWithTLSAndNkey(t *testing.T) {
	ca := tlstest.NewCA(t)
	dir := t.TempDir()
	serverCert, serverKey := ca.Issue(t, dir, "server", "nats", false)
	clientCert, clientKey := ca.Issue(t, dir, "client", "collector", true)
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	seedFile := filepath.Join(dir, "collector.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	otherFile := filepath.Join(dir, "other.nk")
	if err := os.WriteFile(otherFile, otherSeed, 0o600); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(serverCert, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := natsserver.Start(natsserver.Options{Configure: func(o *server.Options) {
		o.TLS, o.TLSVerify = true, true
		o.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
		o.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := strings.Replace(srv.URL(), "nats://", "tls://", 1)
	good := bus.Credentials{CAFile: ca.CertFile, CertFile: clientCert, KeyFile: clientKey, NkeyFile: seedFile, InboxPrefix: bus.CollectorInboxPrefix}
	opts, err := good.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := bus.Connect(url, "test", slog.New(slog.DiscardHandler), opts...)
	if err != nil {
		t.Fatalf("with the CA, the client certificate and the seed: %v", err)
	}
	if !nc.TLSRequired() {
		t.Error("connected without TLS")
	}
	nc.Close()

	for what, c := range map[string]bus.Credentials{
		"without the CA":                 {CertFile: clientCert, KeyFile: clientKey, NkeyFile: seedFile},
		"without the client certificate": {CAFile: ca.CertFile, NkeyFile: seedFile},
		"without the nkey":               {CAFile: ca.CertFile, CertFile: clientCert, KeyFile: clientKey},
		"with another nkey":              {CAFile: ca.CertFile, CertFile: clientCert, KeyFile: clientKey, NkeyFile: otherFile},
	} {
		opts, err := c.Options()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if nc, err := bus.Connect(url, "test", slog.New(slog.DiscardHandler), opts...); err == nil {
			nc.Close()
			t.Errorf("%s: connected, want refused", what)
		} else if strings.Contains(err.Error(), string(seed)) {
			t.Errorf("%s: the error shows the seed: %v", what, err)
		}
	}
}

// Files that do not go together are refused before dialling, naming the flags.
func TestCredentialsRefuseBadCombinations(t *testing.T) {
	for c, want := range map[bus.Credentials]string{
		{CertFile: "c.crt"}:                         "-nats-cert-file and -nats-key-file",
		{KeyFile: "c.key"}:                          "-nats-cert-file and -nats-key-file",
		{CredsFile: "a.creds", NkeyFile: "a.nk"}:    "choose one",
		{NkeyFile: filepath.Join(t.TempDir(), "x")}: "not a readable nkey seed file",
	} {
		if _, err := c.Options(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", c, err, want)
		}
	}
}

// A real nats-server in operator mode (a trusted operator key, accounts from a resolver): the
// client with the user's .creds file (JWT and seed) connects; without it, or with a user of an
// account the server does not trust, it is refused.
func TestCredentialsConnectWithCredsFile(t *testing.T) {
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	creds := func(t *testing.T, signer nkeys.KeyPair, name string) string {
		t.Helper()
		user, _ := nkeys.CreateUser()
		userPub, _ := user.PublicKey()
		uc := jwt.NewUserClaims(userPub)
		uc.Name = name
		ujwt, err := uc.Encode(signer)
		if err != nil {
			t.Fatal(err)
		}
		seed, _ := user.Seed()
		b, err := jwt.FormatUserConfig(ujwt, seed)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), name+".creds")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	account, _ := nkeys.CreateAccount()
	accPub, _ := account.PublicKey()
	ajwt, err := jwt.NewAccountClaims(accPub).Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	resolver := &server.MemAccResolver{}
	if err := resolver.Store(accPub, ajwt); err != nil {
		t.Fatal(err)
	}
	srv, err := natsserver.Start(natsserver.Options{Configure: func(o *server.Options) {
		o.TrustedKeys = []string{opPub}
		o.AccountResolver = resolver
		o.JetStream = false
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	untrusted, _ := nkeys.CreateAccount()
	for what, tc := range map[string]struct {
		c  bus.Credentials
		ok bool
	}{
		"with the user's .creds":              {bus.Credentials{CredsFile: creds(t, account, "collector")}, true},
		"without credentials":                 {bus.Credentials{}, false},
		"with a user of an untrusted account": {bus.Credentials{CredsFile: creds(t, untrusted, "stranger")}, false},
	} {
		opts, err := tc.c.Options()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := bus.Connect(srv.URL(), "test", slog.New(slog.DiscardHandler), opts...)
		if err == nil {
			nc.Close()
		}
		if (err == nil) != tc.ok {
			t.Errorf("%s: connect error %v, want ok %v", what, err, tc.ok)
		}
	}
}
