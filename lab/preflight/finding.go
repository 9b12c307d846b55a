package preflight

import (
	"cmp"
	"slices"
	"strings"
)

// AnnotationIgnore on an object (or a workload's pod template) lists rule ids not to report
// for it, comma-separated, as kube-linter and Polaris annotations do.
const AnnotationIgnore = "schedlens.io/preflight-ignore"

// Severity of a finding: errors make the command exit 1.
type Severity string

// Severities, most severe first.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info"
)

func (s Severity) rank() int {
	switch s {
	case Error:
		return 0
	case Warning:
		return 1
	}
	return 2
}

// Rule is a check: its id, default severity, what it looks for, why it matters and the usual fix.
type Rule struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
	Why      string   `json:"why"`
	Fix      string   `json:"fix"`
}

// Rule ids.
const (
	RuleGPURequestLimit         = "gpu-request-limit"
	RuleAffinityUnsatisfiable   = "affinity-unsatisfiable"
	RuleAffinityPreferredNoop   = "affinity-preferred-noop"
	RuleTaintUntolerated        = "taint-untolerated"
	RulePriorityUndefined       = "priority-undefined"
	RulePriorityPreempts        = "priority-preempts-protected"
	RuleProbeReadinessMissing   = "probe-readiness-missing"
	RuleProbeStartupShort       = "probe-startup-short"
	RulePDBBlocksDrain          = "pdb-blocks-drain"
	RuleRolloutNoSurge          = "rollout-no-surge-capacity"
	RuleRolloutInvalid          = "rollout-invalid"
	RuleExperimentNoRollback    = "experiment-no-rollback"
	RuleApplicability           = "applicability"
	RuleDRAClassMissing         = "dra-class-missing"
	RuleDRANoDevice             = "dra-selector-no-device"
	RuleDRAExtendedResource     = "dra-extended-resource"
	RuleDRASharingUndeclared    = "dra-sharing-undeclared"
	RuleLabelUndocumented       = "label-undocumented"
	RuleLabelPreferenceRequired = "label-preference-required"
	RuleLabelValueUnknown       = "label-value-unknown"
	RuleSimulatePending         = "simulate-pending"
	RuleSimulatePreempts        = "simulate-preempts"
)

// Rules lists every rule, in the order docs/preflight.md describes them.
var Rules = []Rule{
	{RuleGPURequestLimit, Error, "a GPU resource without a limit, a limit different from the request, or a GPU resource name no node advertises",
		"GPUs are extended resources: the API server rejects a request without an equal limit, and a resource no node offers never schedules",
		"set resources.limits to the GPU count and leave the request out or equal; request a resource name (nvidia.com/gpu, nvidia.com/mig-<profile>, nvidia.com/gpu.shared) the nodes advertise"},
	{RuleAffinityUnsatisfiable, Error, "required node affinity or nodeSelector matches no node, or no matching node has enough allocatable GPUs for one replica",
		"the pods stay Pending forever: no node passes the scheduler's filters",
		"fix the label key or value (see the values the nodes carry), or ask for fewer GPUs per pod"},
	{RuleAffinityPreferredNoop, Warning, "a preferred node affinity term whose key no node carries, or that matches no node",
		"the preference never changes a score: the strategy it expresses is not applied",
		"use a label the nodes carry, or drop the term"},
	{RuleTaintUntolerated, Error, "the only nodes that satisfy the pod's GPU request and affinity are tainted and the pod does not tolerate the taint",
		"the scheduler filters out every node that could take the pod",
		"add a toleration for the taint (key, value, effect) or target untainted nodes"},
	{RulePriorityUndefined, Error, "a priorityClassName that no PriorityClass defines",
		"the Priority admission plugin rejects the pod: it is never created",
		"create the PriorityClass (in the manifests or the cluster) or name an existing one"},
	{RulePriorityPreempts, Warning, "a pod whose priority would preempt pods covered by a PodDisruptionBudget or serving an experiment's control arm",
		"preemption ignores PodDisruptionBudgets when it must, and preempting the control arm spoils the comparison",
		"lower the priority, make room on the nodes it can use, or target nodes without protected pods"},
	{RuleProbeReadinessMissing, Warning, "a serving container without a readinessProbe",
		"without one, Running means Ready: traffic reaches the pod before the model has loaded",
		"add a readinessProbe that succeeds only once the model is loaded (e.g. Triton's /v2/health/ready)"},
	{RuleProbeStartupShort, Error, "the liveness (or startup) probe would kill the container before the model has loaded",
		"the kubelet restarts the container while it loads the model: a crash loop that never gets Ready",
		"add a startupProbe whose initialDelaySeconds + periodSeconds × failureThreshold exceeds the model-load time"},
	{RulePDBBlocksDrain, Error, "a PodDisruptionBudget with minAvailable ≥ replicas or maxUnavailable 0",
		"no eviction is ever allowed: node drains (upgrades, scale-down) never finish",
		"allow at least one disruption: minAvailable below the replicas, or maxUnavailable ≥ 1"},
	{RuleRolloutNoSurge, Error, "a rolling update whose surge pod needs GPUs no allowed node has free, with maxUnavailable 0",
		"the surge pod stays Pending and no old pod is removed: the rollout stalls",
		"set maxUnavailable ≥ 1 (replace in place) or keep a pod's worth of GPUs free on the allowed nodes"},
	{RuleRolloutInvalid, Error, "a rolling update with maxSurge 0 and maxUnavailable 0",
		"the API server rejects it: nothing could ever be replaced",
		"set maxSurge or maxUnavailable above 0"},
	{RuleExperimentNoRollback, Warning, "an experiment ConfigMap without thresholds, baseline or control arm, or whose arms' workloads differ in more than the declared change",
		"rollback conditions must be defined before the change, and a comparison of arms that differ in what is meant to stay fixed measures the wrong thing",
		"add thresholds (e.g. p95_latency_ms, error_rate) and a baseline arm; make the arms differ only in what `change` names"},
	{RuleApplicability, Info, "a strategy keyed on GPU model or product labels: the node pools where it applies, and the pools that lack the label",
		"a strategy that depends on a GPU model or cluster feature must state where it applies",
		"state the pools in the experiment, or label the pools that lack the key"},
	{RuleDRAClassMissing, Error, "a ResourceClaim or ResourceClaimTemplate request naming a DeviceClass that neither the cluster nor the manifests define",
		"the API server accepts the claim, but the scheduler cannot allocate it: the pods stay Pending",
		"name a DeviceClass the cluster has (kubectl get deviceclasses), or add it to the manifests"},
	{RuleDRANoDevice, Error, "a claim's request whose DeviceClass and CEL selectors match no device in any ResourceSlice of the cluster, or fewer devices on any one node than it asks for",
		"the scheduler finds no device to allocate: the pods stay Pending with \"cannot allocate all claims\"",
		"fix the selector (the message lists the values the devices carry for the attributes it reads), ask for fewer devices, or pick another DeviceClass"},
	{RuleDRAExtendedResource, Warning, "a container asks for an extended resource (nvidia.com/gpu) that a DeviceClass maps through DRA (KEP-5004): which nodes serve it through the device plugin, which through a claim the scheduler creates",
		"where both paths serve the resource, replicas land on either: GPU model, sharing and what schedlens reads for them differ by path (info when one path serves)",
		"ask for the DRA path explicitly with a ResourceClaim, or keep the pods on the device-plugin nodes with node affinity"},
	{RuleDRASharingUndeclared, Warning, "an experiment arm whose claims share GPUs differently from the baseline's (a GpuConfig sharing strategy, one claim for every replica) while the experiment's change declares no such sharing",
		"the comparison would measure the sharing too, not only the declared change",
		"declare the sharing in the experiment's change (e.g. \"GPU sharing: time-slicing\"), or give the arm the baseline's claims"},
	{RuleLabelUndocumented, Warning, "a placement rule (nodeSelector, required or preferred node affinity) on a node label the label registry does not document, when a registry exists",
		"a label nobody owns can be renamed, dropped or set differently on a new node pool, and the strategy silently stops applying",
		"add the label to the registry (schedlens.io/label-registry ConfigMap) with its source and owner, or place on a documented label"},
	{RuleLabelPreferenceRequired, Warning, "a label the registry names a preference used in a required rule, or one it names a hard limit used only in preferred rules",
		"hard limits belong in required affinity and preferences in preferred affinity: otherwise pods are filtered where they should be ranked, or land where a limit does not hold",
		"move the rule to preferredDuringScheduling (a preference) or requiredDuringScheduling (a hard limit), or correct the registry's use"},
	{RuleLabelValueUnknown, Warning, "a value in a placement rule that no node carries, while other values of the rule match",
		"the value never matches: a misspelt model or a pool that is gone, and the rule is narrower than it reads",
		"use the values the nodes carry (the message lists them), or drop the value"},
	{RuleSimulatePending, Error, "in the dry run with the real scheduler, a pod stayed Pending",
		"the scheduler could not place it: its FailedScheduling message says why",
		"see the message: free capacity, relax the rules, or lower the request"},
	{RuleSimulatePreempts, Warning, "in the dry run with the real scheduler, existing pods were preempted",
		"the change evicts running pods to make room",
		"check that the victims may be preempted, or make room first"},
}

// RuleByID returns a rule.
func RuleByID(id string) (Rule, bool) {
	for _, r := range Rules {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// ObjectRef names the object a finding is about and where it was read.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	File      string `json:"file"`
	Line      int    `json:"line"`
}

// String names the object as kubectl does.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Finding is one problem found in one object.
type Finding struct {
	Rule     string    `json:"rule"`
	Severity Severity  `json:"severity"`
	Object   ObjectRef `json:"object"`
	// Field is the field path the finding is about; Line its line in File.
	Field   string `json:"field,omitempty"`
	Line    int    `json:"line"`
	Message string `json:"message"`
	Why     string `json:"why"`
	Fix     string `json:"fix"`
}

// findings collects the findings of a check, applying each object's suppression annotation.
type findings struct {
	kept, suppressed []Finding
}

// add reports a finding about o at field; severity "" is the rule's, why and fix "" the rule's.
func (f *findings) add(rule string, sev Severity, o *Object, field, message, why, fix string) {
	r, _ := RuleByID(rule)
	if sev == "" {
		sev = r.Severity
	}
	if why == "" {
		why = r.Why
	}
	if fix == "" {
		fix = r.Fix
	}
	fd := Finding{Rule: rule, Severity: sev, Field: field, Message: message, Why: why, Fix: fix}
	if o != nil {
		fd.Object = ObjectRef{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, File: o.File, Line: o.Line}
		fd.Line = o.LineOf(field)
	}
	if o != nil && ignored(o, rule) {
		f.suppressed = append(f.suppressed, fd)
		return
	}
	f.kept = append(f.kept, fd)
}

// ignored reports whether the object (or, for a workload, its pod template) suppresses a rule.
func ignored(o *Object, rule string) bool { return o.ignore[rule] }

// parseIgnore adds the rule ids of an AnnotationIgnore value to set.
func parseIgnore(set map[string]bool, annotations map[string]string) {
	for _, id := range strings.Split(annotations[AnnotationIgnore], ",") {
		if id = strings.TrimSpace(id); id != "" {
			set[id] = true
		}
	}
}

// sortFindings orders findings by file, line, severity, rule, message.
func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			strings.Compare(a.Object.File, b.Object.File),
			cmp.Compare(a.Object.Line, b.Object.Line),
			cmp.Compare(a.Severity.rank(), b.Severity.rank()),
			strings.Compare(a.Rule, b.Rule),
			cmp.Compare(a.Line, b.Line),
			strings.Compare(a.Message, b.Message),
		)
	})
}
