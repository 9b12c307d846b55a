package bus

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/schedlens/schedlens/internal/config"
)

// Credentials are a NATS client's TLS and authentication besides the URL (which may carry a
// user and password or a token): a CA to verify the server with, a client certificate, and a
// .creds file (a user JWT and its nkey seed, for a server run in operator mode) or an nkey seed
// file. All are files, so a Kubernetes Secret volume carries them; none is ever printed.
type Credentials struct {
	CAFile, CertFile, KeyFile string
	CredsFile, NkeyFile       string
	// InboxPrefix is the role's inbox prefix (CollectorInboxPrefix, CorrelatorInboxPrefix):
	// with the least-privilege permissions a client may read replies only there.
	InboxPrefix string
}

// Define registers -nats-ca-file, -nats-cert-file, -nats-key-file, -nats-creds-file and
// -nats-nkey-file.
func (c *Credentials) Define(fs *config.FlagSet) {
	fs.String(&c.CAFile, "nats-ca-file", "SCHEDLENS_NATS_CA_FILE", "", "PEM CA certificates to verify the NATS server with (tls://)")
	fs.String(&c.CertFile, "nats-cert-file", "SCHEDLENS_NATS_CERT_FILE", "", "PEM client certificate for NATS (with -nats-key-file)")
	fs.String(&c.KeyFile, "nats-key-file", "SCHEDLENS_NATS_KEY_FILE", "", "PEM private key of -nats-cert-file")
	fs.String(&c.CredsFile, "nats-creds-file", "SCHEDLENS_NATS_CREDS_FILE", "", "NATS .creds file (user JWT and nkey seed)")
	fs.String(&c.NkeyFile, "nats-nkey-file", "SCHEDLENS_NATS_NKEY_FILE", "", "file holding a NATS user's nkey seed (SU…)")
}

// Options turns the credentials into nats.Options; an error says which files do not go together.
func (c Credentials) Options() ([]nats.Option, error) {
	var opts []nats.Option
	if c.CAFile != "" {
		opts = append(opts, nats.RootCAs(c.CAFile))
	}
	switch {
	case (c.CertFile == "") != (c.KeyFile == ""):
		return nil, errors.New("-nats-cert-file and -nats-key-file go together: set both or neither")
	case c.CertFile != "":
		opts = append(opts, nats.ClientCert(c.CertFile, c.KeyFile))
	}
	switch {
	case c.CredsFile != "" && c.NkeyFile != "":
		return nil, errors.New("-nats-creds-file and -nats-nkey-file: choose one")
	case c.CredsFile != "":
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	case c.NkeyFile != "":
		o, err := nats.NkeyOptionFromSeed(c.NkeyFile)
		if err != nil {
			// nats.go's error quotes no seed; the file is named, not read back.
			return nil, fmt.Errorf("-nats-nkey-file %s: not a readable nkey seed file", c.NkeyFile)
		}
		opts = append(opts, o)
	}
	if c.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	return opts, nil
}
