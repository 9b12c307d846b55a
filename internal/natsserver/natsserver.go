// Package natsserver runs a real nats-server with JetStream inside the process, on a loopback
// port: for tests (through natstest), the bench and the lab, which need a JetStream of their
// own without one running on the machine.
package natsserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options shape the server.
type Options struct {
	// Dir holds JetStream's storage; empty: a temporary directory removed by Close.
	Dir string
	// Port to listen on (127.0.0.1); 0 picks a free one, kept across Restart.
	Port int
	// Configure, when set, adjusts the server's options before it starts (accounts, users).
	Configure func(*server.Options)
	// ConfigFile, when set, is a nats-server configuration file the server runs instead (its
	// listen address, JetStream storage, accounts and users; Dir, Port and Configure are then
	// not used). It is read afresh at every start: accounts belong to one server.
	ConfigFile string
}

// Server is a running in-process nats-server.
type Server struct {
	opts    server.Options
	conf    string
	tempDir string
	srv     *server.Server
}

// Start runs a server and waits until it accepts connections.
func Start(o Options) (*Server, error) {
	s := &Server{}
	if o.ConfigFile != "" {
		s.conf = o.ConfigFile
		opts, err := s.fileOptions()
		if err != nil {
			return nil, err
		}
		s.opts = *opts
		if err := s.start(); err != nil {
			return nil, err
		}
		return s, nil
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "schedlens-nats-")
		if err != nil {
			return nil, fmt.Errorf("nats store dir: %w", err)
		}
		o.Dir, s.tempDir = dir, dir
	}
	if o.Port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a port for nats: %w", err)
		}
		o.Port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	s.opts = server.Options{Host: "127.0.0.1", Port: o.Port, JetStream: true, StoreDir: o.Dir, NoLog: true, NoSigs: true}
	if o.Configure != nil {
		o.Configure(&s.opts)
	}
	if err := s.start(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// URL is the client URL of the server.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.opts.Port) }

// Stop shuts the server down; its streams stay on disk for Restart.
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Restart starts the server again on the same port with the same storage.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// Close stops the server and removes the temporary storage Start made.
func (s *Server) Close() {
	s.Stop()
	if s.tempDir != "" {
		os.RemoveAll(s.tempDir)
	}
}

// Port is the port the server listens on (127.0.0.1).
func (s *Server) Port() int { return s.opts.Port }

// fileOptions reads the configuration file of Options.ConfigFile.
func (s *Server) fileOptions() (*server.Options, error) {
	o, err := server.ProcessConfigFile(s.conf)
	if err != nil {
		return nil, fmt.Errorf("read nats-server configuration: %w", err)
	}
	o.NoLog, o.NoSigs = true, true
	return o, nil
}

func (s *Server) start() error {
	opts := s.opts
	if s.conf != "" {
		o, err := s.fileOptions()
		if err != nil {
			return err
		}
		opts = *o
	}
	srv, err := server.NewServer(&opts)
	if err != nil {
		return fmt.Errorf("start nats-server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return errors.New("in-process nats-server not ready after 10s on " + s.URL())
	}
	s.srv = srv
	return nil
}
