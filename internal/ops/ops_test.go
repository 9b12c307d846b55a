package ops_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/ops"
)

// serve runs ops.Serve with short timeouts on a loopback port until the test ends.
func serve(t *testing.T, h http.Handler, to ops.Timeouts) string {
	t.Helper()
	return serveWith(t, h, ops.WithTimeouts(to))
}

// serveWith runs ops.Serve with opts on a loopback port until the test ends.
func serveWith(t *testing.T, h http.Handler, opts ...ops.ServeOption) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	bound := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- ops.Serve(ctx, "127.0.0.1:0", h, slog.New(slog.DiscardHandler), func(addr string) { bound <- addr }, opts...)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return <-bound
}

// trickle sends s one byte every gap, until it is sent or a write fails (the server closed).
func trickle(conn net.Conn, s string, gap time.Duration) {
	for i := 0; i < len(s); i++ {
		if _, err := conn.Write([]byte{s[i]}); err != nil {
			return
		}
		time.Sleep(gap)
	}
}

// closedByServer reads until the connection ends and reports how: the server closing it (EOF
// or a reset), never the client's own safety deadline.
func closedByServer(t *testing.T, conn net.Conn) string {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a hang fails the test, it does not time it
	b, err := io.ReadAll(conn)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("the server kept the connection open (read %q)", b)
	case err != nil && !errors.Is(err, syscall.ECONNRESET):
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

// A slow-loris client, sending its headers a byte at a time and never finishing them, is cut
// off by the server once ReadHeader has passed: the connection is closed, not held.
func TestSlowLorisIsCutOff(t *testing.T) {
	addr := serve(t, ops.Handler(prometheus.NewRegistry(), func(context.Context) error { return nil }),
		ops.Timeouts{ReadHeader: 200 * time.Millisecond, Read: 400 * time.Millisecond, Write: time.Second, Idle: time.Second})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go trickle(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "+strings.Repeat("a", 10_000), 20*time.Millisecond)
	if got := closedByServer(t, conn); strings.Contains(got, "200 OK") {
		t.Errorf("a request that never ended its headers was answered: %q", got)
	}
}

// A body that trickles in is cut off by Read: the handler's read fails and the connection
// closes.
func TestSlowBodyIsCutOff(t *testing.T) {
	readErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		readErr <- err
	})
	addr := serve(t, h, ops.Timeouts{ReadHeader: 200 * time.Millisecond, Read: 400 * time.Millisecond, Write: time.Second, Idle: time.Second})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST /v1/ingest/requests HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	go trickle(conn, strings.Repeat("x", 100_000), 20*time.Millisecond)
	closedByServer(t, conn)
	if err := <-readErr; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("handler's read of a trickling body: %v, want the read deadline", err)
	}
}

// Headers beyond MaxHeaderBytes are refused with 431, and a normal request is served.
func TestHeadersBeyondTheLimitAre431(t *testing.T) {
	addr := serve(t, ops.Handler(prometheus.NewRegistry(), func(context.Context) error { return nil }),
		ops.Timeouts{MaxHeaderBytes: 4 << 10})
	for _, tc := range []struct {
		header string
		want   int
	}{{"small", http.StatusOK}, {strings.Repeat("h", 16<<10), http.StatusRequestHeaderFieldsTooLarge}} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + tc.header + "\r\nConnection: close\r\n\r\n"))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("header of %d bytes: %d, want %d", len(tc.header), resp.StatusCode, tc.want)
		}
	}
}

// Every server Serve builds has all of its limits set.
func TestNewServerSetsEveryLimit(t *testing.T) {
	srv := ops.NewServer(http.NotFoundHandler())
	d := ops.DefaultTimeouts()
	if srv.ReadHeaderTimeout != d.ReadHeader || srv.ReadTimeout != d.Read || srv.WriteTimeout != d.Write ||
		srv.IdleTimeout != d.Idle || srv.MaxHeaderBytes != d.MaxHeaderBytes || d.ReadHeader <= 0 || d.Read <= 0 || d.Write <= 0 || d.Idle <= 0 {
		t.Errorf("server %+v, defaults %+v", srv, d)
	}
	changed := ops.NewServer(http.NotFoundHandler(), ops.WithTimeouts(ops.Timeouts{Write: time.Hour}))
	if changed.WriteTimeout != time.Hour || changed.ReadTimeout != d.Read {
		t.Errorf("WithTimeouts: write %v read %v", changed.WriteTimeout, changed.ReadTimeout)
	}
}
