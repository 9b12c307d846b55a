package natstest

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schedlens/schedlens/internal/bus"
)

// Stream connects to the server (closed when the test ends) and ensures schedlens' stream with
// its default configuration: what most tests of the bus, the correlator and the importer need.
func (s *Server) Stream() jetstream.JetStream {
	s.t.Helper()
	nc, err := nats.Connect(s.URL())
	if err != nil {
		s.t.Fatalf("connect to nats: %v", err)
	}
	s.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := bus.EnsureStream(context.Background(), js, bus.StreamConfig{}); err != nil {
		s.t.Fatal(err)
	}
	return js
}
