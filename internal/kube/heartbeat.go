package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/schedlens/schedlens/internal/events"
)

// HeartbeatEnvelope says the collector's watch of m.Scope has been live from since (the start
// of the list its watch began with, or its recovery from a watch error) to m.Observed: id
// "heartbeat/<cluster>/<source>/<first 16 hex of sha256(scope key)>/<observed unix ns>",
// occurred_at and observed_at m.Observed.
func HeartbeatEnvelope(since time.Time, m Meta) (*events.Envelope, error) {
	sum := sha256.Sum256([]byte(m.Scope.Key()))
	at := micro(m.Observed)
	id := joinID(string(events.KindHeartbeat), m.Cluster, m.Source, hex.EncodeToString(sum[:])[:16], strconv.FormatInt(at.UnixNano(), 10))
	hb := events.Heartbeat{Scope: cloneScope(m.Scope), Since: micro(since)}
	env, err := envelope(events.KindHeartbeat, id, at, nil, "", nil, &hb, m)
	if err != nil {
		return nil, fmt.Errorf("heartbeat of %s: %w", m.Scope.Key(), err)
	}
	return env, nil
}
