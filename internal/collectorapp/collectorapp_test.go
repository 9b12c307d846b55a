package collectorapp_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/schedlens/schedlens/internal/auth"
	"github.com/schedlens/schedlens/internal/collector"
	"github.com/schedlens/schedlens/internal/collectorapp"
	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/ops"
	"github.com/schedlens/schedlens/internal/tlstest"
)

const (
	readToken  = "read-0123456789abcdef0123456789"
	writeToken = "write-0123456789abcdef0123456789"
)

// The collector's listeners with a token file and TLS: the ingest listener wants role write (a
// read token is 403, a write token's row is published), /metrics wants read with AuthMetrics,
// /healthz stays open, and both listeners serve HTTPS.
func TestIngestListenerAuthAndTLS(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(readToken+" read\n"+writeToken+" write loadgen\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := auth.NewTokenFile(tokens, nil)
	if err != nil {
		t.Fatal(err)
	}
	ca := tlstest.NewCA(t)
	cert, key := ca.Issue(t, dir, "tls", "collector", false)
	cfg := collector.DefaultConfig()
	cfg.Probe.Interval, cfg.DCGM.Interval = 0, 0
	addrs := make(chan [2]string, 2)
	app, err := collectorapp.New(collectorapp.Options{
		NATSURL: natstest.Start(t).URL(), Client: fake.NewClientset(), Collector: cfg,
		MetricsAddr: "127.0.0.1:0", IngestAddr: "127.0.0.1:0", Auth: tf, AuthMetrics: true,
		TLS: ops.TLSFiles{CertFile: cert, KeyFile: key}, Bound: func(l, a string) { addrs <- [2]string{l, a} },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("collector: %v", err)
		}
	}()
	bound := map[string]string{}
	for len(bound) < 2 {
		select {
		case a := <-addrs:
			bound[a[0]] = a[1]
		case err := <-done:
			t.Fatalf("collector stopped: %v", err)
		}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	row := `{"pod_uid":"0f0e0d0c-0000-4000-8000-000000000001","pod_namespace":"ns","pod_name":"p","sent_at":"2026-12-01T00:00:00Z","latency_ms":5,"status":200,"ok":true}` + "\n"
	for _, tc := range []struct {
		listener, method, path, token string
		want                          int
	}{
		{"ingest", "POST", "/v1/ingest/requests", "", 401},
		{"ingest", "POST", "/v1/ingest/requests", readToken, 403},
		{"ingest", "POST", "/v1/ingest/requests", writeToken, 200},
		{"metrics", "GET", "/metrics", "", 401},
		{"metrics", "GET", "/metrics", readToken, 200},
		{"metrics", "GET", "/healthz", "", 200},
	} {
		req, _ := http.NewRequest(tc.method, "https://"+bound[tc.listener]+tc.path, strings.NewReader(row))
		req.Header.Set("Content-Type", "application/x-ndjson")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s with %q on the %s listener: %d, want %d", tc.method, tc.path, tc.token, tc.listener, resp.StatusCode, tc.want)
		}
	}
}

// Without authentication a non-loopback ingest address is refused before anything connects.
func TestIngestWithoutAuthNeedsLoopback(t *testing.T) {
	_, err := collectorapp.New(collectorapp.Options{NATSURL: "nats://127.0.0.1:1", Client: fake.NewClientset(),
		Collector: collector.DefaultConfig(), MetricsAddr: "127.0.0.1:0", IngestAddr: ":0"})
	if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("ingest on :0 without auth: %v, want a refusal", err)
	}
}
