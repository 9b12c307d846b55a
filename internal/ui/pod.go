package ui

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/report"
)

// maxPlotted bounds the requests drawn in the latency chart (every k-th beyond it; the tables
// count all of them).
const maxPlotted = 3000

// podView is the pod page's data.
type podView struct {
	Summary      align.Summary
	Milestones   []milestoneRow
	Chart        template.HTML
	Requests     template.HTML
	GPUChart     template.HTML
	ErrorClasses []classRow
	Latency      []classRow
	RequestCount int
	Plotted      int
	GPU          []report.GPUPoint
	Events       []eventRow
	Interruption []windowRow
	Arm, Run     string
}

type milestoneRow struct {
	Name   string
	At     *time.Time
	Offset string
}

type classRow struct {
	Class string
	Count int
	Value string
}

type eventRow struct {
	At                         time.Time
	Kind, What, Detail, Source string
}

func buildPod(tl align.Timeline, s report.PodSeries) podView {
	v := podView{Summary: tl.Summary, GPU: s.GPU, RequestCount: len(s.Requests), Arm: deref(tl.Experiment.Arm), Run: deref(tl.Experiment.Run)}
	m := tl.Milestones
	origin := cmp.Or(m.Created, m.FirstUnschedulable, m.Scheduled)
	if origin == nil && len(tl.Events) > 0 {
		origin = &tl.Events[0].OccurredAt
	}
	if origin == nil {
		t := time.Time{}
		origin = &t
	}
	for _, ms := range []struct {
		name string
		at   *time.Time
	}{{"created", m.Created}, {"gated", m.Gated}, {"first_unschedulable", m.FirstUnschedulable}, {"claim_allocated", m.ClaimAllocated},
		{"scheduled", m.Scheduled}, {"running", m.Running}, {"ready", m.Ready}, {"first_success", m.FirstSuccess}, {"ended", m.Ended}} {
		r := milestoneRow{Name: ms.name, At: ms.at, Offset: "censored"}
		switch {
		case ms.at != nil:
			r.Offset = fmt.Sprintf("+%.3fs", ms.at.Sub(*origin).Seconds())
		case ms.name == "gated" || ms.name == "claim_allocated":
			continue // a pod never gated, or without claims: nothing to show
		case ms.name == "first_unschedulable" || ms.name == "ended":
			r.Offset = "–"
		}
		v.Milestones = append(v.Milestones, r)
	}
	for _, w := range tl.Interruptions {
		row := windowRow{Arm: v.Arm, Kind: w.Kind, Start: w.Start, End: w.End, Seconds: w.Seconds}
		if w.Ready != nil && w.Desired != nil {
			row.Ready = fmt.Sprintf("%d of %d", *w.Ready, *w.Desired)
		}
		v.Interruption = append(v.Interruption, row)
	}
	var failures []report.SchedulingFailure
	for _, e := range tl.Events {
		row := eventRow{At: e.OccurredAt, Kind: string(e.Kind), Source: e.Source}
		switch e.Kind {
		case events.KindK8sEvent:
			var k events.K8sEvent
			if json.Unmarshal(e.Data, &k) == nil {
				row.What, row.Detail = k.Reason, k.Note
				if k.Count > 1 {
					row.What += fmt.Sprintf(" (×%d)", k.Count)
				}
				if k.Reason == events.ReasonFailedScheduling || k.Reason == events.ReasonUnschedulable {
					failures = append(failures, report.SchedulingFailure{At: e.OccurredAt, Note: k.Note})
				}
			}
		case events.KindPodStatus:
			var p events.PodStatus
			if json.Unmarshal(e.Data, &p) == nil {
				row.What, row.Detail = snapshotSummary(p)
			}
		default:
			row.Detail = string(e.Data)
		}
		v.Events = append(v.Events, row)
	}

	// The span drawn: from the origin to the end of everything known about the pod.
	end := *origin
	for _, t := range []*time.Time{m.Ended, tl.ObservedUntil} {
		if t != nil && t.After(end) {
			end = *t
		}
	}
	if len(s.Requests) > 0 && s.Requests[len(s.Requests)-1].At.After(end) {
		end = s.Requests[len(s.Requests)-1].At
	}
	if len(s.GPU) > 0 && s.GPU[len(s.GPU)-1].At.After(end) {
		end = s.GPU[len(s.GPU)-1].At
	}
	span := end.Sub(*origin).Seconds()
	c := &chart{from: *origin, lo: -0.03*span - 0.5, hi: span*1.03 + 0.5}

	// The pod's lane, drawn as on the run page but larger, with the arm's interruption bands.
	var sv svg
	h := axisH + laneH + 26
	sv.f(`<svg id="pod-timeline" class="timeline pod" viewBox="0 0 %s %s" width="100%%" role="img" aria-labelledby="pod-title">`, n(chartW), n(h))
	sv.f(`<title id="pod-title">Timeline of pod %s; the milestone table below lists the same</title>`, esc(tl.Pod.Name))
	sv.f(`<defs><clipPath id="plot"><rect x="%s" y="0" width="%s" height="%s"/></clipPath><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" class="hatch-bg"/><line x1="0" y1="0" x2="0" y2="6" class="hatch-line"/></pattern><pattern id="band" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="8" height="8" class="band-bg"/><line x1="0" y1="0" x2="0" y2="8" class="band-line"/></pattern></defs>`,
		n(plotX0), n(plotX1-plotX0), n(h))
	c.axis(&sv, h)
	sv.f(`<g clip-path="url(#plot)">`)
	for _, w := range tl.Interruptions {
		x0, x1 := c.x(w.Start), c.x(w.End)
		sv.f(`<rect class="interruption" data-kind="%s" x="%s" y="%s" width="%s" height="%s"><title>%s (%.1fs)</title></rect>`,
			esc(w.Kind), n(x0), n(axisH), n(max(x1-x0, 1)), n(laneH+4), esc(strings.ReplaceAll(w.Kind, "_", " ")), w.Seconds)
	}
	sv.f(`</g>`)
	c.lane(&sv, tl.Summary, axisH+2, false, true, failures, s.GPU)
	sv.f(`</svg>`)
	v.Chart = template.HTML(sv.String())

	v.Requests, v.Plotted = requestChart(c, s.Requests)
	v.GPUChart = gpuChart(c, s.GPU)
	classes := map[string]int{}
	var okCount int
	for _, r := range s.Requests {
		if r.OK {
			okCount++
			continue
		}
		classes[errorClass(r)]++
	}
	if okCount > 0 {
		v.ErrorClasses = append(v.ErrorClasses, classRow{Class: "ok", Count: okCount})
	}
	for _, k := range slices.Sorted(maps.Keys(classes)) {
		v.ErrorClasses = append(v.ErrorClasses, classRow{Class: k, Count: classes[k]})
	}
	if r := tl.Requests; r != nil {
		for _, q := range slices.Sorted(maps.Keys(r.LatencyMS)) {
			v.Latency = append(v.Latency, classRow{Class: q, Value: fmt.Sprintf("%.1f ms", r.LatencyMS[q])})
		}
	}
	return v
}

func errorClass(r report.Request) string {
	switch {
	case r.Error != "":
		return r.Error
	case r.Status != 0:
		return fmt.Sprintf("http_%d", r.Status)
	}
	return "error"
}

// snapshotSummary says what a pod snapshot shows: its phase and node, then its conditions and
// containers.
func snapshotSummary(p events.PodStatus) (string, string) {
	what := p.Phase
	if p.Deleted {
		what += " (deleted)"
	} else if p.DeletionTimestamp != nil {
		what += " (terminating)"
	}
	var parts []string
	if p.NodeName != "" {
		parts = append(parts, "node "+p.NodeName)
	}
	if p.NominatedNodeName != "" {
		parts = append(parts, "nominated "+p.NominatedNodeName)
	}
	for _, c := range p.Conditions {
		s := c.Type + "=" + c.Status
		if c.Reason != "" {
			s += " (" + c.Reason + ")"
		}
		parts = append(parts, s)
	}
	for _, c := range p.Containers {
		s := fmt.Sprintf("%s %s ready=%v restarts=%d", c.Name, c.State, c.Ready, c.RestartCount)
		if c.Reason != "" {
			s += " " + c.Reason
		}
		parts = append(parts, s)
	}
	if g := p.GPU; g != nil && g.Model != "" {
		parts = append(parts, fmt.Sprintf("GPU %s %s", g.Model, g.Sharing))
	}
	return what, strings.Join(parts, "; ")
}

// requestChart plots each request's latency over time: successes as circles, failures as
// crosses on the bottom row, on the pod timeline's time axis.
func requestChart(c *chart, reqs []report.Request) (template.HTML, int) {
	if len(reqs) == 0 {
		return "", 0
	}
	step := max(1, (len(reqs)+maxPlotted-1)/maxPlotted)
	top := 0.0
	for _, r := range reqs {
		if r.OK {
			top = max(top, r.LatencyMS)
		}
	}
	if top == 0 {
		top = 1
	}
	top *= 1.1
	const h, y0, y1 = 170.0, 10.0, 140.0
	var s svg
	s.f(`<svg id="requests" class="chart" viewBox="0 0 %s %s" width="100%%" role="img" aria-labelledby="requests-title">`, n(chartW), n(h))
	s.f(`<title id="requests-title">Request latency over time (successes as circles, failures as crosses at the bottom); the tables list the counts</title>`)
	s.f(`<defs><clipPath id="plot-requests"><rect x="%s" y="0" width="%s" height="%s"/></clipPath></defs>`, n(plotX0-4), n(plotX1-plotX0+8), n(h))
	for _, t := range ticks(0, top, 4) {
		y := y1 - t/top*(y1-y0)
		s.f(`<line class="tick" x1="%s" x2="%s" y1="%s" y2="%s"/><text x="%s" y="%s" text-anchor="end">%.0f ms</text>`, n(plotX0), n(plotX1), n(y), n(y), n(plotX0-6), n(y+4), t)
	}
	s.f(`<text x="%s" y="%s" text-anchor="end">failed</text>`, n(plotX0-6), n(h-8))
	s.f(`<g clip-path="url(#plot-requests)">`)
	plotted := 0
	for i := 0; i < len(reqs); i += step {
		r := reqs[i]
		x := c.x(r.At)
		plotted++
		if r.OK {
			s.f(`<circle class="req ok" cx="%s" cy="%s" r="2.2"/>`, n(x), n(y1-r.LatencyMS/top*(y1-y0)))
		} else {
			s.f(`<path class="req err" d="M%s %sl5 5m0-5l-5 5"><title>%s</title></path>`, n(x-2.5), n(h-14), esc(errorClass(r)))
		}
	}
	s.f(`</g></svg>`)
	return template.HTML(s.String()), plotted
}

// gpuChart plots GPU utilisation (0–100 %) over time as a line.
func gpuChart(c *chart, gpu []report.GPUPoint) template.HTML {
	if len(gpu) == 0 {
		return ""
	}
	const h, y0, y1 = 110.0, 8.0, 96.0
	var s svg
	s.f(`<svg id="gpu" class="chart" viewBox="0 0 %s %s" width="100%%" role="img" aria-labelledby="gpu-title">`, n(chartW), n(h))
	s.f(`<title id="gpu-title">GPU utilisation over time; the table below lists the samples</title>`)
	s.f(`<defs><clipPath id="plot-gpu"><rect x="%s" y="0" width="%s" height="%s"/></clipPath></defs>`, n(plotX0-4), n(plotX1-plotX0+8), n(h))
	for _, t := range []float64{0, 50, 100} {
		y := y1 - t/100*(y1-y0)
		s.f(`<line class="tick" x1="%s" x2="%s" y1="%s" y2="%s"/><text x="%s" y="%s" text-anchor="end">%.0f%%</text>`, n(plotX0), n(plotX1), n(y), n(y), n(plotX0-6), n(y+4), t)
	}
	var d strings.Builder
	for i, g := range gpu {
		op := "L"
		if i == 0 {
			op = "M"
		}
		fmt.Fprintf(&d, "%s%s %s", op, n(c.x(g.At)), n(y1-g.Util/100*(y1-y0)))
	}
	s.f(`<g clip-path="url(#plot-gpu)"><path class="gpu-line" d="%s"/>`, d.String())
	for _, g := range gpu {
		s.f(`<circle class="gpu-pt" cx="%s" cy="%s" r="2"><title>%s: %.0f%%</title></circle>`, n(c.x(g.At)), n(y1-g.Util/100*(y1-y0)), fmtTime(g.At), g.Util)
	}
	s.f(`</g></svg>`)
	return template.HTML(s.String())
}
