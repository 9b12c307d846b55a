package main

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// natsServer is an in-process nats-server with JetStream file storage in a temp dir, so the
// bench measures a real JetStream without needing one running.
type natsServer struct {
	srv *server.Server
	dir string
}

// startNATS runs a server on a free loopback port.
func startNATS() (*natsServer, error) {
	dir, err := os.MkdirTemp("", "schedlens-bench-nats-")
	if err != nil {
		return nil, fmt.Errorf("nats store dir: %w", err)
	}
	srv, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  dir,
		NoLog:     true,
		NoSigs:    true,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start nats-server: %w", err)
	}
	go srv.Start()
	s := &natsServer{srv: srv, dir: dir}
	if !srv.ReadyForConnections(10 * time.Second) {
		s.close()
		return nil, fmt.Errorf("in-process nats-server not ready after 10s")
	}
	return s, nil
}

// url is the client URL of the server.
func (s *natsServer) url() string { return s.srv.ClientURL() }

// close shuts the server down and deletes its storage.
func (s *natsServer) close() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	os.RemoveAll(s.dir)
}
