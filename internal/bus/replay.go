package bus

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"

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
	w := NewWindow(js, DefaultWindow, func(line int, _ *jetstream.PubAck, err error) error {
		if err != nil {
			fmt.Fprintf(errw, "line %d: not published: %v\n", line, err)
		}
		return nil
	})
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
		if err := w.Publish(ctx, env, line); err != nil {
			return res, err
		}
	}
	scanErr := sc.Err()
	pr, err := w.Wait(ctx)
	res.Published, res.Duplicates, res.Failed = pr.Published, pr.Duplicates, pr.Failed
	if scanErr != nil {
		return res, fmt.Errorf("read line %d: %w", line+1, scanErr)
	}
	if err != nil && res.Failed == 0 {
		return res, err // the context ended; failures are counted and reported per line
	}
	return res, nil
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
