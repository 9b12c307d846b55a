package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A query the database cancelled for its statement timeout is a 503 with Retry-After, not a
// 500: the request may succeed later or narrower.
func TestStatementTimeoutIs503(t *testing.T) {
	s := &Server{logger: slog.New(slog.DiscardHandler)}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("list pods: %w", &pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}), http.StatusServiceUnavailable},
		{fmt.Errorf("list pods: %w", &pgconn.PgError{Code: "42P01"}), http.StatusInternalServerError},
	} {
		rec := httptest.NewRecorder()
		s.internal(rec, httptest.NewRequest(http.MethodGet, "/v1/pods", nil), tc.err)
		if rec.Code != tc.want || rec.Header().Get("Content-Type") != "application/problem+json" ||
			(tc.want == http.StatusServiceUnavailable) != (rec.Header().Get("Retry-After") != "") {
			t.Errorf("%v: %d %v, want %d problem+json", tc.err, rec.Code, rec.Header(), tc.want)
		}
	}
}
