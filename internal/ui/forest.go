package ui

import (
	"fmt"
	"html/template"
	"math"
	"net/url"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/report"
)

// Forest plot geometry.
const (
	forestW      = 1200.0
	forestLabelW = 300.0
	forestPlotW  = 560.0
	forestRowH   = 18.0
	forestHeadH  = 30.0
)

// experimentView is the experiment page's data.
type experimentView struct {
	Name, Change, Namespace, Baseline, Method string
	Problem                                   string
	Arms                                      []armSummary
	Forest                                    template.HTML
	Metrics                                   []forestMetric
	Placement                                 []placementRow
	Runs                                      []runLink
	UnknownThresholds                         []string
	PrimaryMetrics, UnknownMetricWords        []string
	ThresholdsChangedAfterStart               []string
	Alpha                                     float64
	JSONURL, CSVURL                           string

	// DefinitionProblems are the first maxDefinitionProblems problems of the definition;
	// MoreDefinitionProblems counts the others, all in the experiment's JSON (DefinitionURL).
	DefinitionProblems     []string
	MoreDefinitionProblems int
	DefinitionURL          string

	// Chain is the record section: the record, previous and next experiments, against others.
	Chain *chainView
	// Imported is set for an experiment known here only by a record imported from another
	// schedlens: the page shows its comparison as recorded, with no runs or pods to open.
	Imported *report.Imported
}

type armSummary struct {
	Arm, Verdict, Explanation, URL, Description string
	Baseline, Paired                            bool
	Runs, Pods                                  int
	Breaches                                    []string
	Rollback                                    compare.Rollback
	RepeatsNeeded                               *int
	Conditions                                  compare.Conditions
}

type runLink struct{ Run, URL string }

// forestMetric is one metric's block of the forest plot: each arm's difference from the
// baseline.
type forestMetric struct {
	Metric, Unit, Better, Role string
	Margin                     *float64 // ± around zero, in the metric's unit, when defined
	MarginSpec                 string
	BaselineMean               string
	Arms                       []forestArm
}

type forestArm struct {
	Arm, Verdict, URL string
	Mean              string
	LowerBound        bool
	RepeatsNeeded     *int
	Diff              *compare.Interval
	Across            compare.Interval
}

type placementRow struct {
	Arm                                string
	Nodes, GPUModels, Sharing, Reasons string
}

// maxDefinitionProblems bounds the definition's problems the experiment page lists: a warning,
// not a report (GET /v1/experiments/{name} has them all).
const maxDefinitionProblems = 8

func counts(m map[string]int) string { return compare.JoinCounts(m, " ×") }

// link is u, or "" on an imported experiment's page: its runs and pods are not here.
func (v *experimentView) link(u string) string {
	if v.Imported != nil {
		return ""
	}
	return u
}

func buildExperiment(e report.ExperimentInfo, c compare.Comparison, ns string, cerr error) experimentView {
	v := experimentView{Name: e.Name, Namespace: ns, Baseline: c.Baseline, Method: c.Method, UnknownThresholds: c.UnknownThresholds,
		PrimaryMetrics: c.PrimaryMetrics, UnknownMetricWords: c.UnknownMetricWords, ThresholdsChangedAfterStart: c.ThresholdsChangedAfterStart, Alpha: c.Alpha}
	if e.Definition != nil {
		v.Change = e.Definition.Change
	}
	v.DefinitionProblems = e.DefinitionProblems
	if n := len(v.DefinitionProblems); n > maxDefinitionProblems {
		v.DefinitionProblems, v.MoreDefinitionProblems = v.DefinitionProblems[:maxDefinitionProblems], n-maxDefinitionProblems
	}
	if cerr != nil {
		v.Problem = cerr.Error()
	}
	q := nsQuery(ns)
	v.DefinitionURL = "/v1/experiments/" + url.PathEscape(e.Name)
	v.JSONURL = v.DefinitionURL + "/comparison"
	v.CSVURL = v.JSONURL + ".csv"
	if enc := q.Encode(); enc != "" {
		v.JSONURL += "?" + enc
		v.CSVURL += "?" + enc
	}
	v.Imported = e.Imported
	for _, r := range e.Runs {
		v.Runs = append(v.Runs, runLink{Run: r, URL: v.link(runURL(e.Name, r, q))})
	}
	desc := map[string]string{}
	for _, a := range definedArms(e.Definition) {
		desc[a.Name] = a.Description
	}
	byMetric := map[string]*forestMetric{}
	var order []string
	for _, a := range c.Arms {
		v.Arms = append(v.Arms, armSummary{Arm: a.Arm, Verdict: a.Verdict, Explanation: a.Explanation, Baseline: a.Baseline, Paired: a.Paired,
			Runs: a.Runs, Pods: a.Pods, Breaches: a.Breaches, Rollback: a.Rollback, RepeatsNeeded: a.RepeatsNeeded, Conditions: a.Conditions,
			URL: v.link(armURL(e.Name, a.Arm, q)), Description: desc[a.Arm]})
		for _, m := range a.Metrics {
			fm := byMetric[m.Metric]
			if fm == nil {
				fm = &forestMetric{Metric: m.Metric, Unit: m.Unit, Better: m.Better, Role: m.Role}
				byMetric[m.Metric] = fm
				order = append(order, m.Metric)
			}
			if a.Baseline {
				if m.AcrossRun.N > 0 {
					fm.BaselineMean = fmt.Sprintf("%.4g", m.AcrossRun.Mean)
				}
				continue
			}
			mq := url.Values{"metric": {m.Metric}}
			if ns != "" {
				mq.Set("namespace", ns)
			}
			fa := forestArm{Arm: a.Arm, Verdict: m.Verdict, URL: v.link(armURL(e.Name, a.Arm, mq)), Diff: m.Difference, Across: m.AcrossRun,
				LowerBound: m.LowerBound, RepeatsNeeded: m.RepeatsNeeded}
			if m.Margin != nil && fm.Margin == nil {
				mv := m.Margin.Value
				fm.Margin, fm.MarginSpec = &mv, m.Margin.Spec
			}
			if m.AcrossRun.N > 0 {
				fa.Mean = fmt.Sprintf("%.4g", m.AcrossRun.Mean)
			}
			fm.Arms = append(fm.Arms, fa)
		}
	}
	for _, name := range order {
		v.Metrics = append(v.Metrics, *byMetric[name])
	}
	for _, a := range c.Arms {
		if p := c.Placement[a.Arm]; p != nil {
			v.Placement = append(v.Placement, placementRow{Arm: a.Arm, Nodes: counts(p.Nodes), GPUModels: counts(p.GPUModels), Sharing: counts(p.Sharing), Reasons: counts(p.FailedScheduling)})
		}
	}
	v.Forest = forest(v.Metrics)
	return v
}

// forest draws each metric's block: a shared zero line, the margin band where the metric has
// one, and per arm its difference from the baseline with the 95 % interval, shaped and
// coloured by the metric's verdict. Each metric has its own scale, symmetric around zero, so
// the zero line is common; the scale's end is written at the block's right.
func forest(metrics []forestMetric) template.HTML {
	rows := 0
	for _, m := range metrics {
		rows += max(len(m.Arms), 1)
	}
	height := forestHeadH + float64(rows)*forestRowH + float64(len(metrics))*6 + 10
	x0 := forestLabelW + 10
	zero := x0 + forestPlotW/2
	var s svg
	s.f(`<svg id="forest" class="forest" viewBox="0 0 %s %s" width="100%%" role="img" aria-labelledby="forest-title">`, n(forestW), n(height))
	s.f(`<title id="forest-title">Forest plot: per metric, each arm's difference from the baseline with its 95%% interval; the table below lists the same</title>`)
	s.f(`<defs><pattern id="margin-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" class="margin-bg"/><line x1="0" y1="0" x2="0" y2="6" class="margin-line"/></pattern></defs>`)
	s.f(`<text x="4" y="18" class="muted">metric (unit, better when)</text><text x="%s" y="18" text-anchor="middle" class="muted">← arm lower · 0 = baseline · arm higher →</text><text x="%s" y="18" class="muted">arm: difference [95%% CI] · verdict</text>`,
		n(zero), n(x0+forestPlotW+20))
	y := forestHeadH
	for _, m := range metrics {
		scale := 0.0
		for _, a := range m.Arms {
			if d := a.Diff; d != nil {
				scale = max(scale, math.Abs(d.Mean))
				if d.Low != nil && d.High != nil {
					scale = max(scale, math.Abs(*d.Low), math.Abs(*d.High))
				}
			}
		}
		if m.Margin != nil {
			scale = max(scale, math.Abs(*m.Margin))
		}
		if scale == 0 || math.IsInf(scale, 0) || math.IsNaN(scale) {
			scale = 1
		}
		scale *= 1.1
		x := func(v float64) float64 { return zero + v/scale*(forestPlotW/2) }
		block := float64(max(len(m.Arms), 1)) * forestRowH
		s.f(`<g class="metric" data-metric="%s">`, esc(m.Metric))
		s.f(`<line class="block-rule" x1="0" x2="%s" y1="%s" y2="%s"/>`, n(forestW), n(y), n(y))
		role := ""
		if m.Role != "" {
			role = " · " + m.Role
		}
		s.f(`<text x="4" y="%s" class="metric-label">%s<tspan class="muted"> (%s, %s%s)</tspan></text>`, n(y+13), esc(m.Metric), esc(m.Unit), esc(m.Better), esc(role))
		if m.Margin != nil {
			mx0, mx1 := x(-math.Abs(*m.Margin)), x(math.Abs(*m.Margin))
			s.f(`<rect class="margin" x="%s" y="%s" width="%s" height="%s"><title>margin ±%.4g %s (%s): within it counts as equivalent</title></rect>`,
				n(mx0), n(y+2), n(mx1-mx0), n(block-2), math.Abs(*m.Margin), esc(m.Unit), esc(m.MarginSpec))
		}
		s.f(`<line class="zero" x1="%s" x2="%s" y1="%s" y2="%s"/>`, n(zero), n(zero), n(y), n(y+block))
		s.f(`<text x="%s" y="%s" text-anchor="end" class="scale">±%.3g</text>`, n(x0+forestPlotW), n(y+block-3), scale)
		if len(m.Arms) == 0 {
			s.f(`<text x="%s" y="%s" class="muted">no arm to compare</text>`, n(x0+forestPlotW+20), n(y+13))
		}
		for i, a := range m.Arms {
			ry := y + float64(i)*forestRowH + forestRowH/2 + 2
			label := fmt.Sprintf("%s: no interval", a.Arm)
			// An imported experiment's arms have no runs here to open (URL "").
			open, closing := `<g class="interval-link">`, "</g>"
			if a.URL != "" {
				open, closing = fmt.Sprintf(`<a href="%s" class="interval-link">`, esc(a.URL)), "</a>"
			}
			s.f("%s", open)
			if d := a.Diff; d != nil {
				label = fmt.Sprintf("%s: %+.3g", a.Arm, d.Mean)
				if d.Low != nil && d.High != nil {
					label += fmt.Sprintf(" [%.3g, %.3g]", *d.Low, *d.High)
				}
				s.f(`<g class="interval v-%s" data-interval-arm="%s" data-metric-verdict="%s">`, esc(a.Verdict), esc(a.Arm), esc(a.Verdict))
				s.f(`<title>%s — %s: %s (%s); open its runs and pods</title>`, esc(m.Metric), esc(label), esc(verdictLabel(a.Verdict)), esc(m.Unit))
				s.f(`<rect class="hit" x="%s" y="%s" width="%s" height="%s"/>`, n(x0), n(ry-forestRowH/2), n(forestPlotW), n(forestRowH))
				if d.Low != nil && d.High != nil {
					s.f(`<line class="ci" x1="%s" x2="%s" y1="%s" y2="%s"/>`, n(x(*d.Low)), n(x(*d.High)), n(ry), n(ry))
					s.f(`<line class="ci-cap" x1="%s" x2="%s" y1="%s" y2="%s"/><line class="ci-cap" x1="%s" x2="%s" y1="%s" y2="%s"/>`,
						n(x(*d.Low)), n(x(*d.Low)), n(ry-4), n(ry+4), n(x(*d.High)), n(x(*d.High)), n(ry-4), n(ry+4))
				}
				point(&s, a.Verdict, x(d.Mean), ry)
				s.f(`</g>`)
			} else {
				s.f(`<g class="interval v-none" data-interval-arm="%s" data-metric-verdict="%s"><title>%s — %s</title><rect class="hit" x="%s" y="%s" width="%s" height="%s"/></g>`,
					esc(a.Arm), esc(a.Verdict), esc(m.Metric), esc(label), n(x0), n(ry-forestRowH/2), n(forestPlotW), n(forestRowH))
			}
			s.f(`<text x="%s" y="%s" class="arm-label">%s <tspan class="verdict-text v-%s">%s</tspan></text>%s`,
				n(x0+forestPlotW+20), n(ry+4), esc(label), esc(a.Verdict), esc(verdictLabel(a.Verdict)), closing)
		}
		s.f(`</g>`)
		y += block + 6
	}
	s.f(`</svg>`)
	return template.HTML(s.String())
}

// point marks a difference: the shape as well as the colour tells the verdict (better: filled
// circle, worse: filled square, equivalent: hollow diamond, inconclusive and otherwise: hollow
// circle).
func point(s *svg, verdict string, x, y float64) {
	switch verdict {
	case "better":
		s.f(`<circle class="pt" cx="%s" cy="%s" r="4.5"/>`, n(x), n(y))
	case "worse":
		s.f(`<rect class="pt" x="%s" y="%s" width="9" height="9"/>`, n(x-4.5), n(y-4.5))
	case "equivalent":
		s.f(`<path class="pt hollow" d="M%s %sl5 5-5 5-5-5z"/>`, n(x), n(y-5))
	default:
		s.f(`<circle class="pt hollow" cx="%s" cy="%s" r="4.5"/>`, n(x), n(y))
	}
}
