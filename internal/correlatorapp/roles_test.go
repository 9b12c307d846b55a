package correlatorapp_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/correlatorapp"
	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/testenv"
)

// The pipeline runs on the least-privilege NATS users (docs/security.md): the correlator as
// user correlator creates the stream and its consumer and stores what a publisher as user
// collector sends — each with its own inbox prefix (bus.Credentials.InboxPrefix, set by the
// apps), the collector finding the stream provisioned (it may only read its configuration).
func TestPipelineOnLeastPrivilegeUsers(t *testing.T) {
	consumer := correlator.DefaultConfig().Consumer
	nats := natstest.StartWithRoles(t, consumer)
	dbURL := pgtest.URL(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	up := make(chan string, 1)
	go func() {
		done <- correlatorapp.Run(ctx, correlatorapp.Options{NATSURL: nats.UserURL(natstest.RoleCorrelator), DatabaseURL: dbURL,
			MetricsAddr: "127.0.0.1:0", Bound: func(a string) { up <- a }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("correlator: %v", err)
		}
	}()
	var metrics string
	select {
	case metrics = <-up:
	case err := <-done:
		t.Fatalf("the correlator as user correlator did not start: %v", err)
	}
	// The listener answers before the database and the stream are there: wait until ready.
	if !testenv.Until(30*time.Second, 50*time.Millisecond, func() bool {
		resp, err := http.Get("http://" + metrics + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatal("the correlator as user correlator not ready within 30s")
	}

	c := bus.Credentials{InboxPrefix: bus.CollectorInboxPrefix}
	opts, err := c.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := bus.Connect(nats.UserURL(natstest.RoleCollector), "collector", slog.New(slog.DiscardHandler), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if _, err := bus.EnsureStream(sctx, js, bus.StreamConfig{}); err != nil {
		t.Fatalf("the collector user finding the provisioned stream: %v", err)
	}
	sample, err := os.ReadFile("../../testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	res, err := bus.Replay(sctx, js, bytes.NewReader(sample), "", &bytes.Buffer{})
	if err != nil || res.Published == 0 || res.Failed > 0 {
		t.Fatalf("publish as user collector: %+v %v", res, err)
	}
	db, err := store.Open(ctx, dbURL, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored int64
	if !testenv.Until(30*time.Second, 100*time.Millisecond, func() bool {
		st, err := db.Stats(ctx)
		stored = st.EventsTotal
		return err == nil && st.EventsTotal == int64(res.Published)
	}) {
		t.Fatalf("stored %d of %d events", stored, res.Published)
	}
}
