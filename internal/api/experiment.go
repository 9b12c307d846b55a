package api

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/store"
)

func (s *Server) listExperiments(w http.ResponseWriter, r *http.Request) {
	list, err := s.db.Experiments(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, map[string]any{"experiments": list})
}

func (s *Server) experiment(w http.ResponseWriter, r *http.Request) {
	e, err := s.db.Experiment(r.Context(), chi.URLParam(r, "name"))
	if errors.Is(err, store.ErrNotFound) {
		problem(w, http.StatusNotFound, "Unknown experiment", fmt.Sprintf("no definition and no pods of experiment %q", chi.URLParam(r, "name")))
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, e)
}

// putExperiment stores a definition: the experiment ConfigMap's keys as JSON.
func (s *Server) putExperiment(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	var def events.Experiment
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	if err := dec.Decode(&def); err != nil {
		problem(w, http.StatusBadRequest, "Bad experiment definition", err.Error())
		return
	}
	if def.Name == "" {
		def.Name = name
	}
	if def.Name != name {
		problem(w, http.StatusBadRequest, "Bad experiment definition", fmt.Sprintf("name %q differs from the URL's %q", def.Name, name))
		return
	}
	if def.Repeats < 0 {
		problem(w, http.StatusBadRequest, "Bad experiment definition", "repeats must not be negative")
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

// Comparison is the answer of /v1/experiments/{name}/comparison.
type Comparison struct {
	Experiment string              `json:"experiment"`
	Namespace  string              `json:"namespace,omitempty"`
	Baseline   string              `json:"baseline"`
	Method     string              `json:"method"`
	Arms       []compare.ArmResult `json:"arms"`
	// Placement is, per arm, where its pods ran and why some waited.
	Placement map[string]*store.ArmPlacement `json:"placement"`
	// UnknownThresholds are threshold keys of the definition that name no metric.
	UnknownThresholds []string `json:"unknown_thresholds"`
}

const method = "per-run values (a run's pods pooled); across runs: mean with a 95% Student-t interval; " +
	"against the baseline: difference of means with a 95% Welch t interval; verdicts at family-wise 1% (Bonferroni over the metrics)"

func (s *Server) comparison(w http.ResponseWriter, r *http.Request) {
	c, ok := s.compute(w, r)
	if ok {
		writeJSON(w, c)
	}
}

func (s *Server) comparisonCSV(w http.ResponseWriter, r *http.Request) {
	c, ok := s.compute(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"arm", "baseline", "metric", "unit", "better_when", "runs", "mean", "ci95_low", "ci95_high",
		"difference", "difference_ci95_low", "difference_ci95_high", "verdict", "arm_verdict"})
	f := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'g', 6, 64)
	}
	for _, a := range c.Arms {
		for _, m := range a.Metrics {
			mean := m.AcrossRun.Mean
			row := []string{a.Arm, strconv.FormatBool(a.Baseline), m.Metric, m.Unit, m.Better, strconv.Itoa(m.AcrossRun.N),
				f(&mean), f(m.AcrossRun.Low), f(m.AcrossRun.High), "", "", "", m.Verdict, a.Verdict}
			if m.AcrossRun.N == 0 {
				row[6] = ""
			}
			if d := m.Difference; d != nil {
				dm := d.Mean
				row[9], row[10], row[11] = f(&dm), f(d.Low), f(d.High)
			}
			_ = cw.Write(row)
		}
	}
	cw.Flush()
}

// compute builds the comparison, writing the problem itself when it cannot.
func (s *Server) compute(w http.ResponseWriter, r *http.Request) (Comparison, bool) {
	name := chi.URLParam(r, "name")
	c, err := Compute(r.Context(), s.db, name, r.URL.Query().Get("namespace"), r.URL.Query().Get("baseline"))
	var bad *BadBaselineError
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

// BadBaselineError says the requested baseline arm has no pods.
type BadBaselineError struct {
	Experiment, Baseline string
	Arms                 []string
}

func (e *BadBaselineError) Error() string {
	return fmt.Sprintf("experiment %q has no pods in arm %q (arms: %v)", e.Experiment, e.Baseline, e.Arms)
}

// Compute compares the arms of an experiment with baseline (default: the definition's, else
// "control"), over its pods in namespace (all when empty: runs of the same name from several
// namespaces pool). ErrNotFound for an unknown experiment or one without pods there,
// *BadBaselineError for a baseline without pods.
func Compute(ctx context.Context, db *store.DB, name, namespace, baseline string) (Comparison, error) {
	exp, err := db.Experiment(ctx, name)
	if err != nil {
		return Comparison{}, err
	}
	if baseline == "" && exp.Definition != nil {
		baseline = exp.Definition.Baseline
	}
	if baseline == "" {
		baseline = "control"
	}
	if !slices.Contains(exp.Arms, baseline) {
		return Comparison{}, &BadBaselineError{Experiment: name, Baseline: baseline, Arms: exp.Arms}
	}
	in, err := db.ComparisonInput(ctx, name, namespace)
	if err != nil {
		return Comparison{}, err
	}
	var arms []compare.ArmInput
	for _, arm := range slices.Sorted(maps.Keys(in)) {
		a := compare.ArmInput{Name: arm, Metrics: map[string][]float64{}}
		byRun := in[arm]
		for _, run := range slices.SortedFunc(maps.Keys(byRun), store.CompareRuns) {
			a.Pods += len(byRun[run].Pods)
			for k, v := range compare.RunMetrics(byRun[run]) {
				a.Metrics[k] = append(a.Metrics[k], v)
			}
		}
		arms = append(arms, a)
	}
	c := Comparison{Experiment: name, Namespace: namespace, Baseline: baseline, Method: method, UnknownThresholds: []string{}}
	var th []compare.Threshold
	if exp.Definition != nil {
		th, c.UnknownThresholds = compare.Thresholds(exp.Definition.Thresholds)
		if c.UnknownThresholds == nil {
			c.UnknownThresholds = []string{}
		}
	}
	c.Arms = compare.Sorted(compare.Compare(compare.Metrics, baseline, arms, th, compare.Options{}))
	if c.Placement, err = db.Placement(ctx, name, namespace); err != nil {
		return Comparison{}, err
	}
	return c, nil
}

// WriteTable renders a comparison for a terminal: per arm its verdict and explanation, then each
// metric's mean [95 % interval] and, against the baseline, the difference and its verdict.
func WriteTable(w io.Writer, c Comparison) error {
	fmt.Fprintf(w, "%s: arms against %s\n%s\n", c.Experiment, c.Baseline, c.Method)
	if c.Namespace != "" {
		fmt.Fprintf(w, "pods of namespace %s only\n", c.Namespace)
	}
	for _, a := range c.Arms {
		fmt.Fprintln(w)
		head := fmt.Sprintf("%s — %d runs, %d pods", a.Arm, a.Runs, a.Pods)
		if a.Baseline {
			head += " (baseline)"
		} else {
			head += fmt.Sprintf(": %s — %s", strings.ToUpper(a.Verdict), a.Explanation)
		}
		fmt.Fprintln(w, head)
		if len(a.Breaches) > 0 {
			fmt.Fprintf(w, "  thresholds breached: %s\n", strings.Join(a.Breaches, "; "))
		}
		if p := c.Placement[a.Arm]; p != nil {
			fmt.Fprintf(w, "  placement: GPU %s; sharing %s; nodes %s\n", counts(p.GPUModels), counts(p.Sharing), counts(p.Nodes))
			if len(p.FailedScheduling) > 0 {
				fmt.Fprintf(w, "  FailedScheduling (node counts): %s\n", counts(p.FailedScheduling))
			}
		}
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  metric\tmean [95% CI]\tvs baseline [95% CI]\tverdict")
		for _, m := range a.Metrics {
			if m.AcrossRun.N == 0 {
				continue
			}
			diff := ""
			if d := m.Difference; d != nil {
				diff = fmt.Sprintf("%+.3g%s", d.Mean, interval(d.Low, d.High))
			}
			fmt.Fprintf(tw, "  %s (%s, %s better)\t%.3g%s\t%s\t%s\n", m.Metric, m.Unit, m.Better, m.AcrossRun.Mean, interval(m.AcrossRun.Low, m.AcrossRun.High), diff, m.Verdict)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "–"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s×%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func interval(lo, hi *float64) string {
	if lo == nil || hi == nil {
		return ""
	}
	return fmt.Sprintf(" [%.3g, %.3g]", *lo, *hi)
}
