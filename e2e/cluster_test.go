package e2e_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/correlator"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/publisher"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/testenv"
)

// The SCHEDLENS stream on a three-node JetStream cluster with three replicas: the collector's
// publisher sends a stream of events while the node leading the stream is stopped and, later,
// started again; a correlator consumes throughout. The stream ends up holding every event
// once, the restarted node catches up, and Postgres stores every event once, with the
// timelines align derives from them.
func TestJetStreamClusterLosesAndDoublesNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logger := slog.New(slog.DiscardHandler)
	nodes := natstest.StartCluster(t, 3)
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.URL())
	}
	connect := func(name string, opts ...jetstream.JetStreamOpt) jetstream.JetStream {
		nc, err := bus.Connect(strings.Join(urls, ","), name, logger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	// The publisher's JetStream as the collector makes it: a publish in flight when its node
	// stops is timed out and sent again, not waited for forever.
	pubJS, corrJS := connect("collector", publisher.JetStreamOptions()...), connect("correlator")
	var stream jetstream.Stream
	waitFor(t, "the R3 stream", func() bool {
		s, err := bus.EnsureStream(ctx, pubJS, bus.StreamConfig{Replicas: 3})
		stream = s
		return err == nil
	})

	db, err := store.Open(ctx, pgtest.URL(t), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	cfg := correlator.DefaultConfig()
	cfg.BatchSize, cfg.BatchWait, cfg.AckWait, cfg.RetryDelay = 100, 50*time.Millisecond, 3*time.Second, 200*time.Millisecond
	c, err := correlator.New(corrJS, db, cfg, logger, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	pcfg := publisher.DefaultConfig()
	pcfg.RetryMin, pcfg.RetryMax = 50*time.Millisecond, 500*time.Millisecond
	pub := publisher.New(pubJS, nil, pcfg, logger, prometheus.NewRegistry())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() { _ = c.Run(runCtx); done <- struct{}{} }()
	go func() { _ = pub.Run(runCtx); done <- struct{}{} }()
	t.Cleanup(func() { stop(); <-done; <-done })

	gcfg := eventgen.Default()
	gcfg.Runs = 8
	envs := eventgen.Generate(gcfg)
	msgs := func() uint64 {
		info, err := stream.Info(ctx)
		if err != nil {
			return 0
		}
		return info.State.Msgs
	}
	offer := func(part []*events.Envelope) {
		for _, env := range part {
			if !pub.Offer(env) {
				t.Fatalf("publisher buffer full at %s", env.ID)
			}
			time.Sleep(100 * time.Microsecond) // a stream, not one burst
		}
	}
	third := len(envs) / 3
	offer(envs[:third])
	waitFor(t, "a third of the events in the stream", func() bool { return msgs() >= uint64(third/2) })

	info, err := stream.Info(ctx)
	if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("stream cluster info: %+v, %v", info, err)
	}
	var down *natstest.Server
	for _, n := range nodes {
		if n.Name() == info.Cluster.Leader {
			down = n
		}
	}
	if down == nil {
		t.Fatalf("stream leader %q is none of the nodes", info.Cluster.Leader)
	}
	down.Stop() // mid-stream: the publisher has events in flight
	offer(envs[third : 2*third])
	if !testenv.Until(90*time.Second, 100*time.Millisecond, func() bool { return msgs() >= uint64(2*third) }) {
		info, err := stream.Info(ctx)
		t.Fatalf("timed out waiting for two thirds of the events (%d) in the stream without the old leader %s: %d messages, publisher buffered %d; stream info %+v (cluster %+v), %v",
			2*third, down.Name(), msgs(), pub.Buffered(), info, clusterOf(info), err)
	}
	down.Restart()
	offer(envs[2*third:])

	waitFor(t, "every event stored", func() bool {
		n, _, err := db.Stored(ctx)
		return err == nil && n >= int64(len(envs))
	})
	waitFor(t, "the restarted node current again", func() bool {
		info, err := stream.Info(ctx)
		if err != nil || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			return false
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Offline {
				return false
			}
		}
		return true
	})
	if got := msgs(); got != uint64(len(envs)) {
		t.Errorf("stream holds %d messages, want %d: an event was lost or doubled", got, len(envs))
	}
	stored, dead, err := db.Stored(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stored != int64(len(envs)) || dead != 0 {
		t.Errorf("store holds %d events and %d dead letters, want %d and 0", stored, dead, len(envs))
	}
	uids := map[string]bool{}
	for _, env := range envs {
		if uid := env.PodUID(); uid != "" && !uids[uid] {
			uids[uid] = true
			want, _ := align.Build(uid, envs, events.DefaultLabelKeys)
			got, err := db.Timeline(ctx, uid)
			if err != nil {
				t.Fatalf("timeline %s: %v", uid, err)
			}
			want.Events, got.Events = nil, nil
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("pod %s (-align +stored):\n%s", uid, diff)
			}
		}
	}
}

func clusterOf(info *jetstream.StreamInfo) any {
	if info == nil || info.Cluster == nil {
		return nil
	}
	return *info.Cluster
}
