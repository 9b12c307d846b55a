package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/store"
)

// LookupRequest is the body of POST /v1/requests/lookup.
type LookupRequest struct {
	IDs []string `json:"ids"`
}

// LookupResponse answers POST /v1/requests/lookup: the stored ones among the ids asked for.
type LookupResponse struct {
	Requests []store.RequestState `json:"requests"`
}

// lookupRequests says what became of request results by id: `collector import` reads back
// through it whether the correlator stored its results and on which pods they landed. It is
// a POST only because a thousand ids do not fit in a URL; it changes nothing.
func (s *Server) lookupRequests(w http.ResponseWriter, r *http.Request) {
	if !s.mayReadAll(w, r) {
		return
	}
	var body LookupRequest
	dec := json.NewDecoder(r.Body) // limitBody caps it
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		bodyError(w, err, "Bad lookup", fmt.Sprintf(`want {"ids": ["…"]}: %v`, err))
		return
	}
	if n := len(body.IDs); n == 0 || n > store.MaxLookup {
		problem(w, http.StatusBadRequest, "Bad lookup", fmt.Sprintf("ids must hold 1 to %d ids, got %d", store.MaxLookup, n))
		return
	}
	for i, id := range body.IDs {
		if why := badText(id, events.MaxIDLen); why != "" {
			problem(w, http.StatusBadRequest, "Bad lookup", fmt.Sprintf("ids[%d] cannot be an envelope id: it %s", i, why))
			return
		}
	}
	states, err := s.db.RequestStates(r.Context(), body.IDs)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, LookupResponse{Requests: states})
}

// unattributed lists the results waiting for a pod, oldest first, paged like /v1/pods.
func (s *Server) unattributed(w http.ResponseWriter, r *http.Request) {
	if !s.mayReadAll(w, r) {
		return
	}
	q := r.URL.Query()
	limit, ok := parseLimit(w, r)
	if !ok {
		return
	}
	page, err := s.db.Unattributed(r.Context(), store.UnattributedFilter{Cluster: q.Get("cluster"), Source: q.Get("source")}, limit, q.Get("cursor"))
	s.writePage(w, r, err, "unattributed_requests", page.Requests, page.NextCursor, nil)
}
