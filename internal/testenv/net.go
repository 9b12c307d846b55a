package testenv

import (
	"net"
	"strconv"
	"testing"
)

// FreePort is for servers and binaries that take an address rather than a listener (a daemon's
// -metrics-addr, a nats-server or postgres port): a TCP port that was free on 127.0.0.1 a moment ago: the kernel picked it
// for a listener that is closed again, so another process could take it before the caller does.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pick a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreeAddr is FreePort as a host:port address on 127.0.0.1.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
}
