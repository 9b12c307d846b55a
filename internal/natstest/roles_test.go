package natstest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/natstest"
)

const consumer = "correlator"

// client is a connection of one role and the asynchronous errors the server sent it (a
// permissions violation arrives that way).
type client struct {
	nc *nats.Conn
	js jetstream.JetStream

	mu   sync.Mutex
	errs []string
}

func connect(t *testing.T, srv *natstest.Server, role string) *client {
	t.Helper()
	c := &client{}
	opts := []nats.Option{nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		c.mu.Lock()
		c.errs = append(c.errs, err.Error())
		c.mu.Unlock()
	})}
	if p := natstest.InboxPrefix(role); p != "" {
		opts = append(opts, nats.CustomInboxPrefix(p))
	}
	nc, err := nats.Connect(srv.UserURL(role), opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", role, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c.nc, c.js = nc, js
	return c
}

// violation waits for the server's permissions violation on subject, as the server reports it.
func (c *client) violation(t *testing.T, what, subject string) {
	t.Helper()
	want := strings.ToLower("permissions violation for " + what + " to \"" + subject + "\"")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := c.nc.FlushTimeout(time.Second); err != nil && !errors.Is(err, nats.ErrTimeout) {
			t.Fatalf("flush: %v", err)
		}
		c.mu.Lock()
		for _, e := range c.errs {
			if strings.Contains(strings.ToLower(e), want) {
				c.mu.Unlock()
				return
			}
		}
		c.mu.Unlock()
	}
	t.Errorf("no permissions violation for %s %s; errors: %q", what, subject, c.errs)
}

// refused checks that request fails and that the server reports c's violation of publishing
// to subject; what says what was tried. A refused request gets no answer: it has half a second.
func (c *client) refused(t *testing.T, what, subject string, request func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	err := request(ctx)
	cancel()
	if err == nil {
		t.Errorf("%s succeeded", what)
	}
	c.violation(t, "publish", subject)
}

// The collector may only publish envelopes (and read the stream's configuration); the
// correlator may only keep the stream and consume through its durable consumer. Each is
// refused the other's rights, and nobody gets in without a password.
func TestRolesAreLeastPrivilege(t *testing.T) {
	srv := natstest.StartWithRoles(t, consumer)
	ctx := context.Background()
	correlator := connect(t, srv, natstest.RoleCorrelator)
	collector := connect(t, srv, natstest.RoleCollector)
	admin := connect(t, srv, natstest.RoleAdmin)

	// What each may do: the correlator ensures the stream and its consumer, the collector
	// publishes and is acknowledged, the correlator pulls and acknowledges.
	if _, err := bus.EnsureStream(ctx, correlator.js, bus.StreamConfig{}); err != nil {
		t.Fatalf("correlator: ensure stream: %v", err)
	}
	cons, err := correlator.js.CreateOrUpdateConsumer(ctx, bus.StreamName, jetstream.ConsumerConfig{Durable: consumer, AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatalf("correlator: create its consumer: %v", err)
	}
	if _, err := collector.js.Stream(ctx, bus.StreamName); err != nil {
		t.Errorf("collector: read the stream's configuration: %v", err)
	}
	envs := eventgen.Generate(eventgen.Default())[:20]
	if res, err := bus.PublishAll(ctx, collector.js, envs); err != nil || res.Published != len(envs) {
		t.Fatalf("collector: publish: %+v, %v", res, err)
	}
	batch, err := cons.Fetch(len(envs), jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatalf("correlator: fetch: %v", err)
	}
	n := 0
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatalf("correlator: ack: %v", err)
		}
		n++
	}
	if n != len(envs) {
		t.Fatalf("correlator fetched %d of %d", n, len(envs))
	}
	if info, err := cons.Info(ctx); err != nil || info.NumAckPending != 0 || info.NumPending != 0 {
		t.Errorf("correlator: consumer info %+v, %v", info, err)
	}

	// The correlator publishing an envelope: refused, nothing stored.
	subject := "schedlens.v1.lab.pod_status"
	correlator.refused(t, "correlator: publishing an envelope", subject, func(ctx context.Context) error {
		_, err := correlator.js.Publish(ctx, subject, envs[0].Raw, jetstream.WithMsgID("forged"))
		return err
	})

	// The correlator creating another consumer, deleting or purging the stream, reading the
	// collector's replies: refused.
	correlator.refused(t, "correlator: creating another consumer", "$JS.API.CONSUMER.CREATE.SCHEDLENS.evil", func(ctx context.Context) error {
		_, err := correlator.js.CreateOrUpdateConsumer(ctx, bus.StreamName, jetstream.ConsumerConfig{Durable: "evil", AckPolicy: jetstream.AckNonePolicy})
		return err
	})
	correlator.refused(t, "correlator: deleting the stream", "$JS.API.STREAM.DELETE.SCHEDLENS", func(ctx context.Context) error {
		return correlator.js.DeleteStream(ctx, bus.StreamName)
	})
	if _, err := correlator.nc.Subscribe(bus.CollectorInboxPrefix+".>", func(*nats.Msg) {}); err == nil {
		correlator.violation(t, "subscription", bus.CollectorInboxPrefix+".>")
	}

	// The collector consuming: it can neither create a consumer, nor look up or pull from the
	// correlator's, nor subscribe to the envelopes or to the correlator's inbox.
	collector.refused(t, "collector: creating a consumer", "$JS.API.CONSUMER.CREATE.SCHEDLENS.reader", func(ctx context.Context) error {
		_, err := collector.js.CreateOrUpdateConsumer(ctx, bus.StreamName, jetstream.ConsumerConfig{Durable: "reader", AckPolicy: jetstream.AckNonePolicy})
		return err
	})
	collector.refused(t, "collector: looking up the correlator's consumer", "$JS.API.CONSUMER.INFO.SCHEDLENS.correlator", func(ctx context.Context) error {
		_, err := collector.js.Consumer(ctx, bus.StreamName, consumer)
		return err
	})
	if _, err := collector.nc.Request("$JS.API.CONSUMER.MSG.NEXT.SCHEDLENS.correlator", []byte(`{"batch":1,"no_wait":true}`), 500*time.Millisecond); err == nil {
		t.Error("collector: pulling from the correlator's consumer was answered")
	}
	collector.violation(t, "publish", "$JS.API.CONSUMER.MSG.NEXT.SCHEDLENS.correlator")
	collector.refused(t, "collector: changing the stream", "$JS.API.STREAM.UPDATE.SCHEDLENS", func(ctx context.Context) error {
		_, err := collector.js.UpdateStream(ctx, jetstream.StreamConfig{Name: bus.StreamName, Subjects: []string{"schedlens.v1.>"}, MaxAge: time.Second})
		return err
	})
	for _, subj := range []string{"schedlens.v1.>", bus.CorrelatorInboxPrefix + ".>", "_INBOX.>"} {
		if _, err := collector.nc.Subscribe(subj, func(*nats.Msg) {}); err == nil {
			collector.violation(t, "subscription", subj)
		}
	}

	// Nothing forged was stored, and the consumers are the correlator's alone.
	stream, err := admin.js.Stream(ctx, bus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil || info.State.Msgs != uint64(len(envs)) || info.State.Consumers != 1 {
		t.Errorf("stream holds %d messages and %d consumers (%v); want %d and 1", info.State.Msgs, info.State.Consumers, err, len(envs))
	}

	// Without the right password, or without one, nobody connects.
	for _, u := range []string{strings.Replace(srv.UserURL(natstest.RoleCollector), srv.Password(natstest.RoleCollector), "wrong", 1), srv.URL()} {
		if nc, err := nats.Connect(u, nats.MaxReconnects(0)); err == nil {
			nc.Close()
			t.Errorf("connected to %s", strings.Replace(u, "wrong", "…", 1))
		} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Errorf("connect without credentials: %v, want an authorization error", err)
		}
	}
}

// A server with roles restarts with the same users and stream.
func TestRolesSurviveARestart(t *testing.T) {
	srv := natstest.StartWithRoles(t, consumer)
	correlator := connect(t, srv, natstest.RoleCorrelator)
	if _, err := bus.EnsureStream(context.Background(), correlator.js, bus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	collector := connect(t, srv, natstest.RoleCollector)
	if res, err := bus.PublishAll(context.Background(), collector.js, eventgen.Generate(eventgen.Default())[:3]); err != nil || res.Published != 3 {
		t.Errorf("publish after a restart: %+v, %v", res, err)
	}
}

// docs/security.md shows the configuration StartWithRoles runs.
func TestSecurityDocShowsTheRoles(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	conf := natstest.RolesConfig(consumer, map[string]string{natstest.RoleAdmin: "…", natstest.RoleCollector: "…", natstest.RoleCorrelator: "…"})
	if !strings.Contains(string(doc), "```\n"+conf+"```") {
		t.Errorf("docs/security.md does not show the configuration of the roles:\n%s", conf)
	}
}
