package bus_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natstest"
)

func jetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	return natstest.Start(t).Stream()
}

// The window publishes everything, counts copies the stream already held, tells each outcome
// with its tag, and stops when told to.
func TestWindow(t *testing.T) {
	js := jetStream(t)
	ctx := context.Background()
	envs := eventgen.Generate(eventgen.Default())
	if res, err := bus.PublishAll(ctx, js, envs); err != nil || res.Published != len(envs) || res.Duplicates != 0 {
		t.Fatalf("first publish: %+v, %v", res, err)
	}
	seen := map[int]bool{}
	w := bus.NewWindow(js, 7, func(tag int, ack *jetstream.PubAck, err error) error {
		if err != nil || !ack.Duplicate {
			return fmt.Errorf("tag %d: %v %+v", tag, err, ack)
		}
		seen[tag] = true
		return nil
	})
	for i, env := range envs[:50] {
		if err := w.Publish(ctx, env, 100+i); err != nil {
			t.Fatal(err)
		}
	}
	res, err := w.Wait(ctx)
	if err != nil || res.Published != 50 || res.Duplicates != 50 || len(seen) != 50 || !seen[100] || !seen[149] {
		t.Errorf("republish through a window of 7: %+v, %v, %d tags", res, err, len(seen))
	}
	stop := errors.New("enough")
	w = bus.NewWindow(js, 2, func(int, *jetstream.PubAck, error) error { return stop })
	var perr error
	for _, env := range envs[:10] {
		if perr = w.Publish(ctx, env, 0); perr != nil {
			break
		}
	}
	if _, err := w.Wait(ctx); !errors.Is(err, stop) || !errors.Is(perr, stop) {
		t.Errorf("a stopping AckFunc: publish %v, wait %v; want %v", perr, err, stop)
	}
}

// Replay publishes the valid lines, names the invalid ones by number, and gives a cluster to
// envelopes that name none.
func TestReplay(t *testing.T) {
	js := jetStream(t)
	envs := eventgen.Generate(eventgen.Default())[:3]
	var in bytes.Buffer
	for i, env := range envs {
		b, err := events.Encode(env)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			b = bytes.Replace(b, []byte(`"cluster":"lab",`), nil, 1)
		}
		in.Write(b)
		in.WriteString("\n")
	}
	in.WriteString("\n{\"v\":1}\n")
	var errw bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := bus.Replay(ctx, js, &in, "lab", &errw)
	if err != nil || res.Published != 3 || res.Invalid != 1 || res.Failed != 0 {
		t.Fatalf("replay: %+v, %v (%s)", res, err, errw.String())
	}
	if !strings.HasPrefix(errw.String(), "line 5: invalid envelope: id: missing") {
		t.Errorf("replay errors %q; want line 5 named", errw.String())
	}
}
