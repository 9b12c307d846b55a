package ops

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"
)

// TLSFiles name a PEM certificate (chain) and its key: a listener given both serves HTTPS.
type TLSFiles struct {
	CertFile, KeyFile string
}

// Enabled reports whether both files are named; Check says what is wrong when only one is.
func (t TLSFiles) Enabled() bool { return t.CertFile != "" && t.KeyFile != "" }

// Check refuses a certificate without a key and a key without a certificate.
func (t TLSFiles) Check() error {
	if (t.CertFile == "") != (t.KeyFile == "") {
		return errors.New("-tls-cert-file and -tls-key-file go together: set both or neither")
	}
	return nil
}

// CertReloader serves a certificate pair through tls.Config.GetCertificate and loads it again
// when either file changes (modification time or size, checked at most once per second) — a
// renewed certificate (cert-manager, a Secret volume) is used by the next handshake without a
// restart. A pair that does not load (a half-written renewal, a key that does not match) is
// tried again a second later; the certificate loaded before is served meanwhile.
type CertReloader struct {
	files TLSFiles
	now   func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]stamp
	checked time.Time
	err     error // the last reload's failure, for the logs
}

type stamp struct {
	mod  time.Time
	size int64
}

// NewCertReloader loads the pair; an error names the files.
func NewCertReloader(files TLSFiles) (*CertReloader, error) {
	if err := files.Check(); err != nil {
		return nil, err
	}
	r := &CertReloader{files: files, now: time.Now}
	st, err := r.stamps()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls certificate %s, key %s: %w", files.CertFile, files.KeyFile, err)
	}
	r.cert, r.stamp, r.checked = &cert, st, r.now()
	return r, nil
}

func (r *CertReloader) stamps() ([2]stamp, error) {
	var st [2]stamp
	for i, p := range []string{r.files.CertFile, r.files.KeyFile} {
		fi, err := os.Stat(p)
		if err != nil {
			return st, fmt.Errorf("tls: %w", err)
		}
		st[i] = stamp{fi.ModTime(), fi.Size()}
	}
	return st, nil
}

// GetCertificate is tls.Config.GetCertificate.
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= time.Second {
		r.checked = now
		r.reload()
	}
	return r.cert, nil
}

func (r *CertReloader) reload() {
	st, err := r.stamps()
	if err != nil {
		r.err = err
		return
	}
	if st == r.stamp {
		return
	}
	cert, err := tls.LoadX509KeyPair(r.files.CertFile, r.files.KeyFile)
	if err != nil {
		r.err = err
		return
	}
	r.cert, r.stamp, r.err = &cert, st, nil
}

// Err is the last failed reload's error (nil once a reload succeeded).
func (r *CertReloader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Config is a server tls.Config (TLS 1.2 or later) serving r's certificate.
func (r *CertReloader) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}
}

// WithTLS makes Serve serve HTTPS with r's certificate (nil r: plain HTTP).
func WithTLS(r *CertReloader) ServeOption {
	return func(s *http.Server) {
		if r != nil {
			s.TLSConfig = r.Config()
		}
	}
}

// TLSOption loads files for Serve: WithTLS of their reloader, or, when no files are named, an
// option that changes nothing. A bad pair (one file without the other, unreadable, not matching)
// is an error here, before anything listens.
func TLSOption(files TLSFiles) (ServeOption, error) {
	if err := files.Check(); err != nil {
		return nil, err
	}
	if !files.Enabled() {
		return func(*http.Server) {}, nil
	}
	r, err := NewCertReloader(files)
	if err != nil {
		return nil, err
	}
	return WithTLS(r), nil
}
