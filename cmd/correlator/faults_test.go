package main

// Real faults against the real binary: the correlator built with `go build`, run as a process
// against NATS and Postgres, killed with SIGKILL mid-stream, left running while its Postgres (a
// private instance of the test's own) stops and starts, and started while Postgres is down.
// Each test ends with every event stored exactly once and every projection equal to a clean run
// of the same events into another database.

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/testenv"
)

// command is this package's binary, built once per test binary.
var command = testenv.NewBinaries(".")

func TestMain(m *testing.M) {
	code := m.Run()
	command.Remove()
	os.Exit(code)
}

// correlatorBinary is the path of the built correlator.
func correlatorBinary(t *testing.T) string { return filepath.Join(command.Dir(t), "correlator") }

// proc is one correlator process.
type proc struct {
	cmd  *exec.Cmd
	log  *testenv.LogBuffer
	done chan struct{} // closed once the process has exited
	err  error         // Wait's answer, once done
}

// faultRig is what the correlator processes of one test share.
type faultRig struct {
	t           *testing.T
	bin         string
	nats        *natstest.Server
	js          jetstream.JetStream
	dbURL       string
	metricsAddr string
	logs        []*testenv.LogBuffer
}

func newFaultRig(t *testing.T, dbURL string) *faultRig {
	t.Helper()
	r := &faultRig{t: t, bin: correlatorBinary(t), nats: natstest.Start(t), dbURL: dbURL, metricsAddr: testenv.FreeAddr(t)}
	r.js = r.nats.Stream()
	t.Cleanup(func() {
		if t.Failed() {
			for i, l := range r.logs {
				t.Logf("correlator process %d log:\n%s", i+1, l.String())
			}
		}
	})
	return r
}

// start runs a correlator process: small batches, quick redelivery, so that a test's few
// thousand events take many batches and an unacknowledged one comes back within a second.
func (r *faultRig) start() *proc {
	r.t.Helper()
	log := &testenv.LogBuffer{}
	r.logs = append(r.logs, log)
	cmd := exec.Command(r.bin, "serve",
		"-nats-url", r.nats.URL(), "-database-url", r.dbURL, "-metrics-addr", r.metricsAddr,
		"-batch-size", "25", "-batch-wait", "20ms", "-ack-wait", "1s", "-retry-delay", "200ms", "-log-level", "info")
	cmd.Env = append(os.Environ(), "SCHEDLENS_DATABASE_URL=", "SCHEDLENS_NATS_URL=")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start correlator: %v", err)
	}
	p := &proc{cmd: cmd, log: log, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	r.t.Cleanup(func() { p.kill() })
	return p
}

// kill sends SIGKILL: no deferred function, no flush, no ack.
func (p *proc) kill() {
	if done, _ := p.exited(); done {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("correlator exited with %v on SIGTERM", p.err)
		}
	case <-time.After(30 * time.Second):
		t.Error("correlator did not stop within 30s of SIGTERM")
		p.kill()
	}
}

// exited reports whether the process has exited (and with what).
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// publish sends the envelopes as a collector would (Nats-Msg-Id = id).
func (r *faultRig) publish(envs []*events.Envelope) {
	r.t.Helper()
	for _, env := range envs {
		if _, err := r.js.Publish(context.Background(), events.SubjectOf(env), env.Raw, jetstream.WithMsgID(env.ID)); err != nil {
			r.t.Fatalf("publish %s: %v", env.ID, err)
		}
	}
}

// drained waits until the correlator's consumer has delivered and had acknowledged everything
// the stream holds, while p keeps running.
func (r *faultRig) drained(p *proc, within time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if done, err := p.exited(); done {
			r.t.Fatalf("correlator exited (%v) before the stream was drained", err)
		}
		s, err := r.js.Stream(context.Background(), bus.StreamName)
		if err == nil {
			c, cerr := r.js.Consumer(context.Background(), bus.StreamName, "correlator")
			if cerr == nil {
				ci, ierr := c.Info(context.Background())
				si := s.CachedInfo()
				if ierr == nil && ci.NumPending == 0 && ci.NumAckPending == 0 && ci.AckFloor.Stream >= si.State.LastSeq {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("the correlator did not drain the stream within %s", within)
}

// readyz answers GET /readyz's status code (0 when nothing listens).
func (r *faultRig) readyz() int {
	c := http.Client{Timeout: 2 * time.Second}
	res, err := c.Get("http://" + r.metricsAddr + "/readyz")
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// generated is the generated experiment the fault tests publish: the default one with more
// probe requests per pod, so a run takes many batches.
func generated() []*events.Envelope {
	cfg := eventgen.Default()
	cfg.RequestsPerPod = 40
	return eventgen.Generate(cfg)
}

// storedEvents counts the events the database at url holds (0 while it cannot answer).
func storedEvents(t *testing.T, db *store.DB) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := db.Stats(ctx)
	if err != nil {
		return -1
	}
	return s.EventsTotal
}

func openStore(t *testing.T, url string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// checkAgainstCleanRun stores envs into a database of their own in one clean pass and compares:
// the same events (each exactly once: ids are the key, the count is the number published), the
// same counts, the same timeline for every pod.
func checkAgainstCleanRun(t *testing.T, got *store.DB, envs []*events.Envelope) {
	t.Helper()
	ctx := context.Background()
	clean := openStore(t, pgtest.URL(t))
	for i := 0; i < len(envs); i += 100 {
		if _, err := clean.Append(ctx, envs[i:min(i+100, len(envs))], nil); err != nil {
			t.Fatalf("clean run: %v", err)
		}
	}
	gs, err := got.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := clean.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gs.EventsTotal != int64(len(envs)) || gs.DeadLettersTotal != 0 {
		t.Errorf("%d events and %d dead letters stored, want each of the %d published exactly once and none dead", gs.EventsTotal, gs.DeadLettersTotal, len(envs))
	}
	if diff := cmp.Diff(cs, gs); diff != "" {
		t.Errorf("counts differ from a clean run (-clean +faulted):\n%s", diff)
	}
	uids := map[string]bool{}
	for _, env := range envs {
		if uid := env.PodUID(); uid != "" {
			uids[uid] = true
		}
	}
	for uid := range uids {
		want, err := clean.Timeline(ctx, uid)
		if err != nil {
			t.Fatalf("clean timeline %s: %v", uid, err)
		}
		have, err := got.Timeline(ctx, uid)
		if err != nil {
			t.Fatalf("timeline %s: %v", uid, err)
		}
		if diff := cmp.Diff(normalize(want), normalize(have)); diff != "" {
			t.Errorf("pod %s: timeline differs from a clean run (-clean +faulted):\n%s", uid, diff)
		}
	}
}

// normalize leaves out the event payloads' jsonb spelling (key order, spacing), not their
// content: ids, kinds and times stay compared.
func normalize(tl align.Timeline) align.Timeline {
	out := tl
	out.Events = nil
	for _, e := range tl.Events {
		e.Data = nil
		out.Events = append(out.Events, e)
	}
	return out
}

// kill -9 of a correlator process three times while it stores the stream: each restart finds
// what the killed one committed (and redelivers what it had not acknowledged); nothing is lost
// or stored twice.
func TestKill9MidStreamLosesAndDoublesNothing(t *testing.T) {
	envs := generated()
	dbURL := pgtest.URL(t)
	r := newFaultRig(t, dbURL)
	db := openStore(t, dbURL)
	r.publish(envs)

	total := int64(len(envs))
	for kill := 1; kill <= 3; kill++ {
		before := storedEvents(t, db)
		p := r.start()
		// Kill once this process has stored a few batches of its own, well before the end.
		target := before + max(total/8, 60)
		deadline := time.Now().Add(60 * time.Second)
		for storedEvents(t, db) < target {
			if done, err := p.exited(); done {
				t.Fatalf("correlator %d exited on its own (%v)", kill, err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("correlator %d stored no more than %d of %d events within 60s", kill, storedEvents(t, db), total)
			}
			time.Sleep(2 * time.Millisecond)
		}
		// A few milliseconds later, so the kill lands anywhere in the next batch: fetched,
		// being stored, committed but not acknowledged.
		time.Sleep(time.Duration(kill*7) * time.Millisecond)
		p.kill()
		at := storedEvents(t, db)
		t.Logf("kill -9 #%d with %d of %d events stored", kill, at, total)
		if at >= total {
			t.Fatalf("kill #%d came after the whole stream was stored (%d events): not mid-stream", kill, at)
		}
	}
	p := r.start()
	r.drained(p, 90*time.Second)
	p.stop(t)
	checkAgainstCleanRun(t, db, envs)
}

// Postgres stopped and started again under a running correlator (a private server, so nothing
// else is disturbed): the batches that fail meanwhile are redelivered, /readyz says 503 while
// the database is away, and the correlator keeps running and catches up.
func TestPostgresRestartUnderRunningCorrelator(t *testing.T) {
	envs := generated()
	pg := pgtest.StartPrivate(t)
	r := newFaultRig(t, pg.URL())
	p := r.start()
	half := len(envs) / 2
	r.publish(envs[:half])
	r.drained(p, 90*time.Second)
	if code := r.readyz(); code != http.StatusOK {
		t.Fatalf("/readyz %d with the database up, want 200", code)
	}

	pg.Stop()
	r.publish(envs[half:])
	waitLog(t, p, "storing batch failed", 30*time.Second)
	if code := r.readyz(); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz %d with the database down, want 503", code)
	}
	time.Sleep(time.Second) // a few more failed batches
	if done, err := p.exited(); done {
		t.Fatalf("correlator exited while the database was down: %v", err)
	}
	pg.Start()
	r.drained(p, 90*time.Second)
	waitReady(t, r, 10*time.Second)
	p.stop(t)
	checkAgainstCleanRun(t, openStore(t, pg.URL()), envs)
}

// A correlator started while Postgres is down waits — saying so in its log, /readyz 503 — and
// once the database comes up it migrates and stores the whole stream.
func TestCorrelatorStartedWhilePostgresIsDownWaits(t *testing.T) {
	envs := generated()
	pg := pgtest.NewPrivate(t) // initdb'd, not started
	r := newFaultRig(t, pg.URL())
	r.publish(envs)
	p := r.start()
	waitLog(t, p, "waiting for the database", 30*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for r.readyz() != http.StatusServiceUnavailable {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz %d while the database is down, want 503", r.readyz())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // more than one attempt
	if done, err := p.exited(); done {
		t.Fatalf("correlator exited instead of waiting for the database: %v\n%s", err, p.log.String())
	}
	if n := strings.Count(p.log.String(), "waiting for the database"); n < 2 {
		t.Errorf("%d attempts logged in 1s+, want at least 2 (retrying with backoff)", n)
	}
	pg.Start()
	r.drained(p, 90*time.Second)
	waitReady(t, r, 10*time.Second)
	if !strings.Contains(p.log.String(), "database reachable") {
		t.Error("the correlator did not log that the database became reachable")
	}
	p.stop(t)
	checkAgainstCleanRun(t, openStore(t, pg.URL()), envs)
}

func waitLog(t *testing.T, p *proc, text string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(p.log.String(), text) {
		if done, err := p.exited(); done {
			t.Fatalf("correlator exited (%v) before logging %q", err, text)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the correlator did not log %q within %s", text, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitReady(t *testing.T, r *faultRig, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for r.readyz() != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz %d after recovery, want 200", r.readyz())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
