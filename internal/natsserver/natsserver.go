// Package natsserver runs a real nats-server with JetStream inside the process, on a loopback
// port: for tests (through natstest), the bench and the lab, which need a JetStream of their
// own without one running on the machine.
package natsserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
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

// StartCluster runs n servers forming one JetStream cluster (named "schedlens", servers
// n1…nn) on loopback, each with its storage in a directory of its own under dir (a temporary
// one when empty, removed when the last server is closed). Every server keeps its client and
// cluster ports across Restart, so a stopped node rejoins as itself. It returns once the
// cluster has elected its JetStream meta leader.
func StartCluster(n int, dir string) ([]*Server, error) {
	if n < 1 {
		return nil, fmt.Errorf("a cluster needs at least one server, got %d", n)
	}
	temp := ""
	if dir == "" {
		d, err := os.MkdirTemp("", "schedlens-nats-cluster-")
		if err != nil {
			return nil, fmt.Errorf("nats store dir: %w", err)
		}
		dir, temp = d, d
	}
	// Hold every port until all are picked, so no two servers get the same one.
	ports := make([]int, 2*n) // client ports, then cluster ports
	var listeners []net.Listener
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return nil, fmt.Errorf("pick a port for nats: %w", err)
		}
		listeners = append(listeners, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range listeners {
		l.Close()
	}
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[n+i]))
	}
	servers := make([]*Server, n)
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		servers[i] = &Server{opts: server.Options{
			ServerName: name, Host: "127.0.0.1", Port: ports[i], JetStream: true,
			StoreDir: filepath.Join(dir, name), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "schedlens", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		}}
	}
	servers[n-1].tempDir = temp // the last one closed removes the whole directory
	closeAll := func() {
		for _, s := range servers {
			s.Close()
		}
	}
	for _, s := range servers {
		if err := s.start(); err != nil {
			closeAll()
			return nil, err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for !metaLeader(servers) {
		if time.Now().After(deadline) {
			closeAll()
			return nil, errors.New("in-process JetStream cluster elected no meta leader in 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return servers, nil
}

// metaLeader reports whether one of servers leads the JetStream cluster's metadata and every
// running one knows the cluster is current.
func metaLeader(servers []*Server) bool {
	leader := false
	for _, s := range servers {
		if s.srv == nil {
			continue
		}
		if !s.srv.JetStreamIsCurrent() {
			return false
		}
		leader = leader || s.srv.JetStreamIsLeader()
	}
	return leader
}

// Name is the server's name (n1… in a cluster; generated otherwise).
func (s *Server) Name() string {
	if s.srv != nil {
		return s.srv.Name()
	}
	return s.opts.ServerName
}
