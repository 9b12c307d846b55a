package api

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/record"
	"github.com/schedlens/schedlens/internal/store"
)

func (s *Server) listExperiments(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.readScope(w, r)
	if !ok {
		return
	}
	list, err := s.db.Experiments(r.Context(), sc)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, map[string]any{"experiments": list, "namespaces_hidden": sc.Hidden()})
}

func (s *Server) experiment(w http.ResponseWriter, r *http.Request) {
	if !s.mayReadExperiment(w, r, chi.URLParam(r, "name")) {
		return
	}
	e, err := s.db.Experiment(r.Context(), chi.URLParam(r, "name"))
	if s.failed(w, r, err, "Unknown experiment", fmt.Sprintf("no definition and no pods of experiment %q", chi.URLParam(r, "name"))) {
		return
	}
	writeJSON(w, e)
}

// putExperiment stores a definition: the experiment ConfigMap's keys as JSON. A value of a type
// or range its key does not take is refused (400 naming each), although the collector and the
// correlator would keep it: a client can correct its request, a ConfigMap already applied
// cannot be.
func (s *Server) putExperiment(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	var def events.Experiment
	dec := json.NewDecoder(r.Body) // limitBody caps it
	if err := dec.Decode(&def); err != nil {
		bodyError(w, err, "Bad experiment definition", err.Error())
		return
	}
	if def.Name == "" {
		def.Name = name
	}
	if def.Name != name {
		problem(w, http.StatusBadRequest, "Bad experiment definition", fmt.Sprintf("name %q differs from the URL's %q", def.Name, name))
		return
	}
	if misfits := def.Misfits(); len(misfits) > 0 {
		problem(w, http.StatusBadRequest, "Bad experiment definition", strings.Join(misfits, "; "))
		return
	}
	if err := s.db.DefineExperiment(r.Context(), def, time.Now().UTC()); err != nil {
		if store.IsDataError(err) || errors.Is(err, events.ErrInvalid) {
			problem(w, http.StatusBadRequest, "Bad experiment definition", err.Error())
			return
		}
		s.internal(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// deleteExperiment deletes an experiment — its definition, its pods and their every event —
// which retention never drops (role write; a caller limited to some namespaces may delete only
// an experiment that lives in them all).
func (s *Server) deleteExperiment(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	if !s.mayReadExperiment(w, r, name) {
		return
	}
	err := s.db.DeleteExperiment(r.Context(), name)
	if s.failed(w, r, err, "Unknown experiment", fmt.Sprintf("no definition and no pods of experiment %q", name)) {
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Comparison is the answer of /v1/experiments/{name}/comparison (compare.Comparison).
type Comparison = compare.Comparison

func (s *Server) comparison(w http.ResponseWriter, r *http.Request) {
	c, ok := s.compute(w, r)
	if ok {
		writeJSON(w, c)
	}
}

// record is GET /v1/experiments/{name}/record: the experiment's record (internal/record), in
// its canonical bytes, its digest also in the ETag; for an experiment without pods here, the
// latest record of it imported.
func (s *Server) record(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.readRecord(w, r, chi.URLParam(r, "name"))
	if !ok {
		return
	}
	b, err := record.Marshal(rec)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", strconv.Quote(rec.Digest))
	w.Write(b)
}

// readRecord reads experiment name's record (its own, else the latest imported) for a caller
// who may read it, and answers the request when it cannot.
func (s *Server) readRecord(w http.ResponseWriter, r *http.Request, name string) (record.Record, bool) {
	if !s.mayReadExperiment(w, r, name) {
		return record.Record{}, false
	}
	rec, _, err := s.db.RecordOrImported(r.Context(), name, r.URL.Query().Get("namespace"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		problem(w, http.StatusNotFound, "Unknown experiment", fmt.Sprintf("no pods and no imported record of experiment %q", name))
		return record.Record{}, false
	case err != nil:
		s.internal(w, r, err)
		return record.Record{}, false
	}
	return rec, true
}

// against is GET /v1/experiments/{name}/against/{other}: the two experiments' records held
// against each other (record.Compare).
func (s *Server) against(w http.ResponseWriter, r *http.Request) {
	names := []string{chi.URLParam(r, "name"), chi.URLParam(r, "other")}
	var recs [2]record.Record
	for i, name := range names {
		rec, ok := s.readRecord(w, r, name)
		if !ok {
			return
		}
		recs[i] = rec
	}
	writeJSON(w, record.Compare(recs[0], recs[1]))
}

// importRecord is POST /v1/records (role write): a record from another schedlens, stored when
// its schema is one this schedlens reads and its digest is its content's; 201 when new, 200 when
// that digest was stored already.
func (s *Server) importRecord(w http.ResponseWriter, r *http.Request) {
	var rec record.Record
	dec := json.NewDecoder(r.Body) // limitBody caps it
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		bodyError(w, err, "Bad record", err.Error())
		return
	}
	switch {
	case rec.SchemaVersion != record.SchemaVersion:
		problem(w, http.StatusBadRequest, "Bad record", fmt.Sprintf("schema_version %q: this schedlens reads %s", rec.SchemaVersion, record.SchemaVersion))
		return
	case rec.Experiment == "":
		problem(w, http.StatusBadRequest, "Bad record", "no experiment")
		return
	}
	if err := record.Verify(rec); err != nil {
		problem(w, http.StatusBadRequest, "Bad record", err.Error())
		return
	}
	created, err := s.db.ImportRecord(r.Context(), rec)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/v1/experiments/"+url.PathEscape(rec.Experiment)+"/record")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"experiment": rec.Experiment, "digest": rec.Digest, "created": created})
}

func (s *Server) comparisonCSV(w http.ResponseWriter, r *http.Request) {
	c, ok := s.compute(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"arm", "baseline", "metric", "unit", "better_when", "role", "runs", "mean", "ci95_low", "ci95_high", "lower_bound",
		"difference", "difference_ci95_low", "difference_ci95_high", "margin", "p_value", "verdict", "arm_verdict", "rollback_required"})
	f := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'g', 6, 64)
	}
	for _, a := range c.Arms {
		for _, m := range a.Metrics {
			mean := m.AcrossRun.Mean
			row := []string{a.Arm, strconv.FormatBool(a.Baseline), m.Metric, m.Unit, m.Better, m.Role, strconv.Itoa(m.AcrossRun.N),
				f(&mean), f(m.AcrossRun.Low), f(m.AcrossRun.High), strconv.FormatBool(m.LowerBound), "", "", "", "", f(m.PValue),
				m.Verdict, a.Verdict, strconv.FormatBool(a.Rollback.Required)}
			if m.AcrossRun.N == 0 {
				row[7] = ""
			}
			if d := m.Difference; d != nil {
				dm := d.Mean
				row[11], row[12], row[13] = f(&dm), f(d.Low), f(d.High)
			}
			if m.Margin != nil {
				row[14] = f(&m.Margin.Value)
			}
			_ = cw.Write(row)
		}
	}
	cw.Flush()
}

// compute builds the comparison, writing the problem itself when it cannot.
func (s *Server) compute(w http.ResponseWriter, r *http.Request) (Comparison, bool) {
	name := chi.URLParam(r, "name")
	if !s.mayReadExperiment(w, r, name) {
		return Comparison{}, false
	}
	c, err := s.db.Comparison(r.Context(), name, r.URL.Query().Get("namespace"), r.URL.Query().Get("baseline"))
	if errors.Is(err, store.ErrNotFound) { // known only from an imported record: its comparison as recorded
		rec, ierr := s.db.ImportedRecord(r.Context(), name, r.URL.Query().Get("namespace"))
		switch b := r.URL.Query().Get("baseline"); {
		case ierr == nil && b != "" && b != rec.Comparison.Baseline:
			problem(w, http.StatusBadRequest, "Imported comparison", fmt.Sprintf("experiment %q is known from an imported record only: its comparison is as recorded, against baseline %q", name, rec.Comparison.Baseline))
			return Comparison{}, false
		case ierr == nil:
			return rec.Comparison, true
		case !errors.Is(ierr, store.ErrNotFound):
			err = ierr
		}
	}
	var bad *compare.BadBaselineError
	switch {
	case errors.Is(err, store.ErrNotFound):
		problem(w, http.StatusNotFound, "Unknown experiment", fmt.Sprintf("no definition and no pods of experiment %q", name))
		return Comparison{}, false
	case errors.As(err, &bad):
		problem(w, http.StatusBadRequest, "Unknown baseline", bad.Error())
		return Comparison{}, false
	case err != nil:
		s.internal(w, r, err)
		return Comparison{}, false
	}
	return c, true
}
