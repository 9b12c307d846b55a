// Package report holds what a read of the store returns and the renderers draw: a run's
// detail, a pod's series, an experiment as listed, an arm's interruptions. They are domain
// types, like the timeline summary they carry: the web UI and the trace export import them, not
// the store that fills them.
package report

import (
	"errors"
	"time"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
)

// ErrNotFound is what a read answers for something it does not hold (an experiment, a run, a
// pod); the store returns it for pgx.ErrNoRows.
var ErrNotFound = errors.New("not found")

// RunDetail is everything a run's timeline draws: its pods, the pods they preempted from outside
// the run, each pod's scheduling failures and GPU samples, the arms' service interruptions and
// the node changes (cordon, NotReady, rejoin) while the run lasted.
type RunDetail struct {
	Experiment string
	Namespace  string // "" when the run's pods of every namespace are pooled
	Run        string
	// Pods are the run's pods in the order they were first seen.
	Pods []align.Summary
	// Outside are pods preempted by the run's pods that are not the run's own.
	Outside []align.Summary
	// FailedScheduling holds each pod's FailedScheduling occurrences in time order, by UID.
	FailedScheduling map[string][]SchedulingFailure
	// GPU holds each pod's GPU utilisation samples in time order, by UID.
	GPU map[string][]GPUPoint
	// Interruptions are the service interruptions of each arm (align.DefaultMinGap).
	Interruptions []ArmInterruptions
	// NodeChanges are the changes of the nodes' schedulability and readiness while the run
	// lasted (from its first pod's creation to its last observation).
	NodeChanges []NodeChange
	// Scenarios names the disruption scenario of an arm whose pods carry the
	// schedlens.io/scenario label (rolling-update, drain, node-rejoin).
	Scenarios map[string]string
	// From and To bound the run: its own pods' first creation (or sighting) and last
	// observation (pods Outside may start earlier).
	From, To time.Time
}

// SchedulingFailure is one FailedScheduling occurrence: when, and the scheduler's note.
type SchedulingFailure struct {
	At   time.Time `json:"at"`
	Note string    `json:"note"`
}

// GPUPoint is one GPU utilisation sample (percent).
type GPUPoint struct {
	At   time.Time `json:"at"`
	Util float64   `json:"util"`
}

// Node change kinds.
const (
	NodeCordoned   = "cordoned"
	NodeUncordoned = "uncordoned"
	NodeNotReady   = "not_ready"
	NodeReady      = "ready"
)

// NodeChange is a node becoming unschedulable or schedulable again, NotReady or Ready again.
type NodeChange struct {
	At     time.Time `json:"at"`
	Node   string    `json:"node"`
	Change string    `json:"change"`
}

// ArmInterruptions are the service interruptions of one arm (or disruption scenario) in a run.
type ArmInterruptions struct {
	Arm     string         `json:"arm"`
	Pods    int            `json:"pods"`
	Windows []align.Window `json:"windows"`
}

// ExperimentInfo is an experiment as the API lists it.
type ExperimentInfo struct {
	Name       string             `json:"name"`
	Definition *events.Experiment `json:"definition"` // nil when no definition was received
	// DefinitionProblems lists every problem of the definition in force (events.Experiment
	// Problems): the values the collector could not read, and those of a type or range their
	// field does not take, kept as they came ("repeats: want an integer …, got \"three\"",
	// "fixed.request.port: …"). Empty, never nil, when there are none or no definition.
	DefinitionProblems []string `json:"definition_problems"`
	Arms               []string `json:"arms"`
	Runs               []string `json:"runs"`
	Pods               int      `json:"pods"`
}

// Request is one request a pod served, as the pod view plots it.
type Request struct {
	At        time.Time `json:"at"`
	OK        bool      `json:"ok"`
	Status    int       `json:"status"`
	LatencyMS float64   `json:"latency_ms"`
	Error     string    `json:"error,omitempty"`
}

// PodSeries are a pod's requests and GPU samples in time order.
type PodSeries struct {
	Requests []Request
	GPU      []GPUPoint
}
