package store

import (
	"errors"
	"testing"
	"time"
)

// FuzzCursor: a cursor either is ErrBadCursor or names a page position that encodes back to a
// cursor naming the same position; what it names is text the database accepts.
func FuzzCursor(f *testing.F) {
	at := time.Date(2026, 11, 30, 4, 32, 0, 123456000, time.UTC)
	f.Add(encodeToken(cursor{FirstSeen: at, UID: "b1946ac9-2f0e-4d3b-8a3c-6f1d2e7a9c41"}))
	f.Add(encodeToken(requestCursor{At: at, ID: "request/vegeta/lab/0f3c"}))
	f.Add(encodeToken(requestCursor{At: at, ID: "a\x00b"}))
	f.Add("eyJ0IjoiMjAyNi0xMS0zMFQwNDozMjowMFoiLCJ1IjoiXHUwMDAwIn0")
	f.Add("not base64!")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		checkCursor(t, "pod", s, decodeCursor, func(a, b cursor) bool {
			return a.FirstSeen.Equal(b.FirstSeen) && a.UID == b.UID
		})
		checkCursor(t, "request", s, decodeRequestCursor, func(a, b requestCursor) bool {
			return a.At.Equal(b.At) && a.ID == b.ID
		})
	})
}

// checkCursor fails unless s is ErrBadCursor to decode or names a position that encodes back
// to a cursor naming the same position (same says when two name the same).
func checkCursor[C any](t *testing.T, what, s string, decode func(string) (C, error), same func(a, b C) bool) {
	t.Helper()
	c, err := decode(s)
	if err != nil {
		if !errors.Is(err, ErrBadCursor) {
			t.Fatalf("%s cursor %q: %v", what, s, err)
		}
		return
	}
	again, err := decode(encodeToken(c))
	if err != nil || !same(again, c) {
		t.Fatalf("%s cursor %q: %+v re-encodes to %+v, %v", what, s, c, again, err)
	}
}
