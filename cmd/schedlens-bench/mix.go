package main

import (
	"fmt"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
)

// benchCluster is the cluster every generated envelope names, hence its subjects
// schedlens.v1.bench.<kind>.
const benchCluster = "bench"

// mix is a shape of generated experiment, scaled to a number of events.
type mix struct {
	name, shape string
	// config returns the generator's settings for about n events.
	config func(n int) eventgen.Config
}

// podMix is a busy cluster: many short-lived pods (ten per arm and run, each a few snapshots,
// events, probe results and GPU samples), an inventory every third run, never-scheduled pods
// deleted two runs later; the pods and runs grow with n, the pods alive at a time do not.
var podMix = mix{name: "pods", shape: "many short-lived pods, an inventory every 3 runs", config: func(n int) eventgen.Config {
	cfg := eventgen.Default()
	cfg.PodsPerArm, cfg.InventoryEvery, cfg.OversizedRuns = 10, 3, 2
	cfg.Runs = 1 + n/1100 // a run is about 1,180 events: generated once, cut to n
	return cfg
}}

// requestMix is a few pods with many request results: the default experiment's 36 pods, with
// the requests per pod growing with n (with the preempted background pods and the
// never-scheduled ones, under 50 pods).
var requestMix = mix{name: "requests", shape: "36 pods, many request results", config: func(n int) eventgen.Config {
	cfg := eventgen.Default()
	pods := cfg.Runs * len(cfg.Arms) * cfg.PodsPerArm
	cfg.RequestsPerPod = max(cfg.RequestsPerPod, n/pods)
	return cfg
}}

// generate returns the first n envelopes of the mix, with ids of their own (the mix and size
// prefix them, so measurements sharing one JetStream share no id). The config is grown until
// it yields n; every id is distinct.
func (m mix) generate(n int) ([]*events.Envelope, error) {
	cfg := m.config(n)
	cfg.Cluster = benchCluster
	cfg.IDPrefix = fmt.Sprintf("bench-%s-%d/", m.name, n)
	for {
		envs := eventgen.Generate(cfg)
		if len(envs) < n {
			cfg.Runs += cfg.Runs/10 + 1
			continue
		}
		envs = envs[:n]
		seen := make(map[string]bool, n)
		for _, env := range envs {
			if seen[env.ID] {
				return nil, fmt.Errorf("eventgen produced id %q twice: the end-to-end count could never reach %d", env.ID, n)
			}
			seen[env.ID] = true
		}
		return envs, nil
	}
}
