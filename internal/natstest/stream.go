package natstest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schedlens/schedlens/internal/bus"
)

// Connect dials the server at url (one the test started, or one it was given, as e2e's) and
// opens JetStream on the connection. The caller closes nc: a test that looks at the stream
// again and again connects once a look.
func Connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect to nats: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	return nc, js
}

// Stream connects to the server (closed when the test ends) and ensures schedlens' stream with
// its default configuration: what most tests of the bus, the correlator and the importer need.
func (s *Server) Stream() jetstream.JetStream {
	s.t.Helper()
	nc, js := Connect(s.t, s.URL())
	s.t.Cleanup(nc.Close)
	if _, err := bus.EnsureStream(context.Background(), js, bus.StreamConfig{}); err != nil {
		s.t.Fatal(err)
	}
	return js
}

// StreamInfo is the state of schedlens' stream on the server at url, with opts
// (jetstream.WithSubjectFilter for the messages per subject), in a connection of its own.
func StreamInfo(t testing.TB, url string, opts ...jetstream.StreamInfoOpt) *jetstream.StreamInfo {
	t.Helper()
	nc, js := Connect(t, url)
	defer nc.Close()
	return Info(t, js, opts...)
}

// Info is the state of schedlens' stream through js, with opts.
func Info(t testing.TB, js jetstream.JetStream, opts ...jetstream.StreamInfoOpt) *jetstream.StreamInfo {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, bus.StreamName)
	if err != nil {
		t.Fatalf("stream %s: %v", bus.StreamName, err)
	}
	info, err := s.Info(ctx, opts...)
	if err != nil {
		t.Fatalf("stream %s info: %v", bus.StreamName, err)
	}
	return info
}
