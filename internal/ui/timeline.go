package ui

import (
	"cmp"
	"fmt"
	"html/template"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/report"
)

// Run timeline geometry (SVG user units; the SVG scales to the page's width).
const (
	chartW    = 1200.0
	labelW    = 250.0
	plotX0    = labelW + 10
	plotX1    = chartW - 16
	axisH     = 38.0
	groupH    = 20.0
	laneH     = 18.0
	gpuBucket = 3.0 // width of one GPU strip cell, in user units
)

// OutsideGroup is the lane group of pods preempted by the run's pods that are not its own.
const OutsideGroup = "outside the run (preempted)"

// runFilter narrows and zooms a run timeline: arm and node ("" = all) and the time window in
// seconds from the run's start (nil = the whole run).
type runFilter struct {
	Arm, Node string
	From, To  *float64
}

// runView is the run page's data.
type runView struct {
	Experiment, Run, Namespace string
	Start                      time.Time
	Arms, Nodes                []string
	Filter                     runFilter
	FromS, ToS                 string // the window shown, seconds from the start
	Chart                      template.HTML
	Pods                       []podRow
	Windows                    []windowRow
	Disruptions                []disruption
	Version                    string
	TraceURL, VersionURL       string
	ExperimentURL              string
	Zoom                       zoomLinks
	Lanes, Total               int
	Legend                     template.HTML
}

type zoomLinks struct{ In, Out, Left, Right, Reset string }

// podRow is one row of the table under the timeline.
type podRow struct {
	Group, Name, UID, Node, URL string
	Outside                     bool
	Created                     *time.Time
	Pending, Start, ModelLoad   *float64
	ToFirstSuccess              *float64
	Censored                    string
	Ended                       string
	PreemptedBy                 string
	FailedScheduling            int
	Reasons                     string
	GPUSamples                  int
}

type windowRow struct {
	Arm, Kind  string
	Start, End time.Time
	Seconds    float64
	Ready      string
}

// disruption is a mark on the time axis: a node change, a replacement pod of a disruption
// scenario, an eviction.
type disruption struct {
	N     int
	At    time.Time
	T     float64
	Kind  string
	Label string
}

// group is a set of lanes drawn together: an arm, a scenario, or the preempted outsiders.
type group struct {
	Name, Label string
	Pods        []align.Summary
	Outside     bool
}

// groups orders the run's pods: the definition's arms first, then other arms (scenarios), then
// the outsiders.
func groups(d report.RunDetail, order []string) []group {
	byArm := map[string][]align.Summary{}
	for _, p := range d.Pods {
		byArm[deref(p.Experiment.Arm)] = append(byArm[deref(p.Experiment.Arm)], p)
	}
	names := slices.Clone(order)
	for _, a := range slices.Sorted(maps.Keys(byArm)) {
		if !slices.Contains(names, a) {
			names = append(names, a)
		}
	}
	var out []group
	for _, a := range names {
		if len(byArm[a]) == 0 {
			continue
		}
		label := "arm " + a
		if s := d.Scenarios[a]; s != "" {
			label = "scenario " + s
		}
		out = append(out, group{Name: a, Label: label, Pods: byArm[a]})
	}
	if len(d.Outside) > 0 {
		out = append(out, group{Name: OutsideGroup, Label: OutsideGroup, Pods: d.Outside, Outside: true})
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// disruptions lists what happened to the run from outside its pods' own lives: node changes,
// pods created to replace others of a disruption scenario, evictions.
func disruptions(d report.RunDetail) []disruption {
	var out []disruption
	for _, c := range d.NodeChanges {
		out = append(out, disruption{At: c.At, Kind: "node", Label: fmt.Sprintf("node %s %s", c.Node, strings.ReplaceAll(c.Change, "_", " "))})
	}
	byArm := map[string][]align.Summary{}
	for _, p := range d.Pods {
		if d.Scenarios[deref(p.Experiment.Arm)] != "" {
			byArm[deref(p.Experiment.Arm)] = append(byArm[deref(p.Experiment.Arm)], p)
		}
	}
	for arm, pods := range byArm {
		for _, p := range pods {
			c := p.Milestones.Created
			if c == nil {
				continue
			}
			for _, q := range pods {
				if q.Pod.UID != p.Pod.UID && q.Milestones.Ready != nil && q.Milestones.Ready.Before(*c) &&
					(q.Milestones.Ended == nil || q.Milestones.Ended.After(*c)) {
					out = append(out, disruption{At: *c, Kind: "replacement", Label: fmt.Sprintf("%s: %s created to replace a serving pod", d.Scenarios[arm], p.Pod.Name)})
					break
				}
			}
		}
	}
	for _, p := range append(slices.Clone(d.Pods), d.Outside...) {
		if p.EndedReason != nil && *p.EndedReason == align.EndEvicted && p.Milestones.Ended != nil {
			out = append(out, disruption{At: *p.Milestones.Ended, Kind: "eviction", Label: fmt.Sprintf("pod %s evicted", p.Pod.Name)})
		}
	}
	slices.SortFunc(out, func(a, b disruption) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(a.Label, b.Label)
	})
	for i := range out {
		out[i].N = i + 1
		out[i].T = sec(d.From, out[i].At)
	}
	return out
}

// buildRun lays out a run's timeline and the tables under it.
func buildRun(d report.RunDetail, order []string, f runFilter) runView {
	v := runView{Experiment: d.Experiment, Run: d.Run, Namespace: d.Namespace, Start: d.From, Filter: f,
		Total: len(d.Pods) + len(d.Outside)}
	gs := groups(d, order)
	nodes := map[string]bool{}
	for _, g := range gs {
		if !g.Outside {
			v.Arms = append(v.Arms, g.Name)
		}
		for _, p := range g.Pods {
			if p.Pod.Node != nil {
				nodes[*p.Pod.Node] = true
			}
		}
	}
	v.Nodes = slices.Sorted(maps.Keys(nodes))
	// Filters keep the outsiders of the arms shown, so preemption arrows keep both ends.
	shown := map[string]bool{}
	var kept []group
	for _, g := range gs {
		if f.Arm != "" && !g.Outside && g.Name != f.Arm {
			continue
		}
		var pods []align.Summary
		for _, p := range g.Pods {
			if f.Node != "" && deref(p.Pod.Node) != f.Node {
				continue
			}
			if g.Outside && f.Arm != "" && !shown[deref(p.PreemptedBy)] {
				continue
			}
			pods = append(pods, p)
			shown[p.Pod.UID] = true
		}
		if len(pods) > 0 {
			g.Pods = pods
			kept = append(kept, g)
		}
	}

	span := sec(d.From, d.To)
	lo, hi := -0.02*span-0.5, span*1.02+0.5
	if f.From != nil && f.To != nil && *f.To > *f.From {
		lo, hi = *f.From, *f.To
	}
	v.FromS, v.ToS = strconv.FormatFloat(lo, 'f', 3, 64), strconv.FormatFloat(hi, 'f', 3, 64)
	v.Disruptions = disruptions(d)
	windows := map[string][]align.Window{}
	for _, a := range d.Interruptions {
		windows[a.Arm] = a.Windows
		for _, w := range a.Windows {
			row := windowRow{Arm: a.Arm, Kind: w.Kind, Start: w.Start, End: w.End, Seconds: w.Seconds}
			if w.Ready != nil && w.Desired != nil {
				row.Ready = fmt.Sprintf("%d of %d", *w.Ready, *w.Desired)
			}
			if f.Arm == "" || f.Arm == a.Arm {
				v.Windows = append(v.Windows, row)
			}
		}
	}

	c := &chart{from: d.From, lo: lo, hi: hi}
	for _, g := range kept {
		c.rows += len(g.Pods)
	}
	height := axisH + float64(len(kept))*groupH + float64(c.rows)*laneH + 12
	var s svg
	s.f(`<svg id="timeline" class="timeline" viewBox="0 0 %s %s" width="100%%" role="img" aria-labelledby="timeline-title" data-from="%s" data-to="%s" data-lanes="%d">`,
		n(chartW), n(height), v.FromS, v.ToS, c.rows)
	s.f(`<title id="timeline-title">Run %s of %s: one lane per pod, %d lanes; the table below lists the same</title>`, esc(d.Run), esc(d.Experiment), c.rows)
	s.f(`<defs><clipPath id="plot"><rect x="%s" y="0" width="%s" height="%s"/></clipPath>`, n(plotX0), n(plotX1-plotX0), n(height))
	s.f(`<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" class="hatch-bg"/><line x1="0" y1="0" x2="0" y2="6" class="hatch-line"/></pattern>`)
	s.f(`<pattern id="band" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="8" height="8" class="band-bg"/><line x1="0" y1="0" x2="0" y2="8" class="band-line"/></pattern>`)
	s.f(`<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L10 5 0 10z" class="arrowhead"/></marker></defs>`)
	c.axis(&s, height)

	y := axisH
	lanesY := map[string]float64{}
	var body svg
	for _, g := range kept {
		top := y
		body.f(`<g class="group" data-group="%s">`, esc(g.Name))
		body.f(`<text class="group-label" x="4" y="%s">%s <tspan class="muted">(%d pods)</tspan></text>`, n(y+14), esc(g.Label), len(g.Pods))
		body.f(`<line class="group-rule" x1="0" x2="%s" y1="%s" y2="%s"/>`, n(chartW), n(y+groupH-2), n(y+groupH-2))
		y += groupH
		bottom := y + float64(len(g.Pods))*laneH
		body.f(`<g clip-path="url(#plot)">`)
		for _, w := range windows[g.Name] {
			x0, x1 := c.x(w.Start), c.x(w.End)
			body.f(`<rect class="interruption" data-kind="%s" x="%s" y="%s" width="%s" height="%s"><title>%s %s → %s (%.1fs)</title></rect>`,
				esc(w.Kind), n(x0), n(top+groupH-2), n(max(x1-x0, 1)), n(bottom-top-groupH+2), esc(strings.ReplaceAll(w.Kind, "_", " ")), fmtTime(w.Start), fmtTime(w.End), w.Seconds)
		}
		body.f(`</g>`)
		for _, p := range g.Pods {
			lanesY[p.Pod.UID] = y + laneH/2
			c.lane(&body, p, y, g.Outside, false, d.FailedScheduling[p.Pod.UID], d.GPU[p.Pod.UID])
			y += laneH
		}
		body.f(`</g>`)
		for _, p := range g.Pods {
			v.Pods = append(v.Pods, row(g, p, d))
		}
	}
	s.WriteString(body.String())

	// Preemption arrows, from the preemptor's lane to the victim's at the moment of preemption.
	s.f(`<g clip-path="url(#plot)">`)
	for _, g := range kept {
		for _, p := range g.Pods {
			if p.PreemptedBy == nil || p.Milestones.Ended == nil {
				continue
			}
			y1, ok1 := lanesY[*p.PreemptedBy]
			y2, ok2 := lanesY[p.Pod.UID]
			if !ok1 || !ok2 {
				continue
			}
			x := c.x(*p.Milestones.Ended)
			bend := 18.0
			s.f(`<path class="preemption" data-preemptor="%s" data-victim="%s" d="M%s %sC%s %s %s %s %s %s" marker-end="url(#arrow)"><title>preemption at %s: %s → %s</title></path>`,
				esc(*p.PreemptedBy), esc(p.Pod.UID), n(x), n(y1), n(x+bend), n(y1), n(x+bend), n(y2), n(x+2), n(y2), fmtTime(*p.Milestones.Ended), esc(*p.PreemptedBy), esc(p.Pod.Name))
		}
	}
	for _, dm := range v.Disruptions {
		x := c.x(dm.At)
		s.f(`<g class="disruption" data-disruption="%s" data-t="%s"><line x1="%s" x2="%s" y1="%s" y2="%s"/><path d="M%s %sh12v9h-12z"/><text x="%s" y="%s">%d</text><title>%d: %s at %s</title></g>`,
			esc(dm.Kind), strconv.FormatFloat(dm.T, 'f', 6, 64), n(x), n(x), n(axisH-12), n(height-12), n(x), n(axisH-21), n(x+2.5), n(axisH-13.5), dm.N, dm.N, esc(dm.Label), fmtTime(dm.At))
	}
	s.f(`</g></svg>`)
	v.Chart = template.HTML(s.String())
	v.Lanes = c.rows
	v.Legend = legend()
	return v
}

// legend draws the timeline's symbols with the same classes as the chart, so it cannot drift
// from what the chart shows.
func legend() template.HTML {
	var s svg
	s.f(`<svg class="legend-svg" viewBox="0 0 1200 40" width="100%%" role="img" aria-labelledby="legend-title"><title id="legend-title">Legend</title>`)
	x := 4.0
	item := func(draw func(x float64), label string, w float64) {
		draw(x)
		s.f(`<text x="%s" y="14">%s</text>`, n(x+20), esc(label))
		x += w
	}
	bar := func(class string) func(float64) {
		return func(x float64) { s.f(`<rect class="bar %s" x="%s" y="5" width="16" height="8"/>`, class, n(x)) }
	}
	item(bar("pending"), "pending", 82)
	item(bar("start"), "scheduled → Running", 150)
	item(bar("load"), "Running → Ready (model load)", 200)
	item(bar("warm"), "Ready → first success", 160)
	item(func(x float64) { s.f(`<rect class="bar serving" x="%s" y="8" width="16" height="2"/>`, n(x)) }, "serving", 80)
	item(func(x float64) {
		s.f(`<rect class="gpu" x="%s" y="8" width="16" height="2.5" fill-opacity=".7"/>`, n(x))
	}, "GPU utilisation (darker = busier)", 230)
	item(func(x float64) { s.f(`<rect class="interruption" x="%s" y="2" width="16" height="14"/>`, n(x)) }, "service interruption", 150)
	x = 4
	y := 32.0
	for _, m := range []struct{ name, label string }{{"created", "created"}, {"scheduled", "scheduled"}, {"running", "running"}, {"ready", "ready"}, {"first_success", "first success"}, {"ended", "ended"}} {
		s.f(`<g transform="translate(0 22)">`)
		s.marker(m.name, x+8, 5, m.label, 0)
		s.f(`</g><text x="%s" y="%s">%s</text>`, n(x+18), n(y), esc(m.label))
		x += 28 + float64(len(m.label))*6
	}
	s.f(`<line class="fs-mark" x1="%s" x2="%s" y1="22" y2="36"/><text x="%s" y="%s">FailedScheduling</text>`, n(x+6), n(x+6), n(x+14), n(y))
	x += 124
	s.f(`<path class="open-end" d="M%s 24l5 4-5 4"/><text x="%s" y="%s">censored (open end)</text>`, n(x+4), n(x+16), n(y))
	x += 140
	s.f(`<path class="preemption" d="M%s 29h14" marker-end="url(#arrow)"/><text x="%s" y="%s">preemption (preemptor → victim)</text>`, n(x), n(x+22), n(y))
	x += 215
	s.f(`<g class="disruption"><path d="M%s 22h12v9h-12z"/></g><text x="%s" y="%s">disruption (numbered; table below)</text>`, n(x), n(x+18), n(y))
	s.f(`</svg>`)
	return template.HTML(s.String())
}

// chart maps times to x for one window [lo, hi] seconds from `from`.
type chart struct {
	from   time.Time
	lo, hi float64
	rows   int
}

func (c *chart) x(t time.Time) float64 {
	return plotX0 + (sec(c.from, t)-c.lo)/(c.hi-c.lo)*(plotX1-plotX0)
}

func (c *chart) axis(s *svg, height float64) {
	s.f(`<g class="axis" aria-hidden="true">`)
	for _, t := range ticks(c.lo, c.hi, 8) {
		if t < c.lo || t > c.hi {
			continue
		}
		x := plotX0 + (t-c.lo)/(c.hi-c.lo)*(plotX1-plotX0)
		at := c.from.Add(time.Duration(t * float64(time.Second)))
		s.f(`<line class="tick" x1="%s" x2="%s" y1="%s" y2="%s"/><text x="%s" y="%s" text-anchor="middle">%s<title>%s</title></text>`,
			n(x), n(x), n(axisH-4), n(height-12), n(x), n(axisH-26), esc(fmtOffset(t, c.hi-c.lo)), fmtTime(at))
	}
	s.f(`<text x="4" y="%s" class="muted">pod · node</text>`, n(axisH-26))
	s.f(`</g>`)
}

// lane draws one pod: its phases as bars (pending hatched, start, model load, ready → first
// success, then a thin serving line), a marker per milestone, FailedScheduling ticks, an open
// end when censored, and the GPU utilisation strip.
func (c *chart) lane(s *svg, p align.Summary, y float64, outside, detail bool, failures []report.SchedulingFailure, gpu []report.GPUPoint) {
	m := p.Milestones
	attrs := fmt.Sprintf(`class="lane" data-pod-uid="%s" data-node="%s"`, esc(p.Pod.UID), esc(deref(p.Pod.Node)))
	if len(p.Censored) > 0 {
		attrs += fmt.Sprintf(` data-censored="%s"`, esc(strings.Join(p.Censored, " ")))
	}
	if outside {
		attrs += ` data-outside=""`
	}
	s.f(`<g %s>`, attrs)
	name := p.Pod.Name
	if len(name) > 34 {
		name = name[:33] + "…"
	}
	summary := fmt.Sprintf("%s on %s", p.Pod.Name, cmp.Or(deref(p.Pod.Node), "no node"))
	if len(p.Censored) > 0 {
		summary += "; censored before " + strings.Join(p.Censored, ", ")
	}
	if p.EndedReason != nil {
		summary += "; ended: " + *p.EndedReason
	}
	if d := p.Durations; d.Pending != nil || d.Start != nil || d.ModelLoad != nil {
		summary += fmt.Sprintf("; pending %s s, start %s s, model load %s s, ready → first success %s s", fmtSecs(d.Pending), fmtSecs(d.Start), fmtSecs(d.ModelLoad), fmtSecs(d.ReadyToFirstSuccess))
	}
	s.f(`<a href="%s"><title>%s</title><rect class="lane-hit" x="0" y="%s" width="%s" height="%s"/>`, esc(podURL(p.Pod.UID)), esc(summary), n(y), n(chartW), n(laneH))
	s.f(`<text class="pod-label" x="10" y="%s">%s<tspan class="muted"> · %s</tspan></text></a>`, n(y+12.5), esc(name), esc(cmp.Or(deref(p.Pod.Node), "—")))
	// Coordinates are clamped to the plot rather than clipped: a clip path per lane costs a
	// large run more than everything else drawn.
	in := func(x float64) bool { return x >= plotX0-0.01 && x <= plotX1+0.01 }
	end := p.ObservedUntil
	if m.Ended != nil {
		end = m.Ended
	}
	steps := []struct {
		at    *time.Time
		class string
	}{{m.Created, "pending"}, {m.Scheduled, "start"}, {m.Running, "load"}, {m.Ready, "warm"}, {m.FirstSuccess, "serving"}}
	if steps[0].at == nil {
		steps[0].at = cmp.Or(m.FirstUnschedulable, m.Scheduled)
	}
	by := y + 4
	open := false
	for i := 0; i < len(steps) && steps[i].at != nil && end != nil; i++ {
		var to *time.Time
		if i+1 < len(steps) {
			to = steps[i+1].at
		}
		if to == nil {
			to = end
			open = i+1 < len(steps)
		}
		x0, x1 := max(c.x(*steps[i].at), plotX0), min(c.x(*to), plotX1)
		switch {
		case x1 < x0:
		case steps[i].class == "serving":
			s.f(`<rect class="bar serving" x="%s" y="%s" width="%s" height="2"/>`, n(x0), n(by+3), n(max(x1-x0, 0.5)))
		default:
			s.f(`<rect class="bar %s" x="%s" y="%s" width="%s" height="8"/>`, steps[i].class, n(x0), n(by), n(max(x1-x0, 0.5)))
		}
		if open {
			if in(c.x(*to)) {
				s.f(`<path class="open-end" data-open-end="" d="M%s %sl5 4-5 4"/>`, n(x1+1), n(by))
			}
			break
		}
	}
	for _, f := range failures {
		x := c.x(f.At)
		if !in(x) {
			continue
		}
		s.f(`<line class="fs-mark" data-failed-scheduling="" x1="%s" x2="%s" y1="%s" y2="%s"><title>FailedScheduling %s: %s</title></line>`, n(x), n(x), n(y+1), n(y+laneH-3), fmtTime(f.At), esc(f.Note))
	}
	my := by + 4
	for _, ms := range []struct {
		name string
		at   *time.Time
	}{{"created", m.Created}, {"scheduled", m.Scheduled}, {"running", m.Running}, {"ready", m.Ready}, {"first_success", m.FirstSuccess}, {"ended", m.Ended}} {
		if ms.at == nil || !in(c.x(*ms.at)) {
			continue
		}
		title := fmt.Sprintf("%s %s", strings.ReplaceAll(ms.name, "_", " "), fmtTime(*ms.at))
		if ms.name == "ended" && p.EndedReason != nil {
			title += " (" + *p.EndedReason + ")"
		}
		if !detail {
			title = "" // the lane's title and the table say it; a title per marker costs a large run dearly
		}
		s.marker(ms.name, c.x(*ms.at), my, title, sec(c.from, *ms.at))
	}
	c.gpuStrip(s, gpu, y+laneH-3, detail)
	s.f(`</g>`)
}

// gpuStrip draws GPU utilisation under a lane, shaded by utilisation: one cell per sample
// (lasting until the next, at most 30 s), or, when samples are denser than gpuBucket units, one
// cell per bucket with the mean of its samples.
func (c *chart) gpuStrip(s *svg, gpu []report.GPUPoint, y float64, detail bool) {
	type cell struct{ x0, x1, sum, n float64 }
	var cells []cell
	for i, g := range gpu {
		next := g.At.Add(5 * time.Second)
		if i+1 < len(gpu) && gpu[i+1].At.Sub(g.At) < 30*time.Second {
			next = gpu[i+1].At
		}
		x0, x1 := max(c.x(g.At), plotX0), min(c.x(next), plotX1)
		if x1 <= x0 {
			continue
		}
		if k := len(cells) - 1; k >= 0 && cells[k].x1-cells[k].x0 < gpuBucket {
			cells[k].x1, cells[k].sum, cells[k].n = x1, cells[k].sum+g.Util, cells[k].n+1
			continue
		}
		cells = append(cells, cell{x0, x1, g.Util, 1})
	}
	for _, k := range cells {
		u := k.sum / k.n
		title := ""
		if detail {
			title = fmt.Sprintf("<title>GPU %.0f%%</title>", u)
		}
		s.f(`<rect class="gpu" x="%s" y="%s" width="%s" height="2.5" fill-opacity="%s">%s</rect>`,
			n(k.x0), n(y), n(k.x1-k.x0), strconv.FormatFloat(0.1+0.9*u/100, 'f', 2, 64), title)
	}
}

func row(g group, p align.Summary, d report.RunDetail) podRow {
	r := podRow{Group: g.Name, Name: p.Pod.Name, UID: p.Pod.UID, Node: deref(p.Pod.Node), URL: podURL(p.Pod.UID), Outside: g.Outside,
		Created: p.Milestones.Created, Pending: p.Durations.Pending, Start: p.Durations.Start, ModelLoad: p.Durations.ModelLoad,
		ToFirstSuccess: p.Durations.ReadyToFirstSuccess, Censored: strings.Join(p.Censored, ", "), Ended: deref(p.EndedReason),
		PreemptedBy: deref(p.PreemptedBy), FailedScheduling: p.Counts.FailedScheduling, GPUSamples: len(d.GPU[p.Pod.UID])}
	notes := map[string]bool{}
	var list []string
	for _, f := range d.FailedScheduling[p.Pod.UID] {
		if !notes[f.Note] {
			notes[f.Note] = true
			list = append(list, f.Note)
		}
	}
	r.Reasons = strings.Join(list, " | ")
	return r
}

// zoom builds the links that zoom and pan the window [lo, hi] of a run page's query q.
func zoom(base string, q url.Values, lo, hi float64) zoomLinks {
	link := func(a, b float64) string {
		qq := url.Values{}
		maps.Copy(qq, q)
		qq.Set("from", strconv.FormatFloat(a, 'f', 3, 64))
		qq.Set("to", strconv.FormatFloat(b, 'f', 3, 64))
		return base + "?" + qq.Encode()
	}
	mid, half := (lo+hi)/2, (hi-lo)/2
	reset := url.Values{}
	maps.Copy(reset, q)
	reset.Del("from")
	reset.Del("to")
	r := base
	if e := reset.Encode(); e != "" {
		r += "?" + e
	}
	return zoomLinks{
		In: link(mid-half/2, mid+half/2), Out: link(mid-half*2, mid+half*2),
		Left: link(lo-half/2, hi-half/2), Right: link(lo+half/2, hi+half/2), Reset: r,
	}
}
