package api

import (
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/schedlens/schedlens/internal/trace"
)

// runTrace serves a run's timelines in the Chrome Trace Event format (Perfetto, chrome://tracing).
func (s *Server) runTrace(w http.ResponseWriter, r *http.Request) {
	name, run := chi.URLParam(r, "name"), chi.URLParam(r, "run")
	if !s.mayReadExperiment(w, r, name) {
		return
	}
	sc, ok := s.readScope(w, r) // the pods its pods preempted may be anywhere
	if !ok {
		return
	}
	d, err := s.db.RunDetail(r.Context(), name, r.URL.Query().Get("namespace"), run, sc)
	if s.failed(w, r, err, "Run not found", fmt.Sprintf("no pods of experiment %q run %q", name, run)) {
		return
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf("inline; filename=%q", fmt.Sprintf("%s-run-%s.trace.json", name, run)))
	writeJSON(w, trace.Build(d))
}
