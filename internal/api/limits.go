package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Bounds of what a request may carry in its path and query (checkParams) and body (limitBody).
const (
	MaxPathBytes  = 4096
	MaxParamBytes = 1024
	MaxBodyBytes  = 1 << 20
)

// limitBody caps every request body at MaxBodyBytes: a declared length beyond is refused at
// once, and reading past it fails with *http.MaxBytesError, which handlers answer with 413
// (tooLarge).
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBodyBytes {
			tooLarge(w)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// tooLarge answers 413 for a body beyond MaxBodyBytes.
func tooLarge(w http.ResponseWriter) {
	problem(w, http.StatusRequestEntityTooLarge, "Content Too Large", fmt.Sprintf("the body exceeds %d bytes", MaxBodyBytes))
}

// bodyError answers a body that could not be decoded: 413 when it was too large, else 400
// with title and the decoder's reason.
func bodyError(w http.ResponseWriter, err error, title, detail string) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		tooLarge(w)
		return
	}
	problem(w, http.StatusBadRequest, title, detail)
}

// checkParams answers 400 for a path or query parameter no handler can use: not valid UTF-8,
// holding a NUL (Postgres text cannot, and the query would fail with a 500), beyond
// MaxPathBytes or MaxParamBytes, or a query string that does not parse. It guards the web UI
// mounted on the same router too.
func checkParams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := badText(r.URL.Path, MaxPathBytes); why != "" {
			problem(w, http.StatusBadRequest, "Bad path", "the path "+why)
			return
		}
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			problem(w, http.StatusBadRequest, "Bad query string", fmt.Sprintf("the query string does not parse: %v", err))
			return
		}
		for k, vs := range q {
			if why := badText(k, MaxParamBytes); why != "" {
				problem(w, http.StatusBadRequest, "Bad query parameter", fmt.Sprintf("a parameter name %s", why))
				return
			}
			for _, v := range vs {
				if why := badText(v, MaxParamBytes); why != "" {
					problem(w, http.StatusBadRequest, "Bad query parameter", fmt.Sprintf("parameter %q %s", k, why))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// badText says what is wrong with a path or parameter s, "" when nothing is.
func badText(s string, limit int) string {
	switch {
	case len(s) > limit:
		return fmt.Sprintf("is longer than %d bytes", limit)
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.ContainsRune(s, 0):
		return "holds a NUL byte"
	}
	return ""
}
