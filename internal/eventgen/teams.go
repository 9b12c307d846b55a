package eventgen

import (
	"slices"
	"time"

	"github.com/schedlens/schedlens/internal/events"
)

// TeamA and TeamB are the namespaces of Teams.
const (
	TeamA = "team-a"
	TeamB = "team-b"
)

// TeamsStart is when Teams' workloads begin (their disruptions follow two minutes apart); its
// experiments ran the day before.
var TeamsStart = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)

// Teams is two teams sharing a cluster's nodes, for what a caller allowed one namespace must
// see alone: in each of TeamA and TeamB an unlabelled Deployment (infer-a, infer-b) taken
// through a rollout, a drain and a node failure on the same four nodes at the same times, and an
// experiment of its own (exp-a, exp-b, defined by a ConfigMap of its namespace); and experiment
// shared, whose pods and definitions are in both. Every envelope id is distinct.
func Teams() []*events.Envelope {
	var out []*events.Envelope
	for i, ns := range []string{TeamA, TeamB} {
		w := DefaultWorkload()
		w.Seed, w.Namespace, w.Name, w.IDPrefix = uint64(31+i), ns, "infer-"+ns[len(ns)-1:], ns+"/"
		w.Start = TeamsStart
		envs, _ := Workload(w)
		out = append(out, envs...)
		for j, exp := range []string{"exp-" + ns[len(ns)-1:], "shared"} {
			cfg := Config{Seed: uint64(41 + 2*i + j), Cluster: "lab", Namespace: ns, Experiment: exp, Arms: []string{"control", "priority"},
				Runs: 2, PodsPerArm: 2, RequestsPerPod: 6, Start: TeamsStart.Add(-24*time.Hour + time.Duration(2*i+j)*10*time.Minute),
				FirstRequest: (2*i + j) * 100_000} // request ids are a sequence: each part its own
			out = append(out, Generate(cfg)...)
		}
	}
	slices.SortStableFunc(out, func(a, b *events.Envelope) int { return a.OccurredAt.Compare(b.OccurredAt) })
	return out
}
