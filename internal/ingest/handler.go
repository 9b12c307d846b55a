package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/schedlens/schedlens/internal/events"
)

// publishBatch is how many envelopes Handler gives publish at a time; a failure is reported
// with the number of envelopes in the batches before it, which are known to be published.
const publishBatch = 500

// maxListed bounds the rejected lines listed in a response (all are counted): a large body of
// bad lines must not turn into a larger answer.
const maxListed = 1000

// Rejected is one rejected line as a response lists it.
type Rejected struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// Response is the 200 answer of Handler: how many rows were accepted (and published) and
// which lines were rejected.
type Response struct {
	Accepted      int        `json:"accepted"`
	Rejected      []Rejected `json:"rejected"`
	RejectedCount int        `json:"rejected_count"`
}

// Path is where the collector serves Handler, on its -ingest-addr listener.
const Path = "/v1/ingest/requests"

// Handler serves POST /v1/ingest/requests: a body of NDJSON rows (see Row), Content-Type
// application/x-ndjson or application/json (or none). The valid rows are published with
// publish and answered 200 with a Response, which lists the rejected lines, if any. Errors are
// application/problem+json (RFC 9457): 400 when the body is empty or every row is bad (the
// rejected lines in the extension member "rejected"), 405 for other methods, 413 when the body
// exceeds o.MaxBytes, 415 for other content types, and 503 when publish fails (the 503 says in
// "published" how many rows were published before the failure) or when o.MaxConcurrent posts
// are already being served (with Retry-After). Re-posting a body is safe: the
// envelope ids are derived from the rows, so nothing is stored twice.
//
// Handler panics when o cannot produce valid envelopes (no or an invalid Cluster, an invalid
// HostPods entry): that is a wiring mistake, not a request's.
func Handler(o Options, publish func(context.Context, []*events.Envelope) error) http.Handler {
	o, err := o.resolve("ingest")
	if err != nil {
		panic("ingest.Handler: " + err.Error())
	}
	slots := make(chan struct{}, o.MaxConcurrent)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			w.Header().Set("Retry-After", "1")
			problem(w, http.StatusServiceUnavailable, "Too Many Posts", fmt.Sprintf(
				"%d posts are being served; post again after the time in Retry-After", o.MaxConcurrent), nil)
			return
		}
		serve(w, r, &o, publish)
	})
}

func serve(w http.ResponseWriter, r *http.Request, o *Options, publish func(context.Context, []*events.Envelope) error) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		problem(w, http.StatusMethodNotAllowed, "Method Not Allowed", fmt.Sprintf("%s is not allowed on %s; POST NDJSON rows", r.Method, r.URL.Path), nil)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/x-ndjson" && mt != "application/json") {
			problem(w, http.StatusUnsupportedMediaType, "Unsupported Media Type", fmt.Sprintf("content type %q: want application/x-ndjson or application/json", ct), nil)
			return
		}
	}
	tooLarge := func() {
		problem(w, http.StatusRequestEntityTooLarge, "Content Too Large", fmt.Sprintf("the body exceeds %d bytes; split it into several posts", o.MaxBytes), nil)
	}
	if r.ContentLength > o.MaxBytes {
		tooLarge()
		return
	}
	results, rejected, err := parseNDJSON(http.MaxBytesReader(w, r.Body, o.MaxBytes), o)
	envs := envelopes(results)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		tooLarge()
		return
	case err != nil:
		problem(w, http.StatusBadRequest, "Unreadable Body", fmt.Sprintf("reading the body failed: %v", err), nil)
		return
	case len(envs) == 0 && len(rejected) == 0:
		problem(w, http.StatusBadRequest, "Empty Body", "the body holds no rows; post one JSON object per line", nil)
		return
	case len(envs) == 0:
		problem(w, http.StatusBadRequest, "No Valid Rows", fmt.Sprintf("all %d rows were rejected", len(rejected)), listed(rejected))
		return
	}

	published := 0
	for start := 0; start < len(envs); start += publishBatch {
		batch := envs[start:min(start+publishBatch, len(envs))]
		if err := publish(r.Context(), batch); err != nil {
			o.Logger.Error("publish ingested requests", "err", err, "published", published, "rows", len(envs))
			ext := listed(rejected)
			ext["published"] = published
			problem(w, http.StatusServiceUnavailable, "Publish Failed", fmt.Sprintf(
				"%d of %d valid rows were published before publishing failed; the others may or may not have been. "+
					"Post the same body again: ids are derived from the rows, so nothing is stored twice.",
				published, len(envs)), ext)
			return
		}
		published += len(batch)
	}
	ext := listed(rejected)
	writeJSON(w, http.StatusOK, "application/json", Response{
		Accepted:      published,
		Rejected:      ext["rejected"].([]Rejected),
		RejectedCount: len(rejected),
	})
}

// listed returns the problem extension members for rejected lines: "rejected" (at most
// maxListed of them, never null) and "rejected_count".
func listed(rejected []LineError) map[string]any {
	out := make([]Rejected, 0, min(len(rejected), maxListed))
	for _, le := range rejected[:min(len(rejected), maxListed)] {
		out = append(out, Rejected{Line: le.Line, Error: le.Err.Error()})
	}
	return map[string]any{"rejected": out, "rejected_count": len(rejected)}
}

// problem writes an RFC 9457 problem document with extension members ext.
func problem(w http.ResponseWriter, status int, title, detail string, ext map[string]any) {
	doc := map[string]any{"type": "about:blank", "title": title, "status": status, "detail": detail}
	for k, v := range ext {
		doc[k] = v
	}
	writeJSON(w, status, "application/problem+json", doc)
}

func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
