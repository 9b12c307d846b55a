package ui

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/report"
)

// Swimlane chart geometry (SVG user units; the SVG scales to the page's width). ui.js knows the
// plot's x range.
const (
	chartW    = 1200.0
	labelW    = 250.0
	plotX0    = labelW + 10
	plotX1    = chartW - 16
	axisH     = 38.0
	groupH    = 20.0
	laneH     = 18.0
	gpuBucket = 3.0 // width of one GPU strip cell, in user units
	// laneBytes is about what a lane's markup takes (2.7 kB at 5,000 pods with GPU strips), to
	// size the chart's buffer once.
	laneBytes = 3 << 10
	// placeholderBytes is about what a chunk's placeholder takes.
	placeholderBytes = 512
)

// group is a set of lanes drawn together: an arm, a revision, or the preempted outsiders.
type group struct {
	Name, Label string
	// Hook is the group's own data-* attribute (name="value", escaped), e.g. data-revision.
	Hook    string
	Pods    []align.Summary
	Outside bool
	// Windows are service interruptions drawn as hatched bands behind the group's lanes.
	Windows []align.Window
}

// lanes is a swimlane chart: groups of pod lanes on one time axis, with interruption windows,
// preemption arrows, numbered disruptions and node changes. The run page and the workload page
// draw theirs with it.
type lanes struct {
	// Title says what the chart shows (the SVG's <title>).
	Title string
	// Attrs are extra attributes of the <svg> (escaped).
	Attrs  string
	Chart  *chart
	Groups []group
	// Windows are interruptions drawn as hatched bands behind every lane (the workload's own).
	Windows []align.Window
	// Marks are the disruptions: a numbered flag at each start; with Bands, also a translucent
	// band from its start to its end (or the chart's end while it lasts).
	Marks []mark
	Bands bool
	// Nodes are node changes, drawn as small ticks on the axis.
	Nodes            []report.NodeChange
	FailedScheduling map[string][]report.SchedulingFailure
	GPU              map[string][]report.GPUPoint
	// Chunk, when set, virtualises the lanes: each group's lanes are drawn in chunks of Chunk,
	// only those that overlap Live inline; every other chunk is a placeholder of its height
	// linking to ChunkURL (the page with that chunk drawn inline, for a browser without
	// script). ui.js fetches every chunk's lanes from LanesURL (inertChunks) once the page has
	// drawn, and draws a chunk into its placeholder as it nears the screen.
	Chunk    int
	Live     laneRange
	ChunkURL func(laneRange) string
	LanesURL string
}

// laneChunk is a chunk of a group's lanes: lanes r of the chart, y the top of its first lane.
type laneChunk struct {
	r     laneRange
	group int
	pods  []align.Summary
	y     float64
}

// chunks lays out the chart's chunks of lanes, down the chart (none when Chunk is unset).
func (l lanes) chunks() []laneChunk {
	if l.Chunk <= 0 {
		return nil
	}
	var out []laneChunk
	y, i := axisH, 0 // i: lanes so far
	for gi, g := range l.Groups {
		y += groupH
		for k := 0; k < len(g.Pods); k += l.Chunk {
			pods := g.Pods[k:min(k+l.Chunk, len(g.Pods))]
			out = append(out, laneChunk{laneRange{i + k + 1, i + k + len(pods)}, gi, pods, y})
			y += float64(len(pods)) * laneH
		}
		i += len(g.Pods)
	}
	return out
}

// laneRange is lanes From to To of a chart, counted from 1 down the chart, both included.
type laneRange struct{ From, To int }

func (r laneRange) String() string { return strconv.Itoa(r.From) + "-" + strconv.Itoa(r.To) }

func (r laneRange) overlaps(o laneRange) bool { return r.From <= o.To && o.From <= r.To }

// draw renders the chart as <svg id="timeline">, with the number of lanes in it (inline or
// in a chunk's placeholder).
func (l lanes) draw() (template.HTML, int) {
	c := l.Chart
	rows := 0
	for _, g := range l.Groups {
		rows += len(g.Pods)
	}
	c.rows = rows
	height := axisH + float64(len(l.Groups))*groupH + float64(rows)*laneH + 12
	// The chart is mostly the lanes drawn inline and the placeholders of the others: its builder
	// is grown once, not copied as it doubles.
	cs := l.chunks()
	size, attrs := laneBytes*(rows+10), l.Attrs
	if len(cs) > 0 {
		inline := 0
		for _, ch := range cs {
			if ch.r.overlaps(l.Live) {
				inline += len(ch.pods)
			}
		}
		if inline < rows && l.LanesURL != "" {
			attrs += fmt.Sprintf(` data-lanes-url="%s"`, esc(l.LanesURL))
		}
		size = laneBytes*(inline+10) + placeholderBytes*len(cs)
	}
	var s svg
	s.Grow(size)
	s.f(`<svg id="timeline" class="timeline" viewBox="0 0 %s %s" width="100%%" role="img" aria-labelledby="timeline-title" data-from="%s" data-to="%s" data-lanes="%d"%s>`,
		n(chartW), n(height), strconv.FormatFloat(c.lo, 'f', 3, 64), strconv.FormatFloat(c.hi, 'f', 3, 64), rows, attrs)
	s.f(`<title id="timeline-title">%s</title>`, esc(l.Title))
	s.f(`<defs><clipPath id="plot"><rect x="%s" y="0" width="%s" height="%s"/></clipPath>`, n(plotX0), n(plotX1-plotX0), n(height))
	s.f(`<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" class="hatch-bg"/><line x1="0" y1="0" x2="0" y2="6" class="hatch-line"/></pattern>`)
	s.f(`<pattern id="band" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="8" height="8" class="band-bg"/><line x1="0" y1="0" x2="0" y2="8" class="band-line"/></pattern>`)
	s.f(`<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L10 5 0 10z" class="arrowhead"/></marker></defs>`)
	c.axis(&s, height)

	// Behind the lanes: the whole chart's interruptions, then the disruptions' bands.
	s.f(`<g clip-path="url(#plot)">`)
	for _, w := range l.Windows {
		c.window(&s, w, axisH, height-12-axisH)
	}
	if l.Bands {
		for _, m := range l.Marks {
			end := c.at(c.hi)
			if m.End != nil {
				end = *m.End
			}
			x0, x1 := c.x(m.Start), c.x(end)
			s.f(`<rect class="disruption-band" data-disruption-band="%s" x="%s" y="%s" width="%s" height="%s"/>`,
				esc(m.ID), n(x0), n(axisH-4), n(max(x1-x0, 1.5)), n(height-12-axisH+4))
		}
	}
	s.f(`</g>`)

	y := axisH
	lanesY := map[string]float64{}
	for gi, g := range l.Groups {
		top := y
		hook := ""
		if g.Hook != "" {
			hook = " " + g.Hook
		}
		s.f(`<g class="group" data-group="%s"%s>`, esc(g.Name), hook)
		s.f(`<text class="group-label" x="4" y="%s">%s <tspan class="muted">(%d pods)</tspan></text>`, n(y+14), esc(g.Label), len(g.Pods))
		s.f(`<line class="group-rule" x1="0" x2="%s" y1="%s" y2="%s"/>`, n(chartW), n(y+groupH-2), n(y+groupH-2))
		y += groupH
		if len(g.Windows) > 0 {
			s.f(`<g clip-path="url(#plot)">`)
			for _, w := range g.Windows {
				c.window(&s, w, top+groupH-2, float64(len(g.Pods))*laneH+2)
			}
			s.f(`</g>`)
		}
		if l.Chunk <= 0 {
			for _, p := range g.Pods {
				lanesY[p.Pod.UID] = y + laneH/2
				c.lane(&s, p, y, g.Outside, false, l.FailedScheduling[p.Pod.UID], l.GPU[p.Pod.UID])
				y += laneH
			}
		}
		for ; len(cs) > 0 && cs[0].group == gi; cs = cs[1:] {
			ch := cs[0]
			for j, p := range ch.pods {
				lanesY[p.Pod.UID] = ch.y + float64(j)*laneH + laneH/2
			}
			y = ch.y + float64(len(ch.pods))*laneH
			if !ch.r.overlaps(l.Live) {
				l.placeholder(&s, ch)
				continue
			}
			s.f(`<g class="lane-chunk" id="lanes-%d" data-lanes="%s">`, ch.r.From, ch.r)
			l.chunkLanes(&s, ch)
			s.f(`</g>`)
		}
		s.f(`</g>`)
	}

	// Preemption arrows, from the preemptor's lane to the victim's at the moment of preemption.
	s.f(`<g clip-path="url(#plot)">`)
	for _, g := range l.Groups {
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
	for _, nc := range l.Nodes {
		x := c.x(nc.At)
		s.f(`<path class="node-change" data-node-change="%s" data-node="%s" d="M%s %sl-4 -7h8z"><title>node %s %s at %s</title></path>`,
			esc(nc.Change), esc(nc.Node), n(x), n(axisH-3), esc(nc.Node), esc(strings.ReplaceAll(nc.Change, "_", " ")), fmtTime(nc.At))
	}
	for _, cl := range clusters(c, l.Marks) {
		for i, m := range cl {
			x := c.x(m.Start)
			attrs := fmt.Sprintf(`class="disruption" data-disruption="%s" data-disruption-kind="%s" data-t="%s"`,
				esc(m.ID), esc(m.Kind), strconv.FormatFloat(sec(c.from, m.Start), 'f', 6, 64))
			if m.Interruption != nil {
				attrs += fmt.Sprintf(` data-interruption-seconds="%s"`, strconv.FormatFloat(*m.Interruption, 'f', 3, 64))
			}
			title := fmt.Sprintf("%d: %s at %s", m.N, m.Label, fmtTime(m.Start))
			if i > 0 { // under its cluster's flag: a tick on the axis
				s.f(`<g %s><line x1="%s" x2="%s" y1="%s" y2="%s"/><title>%s</title></g>`, attrs, n(x), n(x), n(axisH-12), n(axisH-3), esc(title))
				continue
			}
			label, w := strconv.Itoa(m.N), flagWidth(m.N, cl[len(cl)-1].N)
			if len(cl) > 1 {
				label = fmt.Sprintf("%d–%d", m.N, cl[len(cl)-1].N)
				title = fmt.Sprintf("%s: %d disruptions from %s to %s; the table lists each", label, len(cl), fmtTime(m.Start), fmtTime(cl[len(cl)-1].Start))
			}
			s.f(`<g %s><line x1="%s" x2="%s" y1="%s" y2="%s"/><path d="M%s %sh%sv9h-%sz"/><text x="%s" y="%s">%s</text>`,
				attrs, n(x), n(x), n(axisH-12), n(height-12), n(x), n(axisH-21), n(w), n(w), n(x+2.5), n(axisH-13.5), label)
			if l.Bands && len(cl) == 1 {
				s.f(`<text class="disruption-label" x="%s" y="%s">%s</text>`, n(x+w+3), n(axisH-13.5), esc(strings.ReplaceAll(m.Kind, "_", " ")))
			}
			s.f(`<title>%s</title></g>`, esc(title))
		}
	}
	s.f(`</g></svg>`)
	return template.HTML(s.String()), rows
}

// chunkLanes draws the lanes of chunk ch.
func (l lanes) chunkLanes(s *svg, ch laneChunk) {
	outside := l.Groups[ch.group].Outside
	for j, p := range ch.pods {
		l.Chart.lane(s, p, ch.y+float64(j)*laneH, outside, false, l.FailedScheduling[p.Pod.UID], l.GPU[p.Pod.UID])
	}
}

// inertChunks draws every chunk's lanes as inert markup, for ui.js to draw into the chart's
// placeholders (the answer to LanesURL): a script of another type is neither run nor shown, and
// its text is not parsed into elements. Every value in it went through esc, so its only tags are
// the lanes' own and nothing in it ends the script.
func (l lanes) inertChunks() []byte {
	cs := l.chunks()
	rows := 0
	for _, ch := range cs {
		rows += len(ch.pods)
	}
	var s svg
	s.Grow(laneBytes * (rows + 10))
	for _, ch := range cs {
		s.f(`<script type="text/x-schedlens-lanes" data-lanes="%s">`, ch.r)
		l.chunkLanes(&s, ch)
		s.f(`</script>`)
	}
	return []byte(s.String())
}

// leavesInert says whether draw leaves a chunk of lanes to the script (or to another page).
func (l lanes) leavesInert() bool {
	for _, ch := range l.chunks() {
		if !ch.r.overlaps(l.Live) {
			return true
		}
	}
	return false
}

// placeholder stands for a chunk of lanes not drawn inline: a box of their height linking to
// the page that draws them, naming the first and last pod.
func (l lanes) placeholder(s *svg, ch laneChunk) {
	r, pods := ch.r, ch.pods
	s.f(`<g class="lane-chunk" id="lanes-%d" data-lanes="%s" data-pending="">`, r.From, r)
	s.f(`<a href="%s#lanes-%d"><rect class="chunk-hit" x="0" y="%s" width="%s" height="%s"/>`, esc(l.ChunkURL(r)), r.From, n(ch.y), n(chartW), n(float64(len(pods))*laneH))
	s.f(`<text class="chunk-label" x="10" y="%s">lanes %d–%d: %s … %s (open)</text></a></g>`,
		n(ch.y+12.5), r.From, r.To, esc(pods[0].Pod.Name), esc(pods[len(pods)-1].Pod.Name))
}

// clusters groups the marks (in time order) whose flags would overlap: each cluster is drawn
// as one flag numbered first–last, its other marks as ticks under it.
func clusters(c *chart, ms []mark) [][]mark {
	var out [][]mark
	for _, m := range ms {
		if k := len(out) - 1; k >= 0 {
			cl := out[k]
			if c.x(m.Start) < c.x(cl[0].Start)+flagWidth(cl[0].N, m.N)+2 {
				out[k] = append(cl, m)
				continue
			}
		}
		out = append(out, []mark{m})
	}
	return out
}

// flagWidth is the width of the flag of the marks numbered first to last: its number, or
// first–last, at 5 units a digit.
func flagWidth(first, last int) float64 {
	if first == last {
		return max(12, 5+5*float64(len(strconv.Itoa(first))))
	}
	return 10 + 5*float64(len(strconv.Itoa(first))+len(strconv.Itoa(last)))
}

// legend draws the timeline's symbols with the same classes as the chart, so it cannot drift
// from what the chart shows. bands is the workload page's: disruption bands, and neither GPU
// strips nor node changes (it reads neither).
func legend(bands bool) template.HTML {
	var s svg
	s.f(`<svg class="legend-svg" viewBox="0 0 1200 58" width="100%%" role="img" aria-labelledby="legend-title"><title id="legend-title">Legend</title>`)
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
	if !bands {
		item(func(x float64) {
			s.f(`<rect class="gpu" x="%s" y="8" width="16" height="2.5" fill-opacity=".7"/>`, n(x))
		}, "GPU utilisation (darker = busier)", 230)
	}
	item(func(x float64) { s.f(`<rect class="interruption" x="%s" y="2" width="16" height="14"/>`, n(x)) }, "service interruption", 150)
	if bands {
		item(func(x float64) { s.f(`<rect class="disruption-band" x="%s" y="2" width="16" height="14"/>`, n(x)) }, "disruption (start → end)", 170)
	} else {
		item(func(x float64) { s.f(`<path class="node-change" d="M%s 14l-4 -7h8z"/>`, n(x+8)) }, "node change", 100)
	}
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
	// Where the wait was before a scheduler saw the pod (docs/dra.md).
	s.f(`<rect class="bar gated" x="4" y="42" width="16" height="8"/><text x="24" y="50">held by a scheduling gate</text>`)
	for i, m := range []struct{ name, label string }{{"gated", "gate removed"}, {"claim_allocated", "DRA claims allocated"}} {
		mx := 200 + float64(i)*120
		s.f(`<g transform="translate(0 40)">`)
		s.marker(m.name, mx+8, 5, m.label, 0)
		s.f(`</g><text x="%s" y="50">%s</text>`, n(mx+18), esc(m.label))
	}
	s.f(`</svg>`)
	return template.HTML(s.String())
}

// chart maps times to x for one window [lo, hi] seconds from `from`; clock labels its axis
// with times of day rather than seconds from `from`.
type chart struct {
	from   time.Time
	lo, hi float64
	rows   int
	clock  bool
}

func (c *chart) x(t time.Time) float64 {
	return plotX0 + (sec(c.from, t)-c.lo)/(c.hi-c.lo)*(plotX1-plotX0)
}

// at is the time s seconds from `from`.
func (c *chart) at(s float64) time.Time { return c.from.Add(time.Duration(s * float64(time.Second))) }

func (c *chart) axis(s *svg, height float64) {
	s.f(`<g class="axis" aria-hidden="true">`)
	tick := func(t float64, label string) {
		x := plotX0 + (t-c.lo)/(c.hi-c.lo)*(plotX1-plotX0)
		s.f(`<line class="tick" x1="%s" x2="%s" y1="%s" y2="%s"/><text x="%s" y="%s" text-anchor="middle">%s<title>%s</title></text>`,
			n(x), n(x), n(axisH-4), n(height-12), n(x), n(axisH-26), esc(label), fmtTime(c.at(t)))
	}
	if c.clock {
		from, to := c.at(c.lo), c.at(c.hi)
		for _, t := range clockTicks(from, to, 8) {
			tick(sec(c.from, t), fmtClock(t, to.Sub(from)))
		}
		s.f(`<text x="4" y="%s" class="muted">pod · node (UTC)</text>`, n(axisH-26))
	} else {
		for _, t := range ticks(c.lo, c.hi, 8) {
			if t >= c.lo && t <= c.hi {
				tick(t, fmtOffset(t, c.hi-c.lo))
			}
		}
		s.f(`<text x="4" y="%s" class="muted">pod · node</text>`, n(axisH-26))
	}
	s.f(`</g>`)
}

// window draws an interruption window as a hatched band from y, h high.
func (c *chart) window(s *svg, w align.Window, y, h float64) {
	x0, x1 := max(c.x(w.Start), plotX0-1), min(c.x(w.End), plotX1+1)
	if x1 < x0 {
		return
	}
	s.f(`<rect class="interruption" data-kind="%s" x="%s" y="%s" width="%s" height="%s"><title>%s %s → %s (%.1fs)</title></rect>`,
		esc(w.Kind), n(x0), n(y), n(max(x1-x0, 1)), n(h), esc(strings.ReplaceAll(w.Kind, "_", " ")), fmtTime(w.Start), fmtTime(w.End), w.Seconds)
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
	type step struct {
		at    *time.Time
		class string
	}
	steps := []step{{m.Created, "pending"}, {m.Scheduled, "start"}, {m.Running, "load"}, {m.Ready, "warm"}, {m.FirstSuccess, "serving"}}
	if steps[0].at == nil {
		steps[0].at = cmp.Or(m.Gated, m.FirstUnschedulable, m.Scheduled)
	} else if m.Gated != nil {
		// Held by a scheduling gate first: the gate's wait, then the scheduler's.
		steps[0].class = "gated"
		steps = slices.Insert(steps, 1, step{m.Gated, "pending"})
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
	}{{"created", m.Created}, {"gated", m.Gated}, {"claim_allocated", m.ClaimAllocated}, {"scheduled", m.Scheduled}, {"running", m.Running},
		{"ready", m.Ready}, {"first_success", m.FirstSuccess}, {"ended", m.Ended}} {
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
