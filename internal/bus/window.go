package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schedlens/schedlens/internal/events"
)

// DefaultWindow is how many envelopes a Window keeps unacknowledged at once.
const DefaultWindow = 1024

// PublishResult counts what JetStream acknowledged.
type PublishResult struct {
	Published  int // acknowledged
	Duplicates int // of those, ids the stream already held
	Failed     int // not acknowledged
}

// AckFunc hears of each envelope's outcome: its tag (what the caller published it with: a line
// number, an index), the acknowledgement or the error. A non-nil return stops the Window: the
// next Publish or Wait returns it.
type AckFunc func(tag int, ack *jetstream.PubAck, err error) error

// Window publishes envelopes asynchronously with at most size of them unacknowledged: the one
// windowed publisher of replay, import, ingest and the bench. It is not safe for concurrent use.
type Window struct {
	js      jetstream.JetStream
	size    int
	onAck   AckFunc
	pending []inflight
	res     PublishResult
	stop    error
	first   error
}

type inflight struct {
	tag int
	fut jetstream.PubAckFuture
}

// NewWindow returns a Window of size (DefaultWindow when ≤ 0); onAck may be nil.
func NewWindow(js jetstream.JetStream, size int, onAck AckFunc) *Window {
	if size <= 0 {
		size = DefaultWindow
	}
	return &Window{js: js, size: size, onAck: onAck}
}

// Publish sends env, first waiting for the oldest acknowledgement when the window is full. An
// envelope JetStream refuses at once is counted Failed and reported to onAck, not returned.
func (w *Window) Publish(ctx context.Context, env *events.Envelope, tag int) error {
	if w.stop != nil {
		return w.stop
	}
	for len(w.pending) >= w.size {
		if err := w.settleOldest(ctx); err != nil {
			return err
		}
	}
	fut, err := PublishAsync(w.js, env)
	if err != nil {
		return w.outcome(tag, nil, err)
	}
	w.pending = append(w.pending, inflight{tag: tag, fut: fut})
	return nil
}

// Wait waits for every acknowledgement and returns the counts; the error is the first
// envelope's that was not acknowledged (with the count), what onAck stopped on, or ctx's.
func (w *Window) Wait(ctx context.Context) (PublishResult, error) {
	for len(w.pending) > 0 && w.stop == nil {
		if err := w.settleOldest(ctx); err != nil {
			return w.res, err
		}
	}
	switch {
	case w.stop != nil:
		return w.res, w.stop
	case w.first != nil:
		return w.res, fmt.Errorf("%d of %d envelopes not acknowledged: %w", w.res.Failed, w.res.Published+w.res.Failed, w.first)
	}
	return w.res, nil
}

func (w *Window) settleOldest(ctx context.Context) error {
	p := w.pending[0]
	w.pending = w.pending[1:]
	select {
	case ack := <-p.fut.Ok():
		return w.outcome(p.tag, ack, nil)
	case err := <-p.fut.Err():
		return w.outcome(p.tag, nil, err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Window) outcome(tag int, ack *jetstream.PubAck, err error) error {
	if err != nil {
		w.res.Failed++
		if w.first == nil {
			w.first = err
		}
	} else {
		w.res.Published++
		if ack.Duplicate {
			w.res.Duplicates++
		}
	}
	if w.onAck != nil {
		w.stop = w.onAck(tag, ack, err)
	}
	return w.stop
}

// PublishAll publishes envs through a Window and waits for every acknowledgement. It returns
// an error when any envelope was not acknowledged (their count is in Failed).
func PublishAll(ctx context.Context, js jetstream.JetStream, envs []*events.Envelope) (PublishResult, error) {
	w := NewWindow(js, DefaultWindow, nil)
	for i, env := range envs {
		if err := w.Publish(ctx, env, i); err != nil {
			return w.res, err
		}
	}
	return w.Wait(ctx)
}
