// Package preflight checks GPU inference manifests before an experiment: Deployments,
// StatefulSets, Jobs, Pods, PodDisruptionBudgets, PriorityClasses and experiment ConfigMaps,
// read from multi-document YAML with the file and line of every object, are checked against a
// cluster (a live snapshot or a lab cluster spec) by rules that know about GPU resources, node
// pools, taints, priorities, probes, disruption budgets, rollouts and experiments. Each finding
// has a rule id, a severity, the object and field, why it matters and a fix; an object can
// suppress rules with the schedlens.io/preflight-ignore annotation. Reports render as a table,
// JSON (schema Schema) or SARIF 2.1.0.
//
// The dry run with the real scheduler lives in preflight/simulate; this package prepares its
// input (SimulationOf) and turns its result into findings (SimulationFindings). The rules are
// described, with an example each, in docs/preflight.md.
package preflight
