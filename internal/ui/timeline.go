package ui

import (
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

// OutsideGroup is the lane group of pods preempted by the run's pods that are not its own.
const OutsideGroup = "outside the run (preempted)"

// runFilter narrows and zooms a run timeline: arm and node ("" = all), the time window in
// seconds from the run's start (nil = the whole run) and the lanes drawn inline (nil = the
// first liveLanes; the page's script draws the others as they near the screen).
type runFilter struct {
	Arm, Node string
	From, To  *float64
	Lanes     *laneRange
}

// runChunk is how many lanes of a run page are drawn, or left to draw, together: more than a
// screen holds (about 35 lanes at 1,000 px). A page draws its first liveLanes inline (the first
// screen, up to about 2,000 px tall); its script fetches the others' lanes once it has drawn.
const (
	runChunk  = 50
	liveLanes = 2 * runChunk
)

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
	Disruptions                []disruptionRow
	NodeChanges                []report.NodeChange
	Version                    string
	TraceURL, VersionURL       string
	ExperimentURL              string
	Zoom                       zoomLinks
	Lanes, Total               int
	Legend                     template.HTML
	// Chunked says some lanes are not drawn inline (and the pods table waits for the script,
	// in a <noscript>); AllLanesURL is the page with every lane inline.
	Chunked     bool
	AllLanesURL string
	// chart is the chart drawn, whose chunks of lanes the page's script fetches (run's
	// ?partial=lanes).
	chart lanes
}

// zoomLinks are a chart's pan and zoom links (template "zoom"); ResetLabel names what Reset
// shows.
type zoomLinks struct{ In, Out, Left, Right, Reset, ResetLabel string }

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

// groups orders the run's pods: the definition's arms first, then other arms, then the
// outsiders.
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
		out = append(out, group{Name: a, Label: "arm " + a, Pods: byArm[a]})
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

// buildRun lays out a run's timeline and the tables under it; chunkURL is the page that draws a
// chunk of its lanes inline, lanesURL the one that answers every chunk's lanes for the script.
func buildRun(d report.RunDetail, order []string, f runFilter, chunkURL func(laneRange) string, lanesURL string) runView {
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
	var ms []mark
	ms, v.Disruptions = marks(d.Disruptions, nil, d.From, d.To)
	v.NodeChanges = d.NodeChanges
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
	for i := range kept {
		kept[i].Windows = windows[kept[i].Name]
		for _, p := range kept[i].Pods {
			v.Pods = append(v.Pods, row(kept[i].Name, kept[i].Outside, p, d.FailedScheduling[p.Pod.UID], len(d.GPU[p.Pod.UID])))
		}
	}
	l := lanes{Chart: &chart{from: d.From, lo: lo, hi: hi}, Groups: kept, Marks: ms, Nodes: d.NodeChanges,
		FailedScheduling: d.FailedScheduling, GPU: d.GPU, Chunk: runChunk, Live: laneRange{1, liveLanes}, ChunkURL: chunkURL, LanesURL: lanesURL}
	if f.Lanes != nil {
		l.Live = *f.Lanes
	}
	rows := 0
	for _, g := range kept {
		rows += len(g.Pods)
	}
	if v.Chunked = l.leavesInert(); v.Chunked {
		v.AllLanesURL = chunkURL(laneRange{1, rows})
	}
	l.Title = fmt.Sprintf("Run %s of %s: one lane per pod, %d lanes; the table below lists the same", d.Run, d.Experiment, rows)
	v.Chart, v.Lanes = l.draw()
	v.chart = l
	v.Legend = legend(false)
	return v
}

// row is a pod's line in the table under a timeline: group names its lane group.
func row(group string, outside bool, p align.Summary, failures []report.SchedulingFailure, gpuSamples int) podRow {
	r := podRow{Group: group, Name: p.Pod.Name, UID: p.Pod.UID, Node: deref(p.Pod.Node), URL: podURL(p.Pod.UID), Outside: outside,
		Created: p.Milestones.Created, Pending: p.Durations.Pending, Start: p.Durations.Start, ModelLoad: p.Durations.ModelLoad,
		ToFirstSuccess: p.Durations.ReadyToFirstSuccess, Censored: strings.Join(p.Censored, ", "), Ended: deref(p.EndedReason),
		PreemptedBy: deref(p.PreemptedBy), FailedScheduling: p.Counts.FailedScheduling, GPUSamples: gpuSamples}
	notes := map[string]bool{}
	var list []string
	for _, f := range failures {
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
		Left: link(lo-half/2, hi-half/2), Right: link(lo+half/2, hi+half/2), Reset: r, ResetLabel: "whole run",
	}
}
