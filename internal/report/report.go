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
	"github.com/schedlens/schedlens/internal/scope"
)

// ErrNotFound is what a read answers for something it does not hold (an experiment, a run, a
// pod); the store returns it for pgx.ErrNoRows.
var ErrNotFound = errors.New("not found")

// RunDetail is everything a run's timeline draws: its pods, the pods they preempted from outside
// the run, each pod's scheduling failures and GPU samples, the arms' service interruptions, the
// node changes (cordon, NotReady, rejoin) while the run lasted and the disruptions found.
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
	// Disruptions are what happened to the run's pods and the pods they preempted, as
	// workload.Detect finds them from the pods, their controllers and the nodes, newest first.
	// Requests are not read for them: their NoSuccessSeconds are nil (the arms' Interruptions
	// hold the gaps between successes).
	Disruptions []Disruption
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
	// Imported is set for an experiment known only from a record imported from another
	// schedlens (POST /v1/records): its digest; arms, runs and pods are the record's.
	Imported *Imported `json:"imported"`
}

// Imported names the record an imported experiment comes from.
type Imported struct {
	Digest    string `json:"digest"`
	Namespace string `json:"namespace,omitempty"`
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

// Disruption kinds: what happened to workloads, found from the observed data alone.
const (
	// DisruptionRollout: a new revision of a workload began replacing its pods.
	DisruptionRollout = "rollout"
	// DisruptionDrain: a node was cordoned and pods evicted from it (the Eviction API).
	DisruptionDrain = "drain"
	// DisruptionNodeFailure: a node went NotReady while pods ran on it.
	DisruptionNodeFailure = "node_failure"
	// DisruptionPreemption: the scheduler preempted pods for a higher-priority pod.
	DisruptionPreemption = "preemption"
	// DisruptionScale: a workload's desired replicas changed.
	DisruptionScale = "scale"
)

// DisruptionKinds lists the kinds in a stable order.
var DisruptionKinds = []string{DisruptionRollout, DisruptionDrain, DisruptionNodeFailure, DisruptionPreemption, DisruptionScale}

// Disruption is one thing that happened to workloads: when, where, to whom, and what it cost
// each workload it touched.
type Disruption struct {
	// ID is stable for the same facts: kind, what it happened to (node or workload) and start.
	ID    string     `json:"id"`
	Kind  string     `json:"kind"`
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end"` // nil while it lasts (a node still cordoned or NotReady, a rollout in progress)
	// Stalled: a rollout whose Deployment reported ProgressDeadlineExceeded; End is then when.
	Stalled bool   `json:"stalled,omitempty"`
	Node    string `json:"node,omitempty"`
	// Revision is a rollout's new revision and From the one it replaced (the Deployment's
	// revision number and pod-template-hash, or a StatefulSet's controller revision).
	Revision *Revision `json:"revision,omitempty"`
	From     *Revision `json:"from,omitempty"`
	// Replicas is a scale's desired count after the change, FromReplicas before.
	Replicas     *int `json:"replicas,omitempty"`
	FromReplicas *int `json:"from_replicas,omitempty"`
	// Preemptor is the pod a preemption made room for.
	Preemptor *PodName `json:"preemptor,omitempty"`
	// Pods are the UIDs of the pods it acted on: evicted, preempted, on the failed node, or
	// replaced by the rollout.
	Pods      []string   `json:"pods"`
	Workloads []Affected `json:"workloads"`
}

// Revision names a workload revision: a Deployment's number (as `kubectl rollout history`
// lists it) and pod-template-hash, or a StatefulSet's controller revision (Hash).
type Revision struct {
	Number string `json:"number,omitempty"`
	Hash   string `json:"hash"`
}

// PodName names a pod and, where known, its workload.
type PodName struct {
	Namespace string              `json:"namespace"`
	Name      string              `json:"name"`
	UID       string              `json:"uid"`
	Workload  *events.WorkloadRef `json:"workload,omitempty"`
}

// Affected is what a disruption cost one workload.
type Affected struct {
	Workload events.WorkloadRef `json:"workload"`
	// Desired is the pods the workload wanted when the disruption began.
	Desired int `json:"desired"`
	// Pods are the UIDs of the workload's pods the disruption acted on.
	Pods         []string     `json:"pods"`
	Interruption Interruption `json:"interruption"`
	// RecoverySeconds is from the disruption's start until the workload had as many pods
	// Ready as it wanted again (0 when it never had fewer); nil while it has not recovered.
	RecoverySeconds *float64   `json:"recovery_seconds"`
	RecoveredAt     *time.Time `json:"recovered_at"`
	// Replacements are the workload's pods created from the start until it recovered (or the
	// disruption's end): what they waited for.
	Replacements []Replacement `json:"replacements"`
}

// Interruption is how a disruption was felt: seconds with fewer Ready pods than desired (and
// the fewest), seconds without a successful request where requests were observed.
type Interruption struct {
	Seconds     float64 `json:"seconds"`
	FewestReady int     `json:"fewest_ready"`
	// NoSuccessSeconds is nil when none of the workload's requests were observed around it.
	NoSuccessSeconds *float64       `json:"no_success_seconds"`
	Windows          []align.Window `json:"windows"`
}

// Replacement is a pod created while a workload recovered: its waits.
type Replacement struct {
	UID     string    `json:"uid"`
	Name    string    `json:"name"`
	Node    *string   `json:"node"`
	Created time.Time `json:"created"`
	// PendingSeconds (created → scheduled), ModelLoadSeconds (Running → Ready) and
	// FirstSuccessSeconds (Ready → first successful request) are nil where not reached.
	PendingSeconds      *float64 `json:"pending_seconds"`
	ModelLoadSeconds    *float64 `json:"model_load_seconds"`
	FirstSuccessSeconds *float64 `json:"first_success_seconds"`
	// FailedScheduling are the scheduler's notes while it was Pending, in time order.
	FailedScheduling []SchedulingFailure `json:"failed_scheduling"`
	Censored         []string            `json:"censored"`
}

// CountPoint is a count from a time on: a step of a workload's desired or Ready pods.
type CountPoint struct {
	At    time.Time `json:"at"`
	Count int       `json:"count"`
}

// WorkloadFilter narrows a read of workloads and disruptions.
type WorkloadFilter struct {
	Namespace string // "": every namespace
	Kind      string // a workload kind as Kubernetes writes it ("": any)
	Name      string // with Kind, one workload
	Node      string // disruptions on this node only
	// Scope is the namespaces the caller may read (the zero Scope: every one): the read sees
	// only their pods and controllers, so nothing of the others — not even a drain's pods there
	// — reaches what it finds.
	Scope scope.Scope
}

// PendingPod is a pod neither scheduled nor ended when read: whose it is, since when it waits,
// the GPUs it asks for and the scheduler's latest word on it.
type PendingPod struct {
	Workload  events.WorkloadRef
	Name, UID string
	// Since is when it was created (else first seen).
	Since time.Time
	GPU   *events.GPU
	// Scheduling is its latest FailedScheduling note, parsed; nil before the scheduler gave one.
	Scheduling *events.SchedulingFailure
}

// WorkloadSummary is a workload as the list of a window shows it.
type WorkloadSummary struct {
	events.WorkloadRef
	// Desired and Ready are the pods it wanted and had Ready at the window's end; Observed
	// says whether Desired is its controller's own (false: inferred from the most pods it kept
	// Ready, for workloads whose controller schedlens does not watch).
	Desired  int  `json:"desired"`
	Ready    int  `json:"ready"`
	Observed bool `json:"desired_observed"`
	// Pods are its pods alive at some time in the window; Revisions the revisions they ran.
	Pods      int `json:"pods"`
	Revisions int `json:"revisions"`
	// Disruptions touched it in the window, and cost it InterruptionSeconds with fewer pods
	// Ready than it wanted.
	Disruptions         int     `json:"disruptions"`
	InterruptionSeconds float64 `json:"interruption_seconds"`
}

// WorkloadWindow is one workload over a window: what it wanted, what it had Ready, the revisions
// it ran, what happened to it, and its pods.
type WorkloadWindow struct {
	Workload WorkloadSummary `json:"workload"`
	From     time.Time       `json:"from"`
	To       time.Time       `json:"to"`
	// Desired and Ready are step lines of the pods it wanted and had Ready, from the window's
	// start.
	Desired     []CountPoint     `json:"desired"`
	Ready       []CountPoint     `json:"ready"`
	Revisions   []RevisionReport `json:"revisions"`
	Disruptions []Disruption     `json:"disruptions"`
	Pods        []WorkloadPod    `json:"pods"`
}

// RevisionReport is one revision of a workload in a window: its pods and what they served.
type RevisionReport struct {
	Revision
	FirstCreated time.Time `json:"first_created"`
	Pods         int       `json:"pods"`
	// Requests, ErrorRate (served: to Ready pods), LatencyMS (p50, p95, p99 of successful
	// requests) and GPUUtilMean (percent) are over the whole lives of its pods.
	Requests    int                `json:"requests"`
	ErrorRate   *float64           `json:"error_rate"`
	LatencyMS   map[string]float64 `json:"latency_ms"`
	GPUUtilMean *float64           `json:"gpu_util_mean"`
}

// WorkloadPod is a pod of a workload's window: its timeline summary and revision.
type WorkloadPod struct {
	align.Summary
	Revision string `json:"revision"`
}
