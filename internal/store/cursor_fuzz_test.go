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
		if c, err := decodeCursor(s); err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("pod cursor %q: %v", s, err)
			}
		} else {
			again, err := decodeCursor(encodeToken(c))
			if err != nil || !again.FirstSeen.Equal(c.FirstSeen) || again.UID != c.UID {
				t.Fatalf("pod cursor %q: %+v re-encodes to %+v, %v", s, c, again, err)
			}
		}
		if c, err := decodeRequestCursor(s); err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("request cursor %q: %v", s, err)
			}
		} else {
			again, err := decodeRequestCursor(encodeToken(c))
			if err != nil || !again.At.Equal(c.At) || again.ID != c.ID {
				t.Fatalf("request cursor %q: %+v re-encodes to %+v, %v", s, c, again, err)
			}
		}
	})
}
