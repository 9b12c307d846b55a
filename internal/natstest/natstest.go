// Package natstest runs a real NATS server with JetStream inside the test process, one per test,
// so tests own their stream and can stop and restart the server (see natsserver).
package natstest

import (
	"testing"

	"github.com/schedlens/schedlens/internal/natsserver"
)

// Server is an in-process nats-server with JetStream and file storage in the test's temp dir.
type Server struct {
	t testing.TB
	*natsserver.Server
	passwords map[string]string // role → password, with StartWithRoles
}

// Start runs a server on a free loopback port; it is shut down when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := natsserver.Start(natsserver.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("nats: %v", err)
	}
	t.Cleanup(s.Close)
	return &Server{t: t, Server: s}
}

// Restart starts the server again on the same port with the same storage.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.Server.Restart(); err != nil {
		s.t.Fatalf("restart nats: %v", err)
	}
}

// StartCluster runs n servers forming one JetStream cluster (natsserver.StartCluster), their
// storage in the test's temp dir; they are shut down when the test ends.
func StartCluster(t testing.TB, n int) []*Server {
	t.Helper()
	nodes, err := natsserver.StartCluster(n, t.TempDir())
	if err != nil {
		t.Fatalf("nats cluster: %v", err)
	}
	out := make([]*Server, n)
	for i, s := range nodes {
		t.Cleanup(s.Close)
		out[i] = &Server{t: t, Server: s}
	}
	return out
}
