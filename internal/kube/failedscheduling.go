package kube

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/schedlens/schedlens/internal/events"
)

// Texts of kube-scheduler (pkg/scheduler: FitError.Error, ErrNoNodesAvailable, DefaultPreemption).
const (
	noNodesNote      = "no nodes available to schedule pods"
	preemptionPrefix = "preemption: "
	podGroupPrefix   = "pod group "
	notHelpfulReason = "Preemption is not helpful for scheduling"
)

var (
	// "0/6 nodes are available:" — the scheduler always writes 0 fitting nodes, but read it.
	// Volcano writes "0/6 nodes are unavailable:" (its FitErrors), the same counts.
	availableRE = regexp.MustCompile(`^(\d+)/(\d+) nodes are (?:un)?available(:|$)`)
	// Volcano's gang message wraps the first task's fit errors: "pod group is not ready, 6
	// Pending, 6 minAvailable; Pending: 3 Schedulable, 3 Unschedulable. Origin reason is
	// task-6: 0/3 nodes are unavailable: …".
	volcanoOriginRE = regexp.MustCompile(`^pod group is (?:not )?ready, .*?\. Origin reason is \S+: `)
	countRE         = regexp.MustCompile(`^(\d+) (\S.*)$`)
	victimsRE       = regexp.MustCompile(`^found a potential placement for pod on node (.+), preempting (\d+) victims?$`)
)

// ParseFailedScheduling parses a scheduler FailedScheduling note; nil when the note is not of that shape.
func ParseFailedScheduling(note string) *events.SchedulingFailure {
	note = strings.TrimSpace(note)
	if m := volcanoOriginRE.FindString(note); m != "" {
		note = note[len(m):]
	}
	if note == noNodesNote {
		return &events.SchedulingFailure{Reasons: []events.ReasonCount{{Reason: noNodesNote}}}
	}
	available, total, rest, ok := availableHead(note)
	if !ok {
		return nil
	}
	main, clause := splitPreemption(rest)
	sf := &events.SchedulingFailure{Available: available, Total: total, Reasons: parseReasons(main, total)}
	if clause != "" {
		sf.Preemption = parsePreemption(clause)
	}
	return sf
}

// availableHead reads "A/T nodes are available:" and returns what follows.
func availableHead(s string) (available, total int, rest string, ok bool) {
	m := availableRE.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, "", false
	}
	a, okA := count(m[1])
	t, okT := count(m[2])
	if !okA || !okT {
		return 0, 0, "", false
	}
	return a, t, strings.TrimSpace(s[len(m[0]):]), true
}

// splitPreemption cuts the PostFilter clause ("preemption: …" or "pod group preemption: …") off
// the filter reasons. The scheduler writes it last, after the reasons' closing period.
func splitPreemption(s string) (reasons, clause string) {
	for from := 0; ; {
		i := strings.Index(s[from:], preemptionPrefix)
		if i < 0 {
			return s, ""
		}
		i += from
		if i == 0 || s[i-1] == ' ' {
			start := i
			if strings.HasSuffix(s[:i], podGroupPrefix) {
				start = i - len(podGroupPrefix)
			}
			return strings.TrimSpace(s[:start]), strings.TrimSpace(s[start:])
		}
		from = i + len(preemptionPrefix)
	}
}

// parseReasons reads "<n> <reason>, <n> <reason>." in the note's order. A list whose first item
// has no count is a PreFilter message, which the scheduler applies to every node.
func parseReasons(s string, total int) []events.ReasonCount {
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	if s == "" {
		return nil
	}
	var out []events.ReasonCount
	for i, part := range splitTopLevel(s) {
		if m := countRE.FindStringSubmatch(part); m != nil {
			if n, ok := count(m[1]); ok {
				out = append(out, events.ReasonCount{Reason: m[2], Nodes: n})
				continue
			}
		}
		if i == 0 {
			return []events.ReasonCount{{Reason: s, Nodes: total}}
		}
		// A ", " outside brackets inside one reason, as in the old
		// "node(s) had taint {k: v}, that the pod didn't tolerate".
		out[len(out)-1].Reason += ", " + part
	}
	return out
}

// splitTopLevel splits on ", " outside {}, [] and ().
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{', '[', '(':
			depth++
		case '}', ']', ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 && i+1 < len(s) && s[i+1] == ' ' {
				parts = append(parts, s[start:i])
				start = i + 2
				i++
			}
		}
	}
	return append(parts, s[start:])
}

// parsePreemption reads the clause after the filter reasons; Note keeps it whole, prefix included.
func parsePreemption(clause string) *events.PreemptionAttempt {
	pa := &events.PreemptionAttempt{Outcome: events.PreemptionNoPlacement, Note: clause}
	msg := strings.TrimPrefix(clause, podGroupPrefix)
	msg = strings.TrimSpace(strings.TrimPrefix(msg, preemptionPrefix))
	if m := victimsRE.FindStringSubmatch(msg); m != nil {
		if n, ok := count(m[2]); ok {
			pa.Outcome = events.PreemptionVictimsFound
			pa.Node = m[1]
			pa.Victims = n
			return pa
		}
	}
	_, total, rest, ok := availableHead(msg)
	if !ok {
		return pa
	}
	pa.Reasons = parseReasons(rest, total)
	notHelpful := len(pa.Reasons) > 0
	for _, r := range pa.Reasons {
		if r.Reason != notHelpfulReason {
			notHelpful = false
		}
	}
	if notHelpful {
		pa.Outcome = events.PreemptionNotHelpful
	}
	return pa
}

// count reads a node or victim count of a note: digits, at most events.MaxCount (a number
// beyond cannot come from the scheduler and would make the envelope invalid).
func count(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n > events.MaxCount {
		return 0, false
	}
	return n, true
}

// Reason classes: what kept a pending pod off every node, as a bounded set of words fit for a
// Prometheus label (ReasonClass). The scheduler's reasons are free text; a class names the
// filter that refused.
const (
	// ClassNone: the scheduler has not said why (no FailedScheduling note yet).
	ClassNone = "none"
	// ClassNoNodes: the cluster had no node to consider.
	ClassNoNodes = "no_nodes"
	// ClassOther: a reason none of the classes below names (free ports, a plugin of a custom
	// scheduler).
	ClassOther = "other"
	// ClassNodeUnschedulable: nodes cordoned ("node(s) were unschedulable").
	ClassNodeUnschedulable = "node_unschedulable"
	// ClassTaint: taints the pod does not tolerate.
	ClassTaint = "taint"
	// ClassNodeAffinity: the pod's node selector, required node affinity or node name.
	ClassNodeAffinity = "node_affinity"
	// ClassInsufficientGPU: nodes the pod may run on lack free GPUs ("Insufficient nvidia.com/gpu").
	ClassInsufficientGPU = "insufficient_gpu"
	// ClassInsufficientResources: nodes the pod may run on lack other resources (CPU, memory,
	// pods).
	ClassInsufficientResources = "insufficient_resources"
	// ClassVolume: volume binding, zones, limits.
	ClassVolume = "volume"
	// ClassDynamicResources: Dynamic Resource Allocation could not allocate the pod's claims
	// ("cannot allocate all claims", "resourceclaim in use", a claim or device class missing).
	ClassDynamicResources = "dynamic_resources"
	// ClassTopologySpread: topology spread constraints.
	ClassTopologySpread = "topology_spread"
	// ClassPodAffinity: inter-pod affinity or anti-affinity.
	ClassPodAffinity = "pod_affinity"
)

// ReasonClasses lists every class ReasonClass returns, in the order of kube-scheduler's filter
// plugins (NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit, the volume
// plugins, DynamicResources, PodTopologySpread, InterPodAffinity), after the classes that name
// no filter.
var ReasonClasses = []string{ClassNone, ClassNoNodes, ClassOther, ClassNodeUnschedulable, ClassTaint, ClassNodeAffinity,
	ClassInsufficientResources, ClassInsufficientGPU, ClassVolume, ClassDynamicResources, ClassTopologySpread, ClassPodAffinity}

// ReasonClass is the class of a FailedScheduling note (ClassNone for nil): the class of the
// reason given by the nodes that came closest to fitting — the scheduler stops at a node's first
// failing filter, so the latest filter in ReasonClasses' order that any node failed is how far
// the pod got. "2 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node
// affinity/selector" is insufficient_gpu: two nodes would take the pod but for their GPUs.
// Between GPUs and other resources (one filter), GPUs win: a node short of both counts in both.
func ReasonClass(sf *events.SchedulingFailure) string {
	if sf == nil {
		return ClassNone
	}
	best, rank := ClassOther, -1
	for _, r := range sf.Reasons {
		c := classOf(r.Reason)
		if i := slices.Index(ReasonClasses, c); i > rank {
			best, rank = c, i
		}
	}
	if len(sf.Reasons) == 0 && sf.Total == 0 {
		return ClassNoNodes
	}
	return best
}

// classOf is the class of one reason of a note, from kube-scheduler's texts
// (pkg/scheduler/framework/plugins).
func classOf(reason string) string {
	r := strings.ToLower(reason)
	switch {
	case reason == noNodesNote:
		return ClassNoNodes
	case strings.HasPrefix(r, "insufficient "):
		if res := strings.TrimSpace(reason[len("insufficient "):]); strings.HasPrefix(res, resourcePrefix) || strings.Contains(strings.ToLower(res), "gpu") {
			return ClassInsufficientGPU
		}
		return ClassInsufficientResources
	case r == "too many pods":
		return ClassInsufficientResources
	case strings.Contains(r, "didn't have enough of mig profile"):
		// KAI-Scheduler's per-node reasons.
		return ClassInsufficientGPU
	case strings.Contains(r, "didn't have enough resources"):
		if strings.Contains(r, "gpu") {
			return ClassInsufficientGPU
		}
		return ClassInsufficientResources
	case strings.Contains(r, "were unschedulable"):
		return ClassNodeUnschedulable
	case strings.Contains(r, "taint"):
		return ClassTaint
	case strings.Contains(r, "node affinity/selector"), strings.Contains(r, "requested node name"):
		return ClassNodeAffinity
	case strings.Contains(r, "volume"), strings.Contains(r, "persistentvolumeclaim"):
		return ClassVolume
	case strings.Contains(r, "claim"), strings.Contains(r, "allocate devices"), strings.Contains(r, "device class"),
		r == "cannot fit resource":
		// kube-scheduler's DynamicResources plugin.
		return ClassDynamicResources
	case strings.Contains(r, "topology spread"):
		return ClassTopologySpread
	case strings.Contains(r, "affinity"):
		return ClassPodAffinity
	}
	return ClassOther
}

// kaiNodePool is the prefix KAI-Scheduler puts before a message when it tried one node pool.
var kaiNodePool = regexp.MustCompile(`^Node-Pool '[^']*': `)

// ParseKAIUnschedulable parses KAI-Scheduler's Unschedulable note (its TasksFitErrors:
// "no nodes with enough resources were found: 1 node(s) didn't have enough resources: GPUs.
// \n5 node(s) didn't match Pod's node affinity/selector.", optionally after "Node-Pool 'p': ")
// into the shape of a FailedScheduling note: no node fits, the nodes counted are the nodes
// its reasons name. A note that carries no per-node counts (queue quota, gang scheduling) is
// one reason of no node, the whole note (class other); nil for an empty note.
func ParseKAIUnschedulable(note string) *events.SchedulingFailure {
	note = kaiNodePool.ReplaceAllString(strings.TrimSpace(note), "")
	if note == "" {
		return nil
	}
	// A job-level message (quota, gang scheduling) names no nodes: one reason, the message.
	whole := &events.SchedulingFailure{Reasons: []events.ReasonCount{{Reason: note}}}
	sf := &events.SchedulingFailure{Reasons: []events.ReasonCount{}}
	_, list, ok := strings.Cut(note, ": ")
	if !ok {
		return whole
	}
	for part := range strings.SplitSeq(list, ". \n") {
		m := countRE.FindStringSubmatch(strings.TrimSuffix(strings.TrimSpace(part), "."))
		if m == nil {
			return whole
		}
		n, ok := count(m[1])
		if !ok || sf.Total > events.MaxCount-n {
			return whole
		}
		sf.Reasons = append(sf.Reasons, events.ReasonCount{Reason: m[2], Nodes: n})
		sf.Total += n
	}
	return sf
}
