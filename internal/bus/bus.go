// Package bus is the NATS JetStream adapter shared by the collector and the correlator: the
// connection, the SCHEDLENS stream, publishing envelopes with their ids as Nats-Msg-Id through
// one windowed publisher (window.go), and replaying JSONL recordings through it (replay.go).
package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schedlens/schedlens/internal/config"
	"github.com/schedlens/schedlens/internal/events"
)

// StreamName is the stream every schedlens process uses.
const StreamName = "SCHEDLENS"

// StreamConfig holds the stream's bounds. Zero fields take the defaults of DefaultStreamConfig.
type StreamConfig struct {
	MaxAge     time.Duration // messages older than this are dropped
	MaxBytes   int64         // the stream never holds more than this
	Duplicates time.Duration // window in which a repeated Nats-Msg-Id is dropped by the server
	Replicas   int
}

// DefaultStreamConfig keeps a week of events, at most 1 GiB, deduplicating ids for 10 minutes.
func DefaultStreamConfig() StreamConfig {
	return StreamConfig{MaxAge: 7 * 24 * time.Hour, MaxBytes: 1 << 30, Duplicates: 10 * time.Minute, Replicas: 1}
}

// Connect dials NATS and keeps reconnecting for as long as the process runs. Extra options are
// applied last (the collector passes nats.RetryOnFailedConnect(true) to start without NATS).
func Connect(url, name string, logger *slog.Logger, extra ...nats.Option) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				logger.Warn("nats disconnected", "error", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { logger.Info("nats reconnected", "url", c.ConnectedUrlRedacted()) }),
	}
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats at %s: %w", config.Redact(url), err)
	}
	return nc, nil
}

// EnsureStream creates the SCHEDLENS stream, or updates it to cfg, idempotently: whichever
// process starts first creates it and the others converge on the same configuration.
func EnsureStream(ctx context.Context, js jetstream.JetStream, cfg StreamConfig) (jetstream.Stream, error) {
	def := DefaultStreamConfig()
	if cfg.MaxAge == 0 {
		cfg.MaxAge = def.MaxAge
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = def.MaxBytes
	}
	if cfg.Duplicates == 0 {
		cfg.Duplicates = def.Duplicates
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = def.Replicas
	}
	sc := jetstream.StreamConfig{
		Name:        StreamName,
		Description: "schedlens envelopes (see docs/contracts.md)",
		Subjects:    []string{events.StreamSubjects},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      cfg.MaxAge,
		MaxBytes:    cfg.MaxBytes,
		Duplicates:  cfg.Duplicates,
		Replicas:    cfg.Replicas,
	}
	// A stream already as wanted is left alone: a client that may only read the stream's
	// configuration (the collector's least-privilege role) can use a provisioned stream.
	if s, err := js.Stream(ctx, StreamName); err == nil && sameStream(s.CachedInfo().Config, sc) {
		return s, nil
	}
	s, err := js.CreateOrUpdateStream(ctx, sc)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		// Another process created it between our update and create: update it now.
		s, err = js.UpdateStream(ctx, sc)
	}
	if err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", StreamName, err)
	}
	return s, nil
}

// TooLarge reports a publish refused for the message's size — larger than the server's
// max_payload (refused by the client before sending), than the stream's max message size, or
// than its store takes. It is permanent: the same bytes are refused every time.
func TooLarge(err error) bool {
	if errors.Is(err, nats.ErrMaxPayload) {
		return true
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum ||
			(api.ErrorCode == jsErrCodeStoreFailed && strings.Contains(api.Description, "message too large"))
	}
	return false
}

// StreamFull reports a publish refused because the stream is at a limit and refuses new
// messages (a stream provisioned with discard-new): transient, retried until the correlator
// has consumed enough or the operator raised the limit.
func StreamFull(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) && api.ErrorCode == jsErrCodeStoreFailed {
		return strings.Contains(api.Description, "maximum bytes exceeded") || strings.Contains(api.Description, "maximum messages")
	}
	return false
}

// jsErrCodeStoreFailed is JetStream's JSStreamStoreFailedF: storing the message failed, the
// description says why (nats-server's ErrMaxBytes, ErrMaxMsgs, ErrMsgTooLarge).
const jsErrCodeStoreFailed jetstream.ErrorCode = 10077

// sameStream reports whether the stream's configuration has every field EnsureStream sets.
func sameStream(have, want jetstream.StreamConfig) bool {
	return have.Name == want.Name && have.Description == want.Description && slices.Equal(have.Subjects, want.Subjects) &&
		have.Storage == want.Storage && have.Retention == want.Retention && have.Discard == want.Discard &&
		have.MaxAge == want.MaxAge && have.MaxBytes == want.MaxBytes && have.Duplicates == want.Duplicates && have.Replicas == want.Replicas
}

// PublishAsync publishes env on schedlens.v1.<cluster>.<kind> with Nats-Msg-Id set to its id,
// so the server drops a copy published within the duplicate window.
func PublishAsync(js jetstream.JetStream, env *events.Envelope) (jetstream.PubAckFuture, error) {
	b := env.Raw
	if b == nil {
		var err error
		if b, err = events.Encode(env); err != nil {
			return nil, err
		}
	}
	return js.PublishAsync(events.SubjectOf(env), b, jetstream.WithMsgID(env.ID))
}
