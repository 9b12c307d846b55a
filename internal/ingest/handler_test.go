package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/ingest"
)

// publisher records what Handler publishes and fails from its failAt-th call on (0: never).
type publisher struct {
	calls, failAt int
	published     []string
}

func (p *publisher) publish(_ context.Context, envs []*events.Envelope) error {
	p.calls++
	if p.failAt > 0 && p.calls >= p.failAt {
		return errors.New("nats: no responders available for request")
	}
	p.published = append(p.published, ids(envs)...)
	return nil
}

func goodRow(i int) string {
	return fmt.Sprintf(`{"pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":%d,"status":200}`, i)
}

func TestHandler(t *testing.T) {
	many := make([]string, 0, 501)
	for i := range 501 {
		many = append(many, goodRow(i))
	}
	tests := []struct {
		name        string
		method      string
		contentType string
		body        string
		maxBytes    int64
		chunked     bool // no Content-Length, as a streamed upload
		failAt      int
		wantStatus  int
		wantType    string
		want        string // JSON, compared as a value
		wantPub     int
	}{{
		name: "all good", method: "POST", contentType: "application/x-ndjson",
		body:       goodRow(1) + "\n" + goodRow(2) + "\n",
		wantStatus: 200, wantType: "application/json",
		want:    `{"accepted": 2, "rejected": [], "rejected_count": 0}`,
		wantPub: 2,
	}, {
		name: "some bad", method: "POST", contentType: "application/json; charset=utf-8",
		body:       goodRow(1) + "\n\nnot json\n" + `{"pod_ip":"10.1.2.3","latency_ms":1}` + "\n" + goodRow(2),
		wantStatus: 200, wantType: "application/json",
		want: `{"accepted": 2, "rejected_count": 2, "rejected": [
			{"line": 3, "error": "not valid JSON"},
			{"line": 4, "error": "sent_at: missing"}]}`,
		wantPub: 2,
	}, {
		name: "no content type", method: "POST",
		body:       goodRow(1),
		wantStatus: 200, wantType: "application/json",
		want:    `{"accepted": 1, "rejected": [], "rejected_count": 0}`,
		wantPub: 1,
	}, {
		name: "all bad", method: "POST", contentType: "application/x-ndjson",
		body:       "not json\n" + `{"sent_at":"2025-03-01T10:00:00Z","latency_ms":1}`,
		wantStatus: 400, wantType: "application/problem+json",
		want: `{"type": "about:blank", "title": "No Valid Rows", "status": 400, "detail": "all 2 rows were rejected",
			"rejected_count": 2, "rejected": [
			{"line": 1, "error": "not valid JSON"},
			{"line": 2, "error": "names no pod: give pod_uid (with pod_namespace and pod_name) or pod_ip"}]}`,
	}, {
		name: "empty body", method: "POST", contentType: "application/x-ndjson",
		body:       "\n  \n",
		wantStatus: 400, wantType: "application/problem+json",
		want: `{"type": "about:blank", "title": "Empty Body", "status": 400,
			"detail": "the body holds no rows; post one JSON object per line"}`,
	}, {
		name: "get", method: "GET",
		wantStatus: 405, wantType: "application/problem+json",
		want: `{"type": "about:blank", "title": "Method Not Allowed", "status": 405,
			"detail": "GET is not allowed on /v1/ingest/requests; POST NDJSON rows"}`,
	}, {
		name: "form post", method: "POST", contentType: "application/x-www-form-urlencoded",
		body:       goodRow(1),
		wantStatus: 415, wantType: "application/problem+json",
		want: `{"type": "about:blank", "title": "Unsupported Media Type", "status": 415,
			"detail": "content type \"application/x-www-form-urlencoded\": want application/x-ndjson or application/json"}`,
	}, {
		name: "too large by content length", method: "POST", contentType: "application/x-ndjson",
		body: goodRow(1) + "\n" + goodRow(2), maxBytes: 100,
		wantStatus: 413, wantType: "application/problem+json",
		want: `{"type": "about:blank", "title": "Content Too Large", "status": 413,
			"detail": "the body exceeds 100 bytes; split it into several posts"}`,
	}, {
		name: "too large while streaming", method: "POST", contentType: "application/x-ndjson",
		body: goodRow(1) + "\n" + goodRow(2), maxBytes: 100, chunked: true,
		wantStatus: 413, wantType: "application/problem+json",
		want: `{"type": "about:blank", "title": "Content Too Large", "status": 413,
			"detail": "the body exceeds 100 bytes; split it into several posts"}`,
	}, {
		name: "publish fails", method: "POST", contentType: "application/x-ndjson",
		body: goodRow(1) + "\nnot json\n", failAt: 1,
		wantStatus: 503, wantType: "application/problem+json",
		want: `{"type": "about:blank", "title": "Publish Failed", "status": 503,
			"detail": "0 of 1 valid rows were published before publishing failed; the others may or may not have been. Post the same body again: ids are derived from the rows, so nothing is stored twice.",
			"published": 0, "rejected_count": 1, "rejected": [{"line": 2, "error": "not valid JSON"}]}`,
	}, {
		name: "publish fails after a batch", method: "POST", contentType: "application/x-ndjson",
		body: strings.Join(many, "\n"), failAt: 2,
		wantStatus: 503, wantType: "application/problem+json",
		want: `{"type": "about:blank", "title": "Publish Failed", "status": 503,
			"detail": "500 of 501 valid rows were published before publishing failed; the others may or may not have been. Post the same body again: ids are derived from the rows, so nothing is stored twice.",
			"published": 500, "rejected_count": 0, "rejected": []}`,
		wantPub: 500,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := options()
			o.MaxBytes = tt.maxBytes
			p := &publisher{failAt: tt.failAt}
			h := ingest.Handler(o, p.publish)

			r := httptest.NewRequest(tt.method, "/v1/ingest/requests", strings.NewReader(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			if tt.chunked {
				r.ContentLength = -1
				r.Body = io.NopCloser(strings.NewReader(tt.body))
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)

			if w.Code != tt.wantStatus || w.Header().Get("Content-Type") != tt.wantType {
				t.Errorf("status %d %s, want %d %s", w.Code, w.Header().Get("Content-Type"), tt.wantStatus, tt.wantType)
			}
			var got, want any
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatalf("want: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if len(p.published) != tt.wantPub {
				t.Errorf("published %d envelopes, want %d", len(p.published), tt.wantPub)
			}
			if tt.wantStatus == 405 && w.Header().Get("Allow") != "POST" {
				t.Errorf("Allow %q, want POST", w.Header().Get("Allow"))
			}
		})
	}
}

// TestHandlerRepost posts the same body twice: the same ids are published, so the store
// keeps each row once.
func TestHandlerRepost(t *testing.T) {
	p := &publisher{}
	h := ingest.Handler(options(), p.publish)
	body := goodRow(1) + "\n" + goodRow(2) + "\n" + `{"id":"x-1","pod_ip":"10.1.2.3","sent_at":"2025-03-01T10:00:00Z","latency_ms":1}`
	for range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/ingest/requests", strings.NewReader(body)))
		if w.Code != 200 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	if diff := cmp.Diff(p.published[:3], p.published[3:]); diff != "" {
		t.Errorf("ids of the second post (-first +second):\n%s", diff)
	}
}

func TestHandlerPanicsWithoutCluster(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Handler with no cluster: want a panic")
		}
	}()
	ingest.Handler(ingest.Options{}, (&publisher{}).publish)
}

// Beyond MaxConcurrent posts at once, one more is answered 503 with Retry-After at once (not
// queued); once a slot is free, posts are served again.
func TestHandlerConcurrencyLimit(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	o := options()
	o.MaxConcurrent = 2
	h := ingest.Handler(o, func(ctx context.Context, envs []*events.Envelope) error {
		started <- struct{}{}
		<-release
		return nil
	})
	post := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/ingest/requests", strings.NewReader(goodRow(1))))
		return rec
	}
	done := make(chan int, 2)
	for range 2 {
		go func() { done <- post().Code }()
	}
	<-started
	<-started // both slots held, inside publish
	rec := post()
	if rec.Code != 503 || rec.Header().Get("Retry-After") == "" || rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Errorf("third post: %d %v %s, want 503 problem+json with Retry-After", rec.Code, rec.Header(), rec.Body)
	}
	close(release)
	for range 2 {
		if code := <-done; code != 200 {
			t.Errorf("a post within the limit: %d", code)
		}
	}
	if rec := post(); rec.Code != 200 {
		t.Errorf("a post after the others finished: %d %s", rec.Code, rec.Body)
	}
}
