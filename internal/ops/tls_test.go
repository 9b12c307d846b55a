package ops_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/ops"
	"github.com/schedlens/schedlens/internal/testenv"
	"github.com/schedlens/schedlens/internal/tlstest"
)

// peer is the common name of the certificate a new handshake with addr sees.
func peer(t *testing.T, ca *tlstest.CA, addr string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// Serve with a certificate pair serves HTTPS; replacing the files changes what the next
// handshake sees, without a restart.
func TestTLSCertificateIsReloaded(t *testing.T) {
	ca := tlstest.NewCA(t)
	dir := t.TempDir()
	cert, key := ca.Issue(t, dir, "tls", "first", false)
	opt, err := ops.TLSOption(ops.TLSFiles{CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveWith(t, ops.Handler(prometheus.NewRegistry(), func(context.Context) error { return nil }), opt)
	if got := peer(t, ca, addr); got != "first" {
		t.Fatalf("certificate %q, want first", got)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	resp, err := client.Get("https://" + addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET https /healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	ca.Issue(t, dir, "tls", "second", false)
	if !testenv.Until(10*time.Second, 50*time.Millisecond, func() bool { return peer(t, ca, addr) == "second" }) {
		t.Fatalf("the replaced certificate was not served within 10s (still %q)", peer(t, ca, addr))
	}
}

// A certificate without its key, or with another key, is refused before anything listens.
func TestTLSOptionRefusesABadPair(t *testing.T) {
	ca := tlstest.NewCA(t)
	dir := t.TempDir()
	cert, _ := ca.Issue(t, dir, "a", "a", false)
	_, otherKey := ca.Issue(t, dir, "b", "b", false)
	for _, tc := range []struct {
		files ops.TLSFiles
		want  string
	}{
		{ops.TLSFiles{CertFile: cert}, "go together"},
		{ops.TLSFiles{KeyFile: otherKey}, "go together"},
		{ops.TLSFiles{CertFile: cert, KeyFile: otherKey}, "private key does not match"},
		{ops.TLSFiles{CertFile: dir + "/none.crt", KeyFile: otherKey}, "no such file"},
	} {
		if _, err := ops.TLSOption(tc.files); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.files, err, tc.want)
		}
	}
	if _, err := ops.TLSOption(ops.TLSFiles{}); err != nil {
		t.Errorf("no files: %v, want plain HTTP", err)
	}
}
