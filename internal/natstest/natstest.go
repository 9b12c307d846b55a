// Package natstest runs a real NATS server with JetStream inside the test process, one per test,
// so tests own their stream and can stop and restart the server.
package natstest

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an in-process nats-server with JetStream and file storage in a temp dir.
type Server struct {
	t    testing.TB
	opts server.Options
	srv  *server.Server

	conf      string            // the configuration file of StartWithRoles, re-read on Restart
	passwords map[string]string // role → password, with StartWithRoles
}

// Start runs a server on a free loopback port; it is shut down when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pick a port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{t: t, opts: server.Options{
		Host:      "127.0.0.1",
		Port:      port,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	}}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// URL is the client URL of the server.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.opts.Port) }

// Stop shuts the server down; its stored streams stay on disk for Restart.
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Restart starts the server again on the same port with the same storage.
func (s *Server) Restart() {
	s.Stop()
	s.start()
}

func (s *Server) start() {
	s.t.Helper()
	opts := s.opts
	if s.conf != "" {
		// Accounts belong to one server: read them afresh for each.
		o, err := server.ProcessConfigFile(s.conf)
		if err != nil {
			s.t.Fatalf("read nats-server configuration: %v", err)
		}
		o.NoLog, o.NoSigs = true, true
		opts = *o
	}
	srv, err := server.NewServer(&opts)
	if err != nil {
		s.t.Fatalf("start nats-server: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		s.t.Fatalf("nats-server not ready on %s", s.URL())
	}
	s.srv = srv
}
