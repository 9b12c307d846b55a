package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/store"
)

type problemDoc struct {
	Status int
	Title  string
	Detail string
}

func do(t *testing.T, method, url, body string, chunked bool) (*http.Response, problemDoc) {
	t.Helper()
	rd := strings.NewReader(body)
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if chunked {
		req.ContentLength = -1                           // no declared length: the limit is found while reading
		req.Body = io.NopCloser(struct{ io.Reader }{rd}) // hides the length from the client
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p problemDoc
	_ = json.NewDecoder(resp.Body).Decode(&p)
	return resp, p
}

// A body beyond api.MaxBodyBytes is a 413 problem, declared or found while reading; one within
// it is read as before.
func TestBodiesBeyondTheLimitAre413(t *testing.T) {
	srv := apitest.Serve(t, pgtest.DB(t))
	big := `{"name":"day20","change":"` + strings.Repeat("x", api.MaxBodyBytes) + `"}`
	lookup := `{"ids":["` + strings.Repeat("x", api.MaxBodyBytes) + `"]}`
	for _, tc := range []struct {
		method, path, body string
		chunked            bool
		want               int
	}{
		{"PUT", "/v1/experiments/day20", big, false, http.StatusRequestEntityTooLarge},
		{"PUT", "/v1/experiments/day20", big, true, http.StatusRequestEntityTooLarge},
		{"POST", "/v1/requests/lookup", lookup, false, http.StatusRequestEntityTooLarge},
		{"POST", "/v1/requests/lookup", lookup, true, http.StatusRequestEntityTooLarge},
		{"PUT", "/v1/experiments/day20", `{"name":"day20","arms":["control","priority"]}`, true, http.StatusNoContent},
		{"POST", "/v1/requests/lookup", `{"ids":["a\u0000b"]}`, false, http.StatusBadRequest},
		{"PUT", "/v1/experiments/day20", `{"name":"day20","change":"` + strings.Repeat("x", 70<<10) + `"}`, false, http.StatusBadRequest},
	} {
		resp, p := do(t, tc.method, srv.URL+tc.path, tc.body, tc.chunked)
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s (%d bytes, chunked %v): %d %+v, want %d", tc.method, tc.path, len(tc.body), tc.chunked, resp.StatusCode, p, tc.want)
			continue
		}
		if tc.want >= 400 && (resp.Header.Get("Content-Type") != "application/problem+json" || p.Status != tc.want) {
			t.Errorf("%s %s: %s %+v, want a problem document", tc.method, tc.path, resp.Header.Get("Content-Type"), p)
		}
	}
}

// GET /v1/dead-letters stays within its byte budget however large the poison messages, and
// says what it cut.
func TestDeadLettersPageIsCapped(t *testing.T) {
	db := pgtest.DB(t)
	srv := apitest.Serve(t, db)
	var dead []store.DeadLetter
	for i := range 80 {
		dead = append(dead, store.DeadLetter{Stream: "SCHEDLENS", Seq: uint64(i + 1), Subject: "schedlens.v1.lab.request",
			Raw: []byte(strings.Repeat("r", 1<<20)), Error: "invalid envelope: too big"})
	}
	if _, err := db.Append(context.Background(), nil, dead); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/v1/dead-letters?limit=1000")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page store.DeadLetterPage
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, d := range page.DeadLetters {
		if len(d.Raw) > store.DeadLetterRawBytes || !d.RawTruncated || d.RawBytes != 1<<20 {
			t.Errorf("dead letter %d: %d raw bytes of %d, truncated %v", d.StreamSeq, len(d.Raw), d.RawBytes, d.RawTruncated)
		}
		total += len(d.Raw)
	}
	want := store.DeadLetterPageBytes / store.DeadLetterRawBytes
	if got := fmt.Sprintf("%d listed, %d omitted, truncated %v, %d raw bytes", len(page.DeadLetters), page.Omitted, page.Truncated, total); got !=
		fmt.Sprintf("%d listed, %d omitted, truncated true, %d raw bytes", want, 80-want, store.DeadLetterPageBytes) {
		t.Errorf("page: %s", got)
	}
}
