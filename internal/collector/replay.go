// Package collector publishes what it observes as envelopes to JetStream.
package collector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/events"
)

// ReplayResult says what a replay did.
type ReplayResult struct {
	Published  int // acknowledged by JetStream
	Duplicates int // of those, ids the stream already held (within its duplicate window)
	Invalid    int // lines that failed validation, not published
	Failed     int // valid lines JetStream did not acknowledge
}

// maxLine bounds one JSONL line (one envelope).
const maxLine = 16 << 20

// Replay publishes every valid envelope of a JSONL stream and waits until JetStream has
// acknowledged each one. Lines that fail validation are reported to errw with their line
// numbers and skipped; the valid lines are published all the same.
//
// cluster, when not empty, is given to envelopes that name none (recordings from one cluster).
func Replay(ctx context.Context, js jetstream.JetStream, r io.Reader, cluster string, errw io.Writer) (ReplayResult, error) {
	var res ReplayResult
	type pending struct {
		line int
		fut  jetstream.PubAckFuture
	}
	var window []pending
	settle := func() error {
		for _, p := range window {
			select {
			case ack := <-p.fut.Ok():
				res.Published++
				if ack.Duplicate {
					res.Duplicates++
				}
			case err := <-p.fut.Err():
				res.Failed++
				fmt.Fprintf(errw, "line %d: not published: %v\n", p.line, err)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		window = window[:0]
		return nil
	}

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		env, err := decodeLine(append([]byte(nil), b...), cluster)
		if err != nil {
			res.Invalid++
			fmt.Fprintf(errw, "line %d: %v\n", line, err)
			continue
		}
		fut, err := bus.PublishAsync(js, env)
		if err != nil {
			res.Failed++
			fmt.Fprintf(errw, "line %d: not published: %v\n", line, err)
			continue
		}
		window = append(window, pending{line, fut})
		if len(window) >= 1024 {
			if err := settle(); err != nil {
				return res, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return res, fmt.Errorf("read line %d: %w", line+1, err)
	}
	return res, settle()
}

// decodeLine decodes one envelope, giving it cluster when it names none.
func decodeLine(b []byte, cluster string) (*events.Envelope, error) {
	env, err := events.Decode(b)
	var verr *events.ValidationError
	if err == nil || cluster == "" || !errors.As(err, &verr) || verr.Field != "cluster" || verr.Reason != "missing" {
		return env, err
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(b, &fields) != nil {
		return nil, err
	}
	fields["cluster"], _ = json.Marshal(cluster)
	filled, merr := json.Marshal(fields)
	if merr != nil {
		return nil, err
	}
	return events.Decode(filled)
}
