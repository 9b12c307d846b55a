package ingest_test

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/ingest"
)

// now is the fake clock of every test: observed_at of every envelope.
var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func options() ingest.Options {
	return ingest.Options{Cluster: "lab", Source: "loadgen", Now: func() time.Time { return now }}
}

// request is an envelope as the tests read it.
type request struct {
	ID         string
	OccurredAt string
	Pod        string // "namespace/name uid", "" when the result names only an IP
	Data       events.Request
}

var hashed = regexp.MustCompile(`^(request/(ingest|vegeta)/lab/)[0-9a-f]{32}$`)

// requests summarises envelopes after checking what every one must have. A content-hash id
// is shown as "<prefix>#": the hashes themselves are pinned by the golden id tests.
func requests(t *testing.T, envs []*events.Envelope, source string) []request {
	t.Helper()
	var out []request
	for _, env := range envs {
		if env.V != events.Version || env.Kind != events.KindRequest || env.Cluster != "lab" || env.Source != source || !env.ObservedAt.Equal(now) {
			t.Errorf("%s: envelope v=%d kind=%s cluster=%s source=%s observed_at=%s", env.ID, env.V, env.Kind, env.Cluster, env.Source, env.ObservedAt)
		}
		req, ok := env.Payload.(*events.Request)
		if !ok {
			t.Fatalf("%s: payload is %T, want *events.Request", env.ID, env.Payload)
		}
		r := request{ID: env.ID, OccurredAt: env.OccurredAt.Format(time.RFC3339Nano), Data: *req}
		if m := hashed.FindStringSubmatch(env.ID); m != nil {
			r.ID = m[1] + "#"
		}
		if env.Pod != nil {
			r.Pod = fmt.Sprintf("%s/%s %s", env.Pod.Namespace, env.Pod.Name, env.Pod.UID)
		}
		out = append(out, r)
	}
	return out
}

func lineErrors(les []ingest.LineError) []string {
	var out []string
	for _, le := range les {
		out = append(out, le.Error())
	}
	return out
}

func ids(envs []*events.Envelope) []string {
	var out []string
	for _, env := range envs {
		out = append(out, env.ID)
	}
	return out
}
