package compare_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/compare"
)

// noise describes the variation a simulated experiment has, on the log scale of each duration
// and latency: shared by both arms in a repeat (cluster state: what was cached, which nodes
// were busy), particular to an arm in a repeat, particular to a pod (its node), and per request.
type noise struct {
	repeat, armRepeat, pod float64 // durations (pending, start, model load)
	// latency: shared by the arms of a repeat, particular to an arm in a repeat, to a pod
	latRepeat, latArmRepeat, latPod float64
	jitter                          float64 // request latency: sd of the log of the jitter factor
	tailOneIn                       int     // one request in tailOneIn takes tailFactor longer
	tailFactor                      float64
	servedErrorRate                 float64
}

// labNoise is the lab's noise as measured on `make demo` (docs/comparison.md): the request
// latency model of lab/endpoints (10 % log-normal jitter, one request in 100 three times
// slower), pods of one arm on the same GPU model differing by a few percent, and repeats
// differing by the cluster state the scheduler and the simulated kubelet see.
//
// Measured (`make demo DEMO_ARGS=-exit`, 2026-12-01): run values of arms with one GPU model vary
// by 2–3 % in latency p50, which is what ~35 successful requests per run and the 2 % histogram
// buckets explain alone (pods of one GPU model share their latency model, so the pod and
// arm×repeat terms are kept at 1 %); durations vary much more: model load p50 by ~8 % between
// the runs of an arm (mostly what the median of 3 pods that differ by ~12 % explains), and most
// between repeats (the first repeat starts on cold caches: control's start p50 1.2 s, then 0.38
// and 0.37 s).
var labNoise = noise{repeat: 0.15, armRepeat: 0.04, pod: 0.12, latRepeat: 0.03, latArmRepeat: 0.01, latPod: 0.01,
	jitter: 0.10, tailOneIn: 100, tailFactor: 3, servedErrorRate: 0.002}

// runDominated is a harsher cluster: repeats of one arm differ four times more than its pods do
// (a cluster state that changes between repeats and hits arms differently).
var runDominated = noise{repeat: 0.15, armRepeat: 0.2, pod: 0.05, latRepeat: 0.03, latArmRepeat: 0.1, latPod: 0.02,
	jitter: 0.10, tailOneIn: 100, tailFactor: 3}

// quietNoise is a well-controlled cluster, where equivalence can be shown.
var quietNoise = noise{repeat: 0.03, armRepeat: 0.01, pod: 0.03, latRepeat: 0.01, latArmRepeat: 0.005, latPod: 0.005,
	jitter: 0.10, tailOneIn: 100, tailFactor: 3}

// effect multiplies an arm's durations and latencies (1 = unchanged).
type effect struct {
	pending, start, load, firstRequest, latency float64
	servedErrorRate                             float64 // absolute
}

var noEffect = effect{pending: 1, start: 1, load: 1, firstRequest: 1, latency: 1}

// workload is what an arm does without noise: seconds to be bound, to start, to load the
// model, to the first successful request after Ready, and the request latency in ms.
type workload struct {
	pending, start, load, first, latencyMS float64
}

// labWorkload is the lab's inference pod (lab/kubelet and lab/endpoints at the demo's speed): bound
// in ~50 ms, started in ~0.6 s, model loaded in ~5 s, first success within a probe interval of
// Ready, ~20 ms per request on an H100. busyWorkload waits two seconds for a place first.
var (
	labWorkload  = workload{pending: 0.05, start: 0.6, load: 5, first: 0.15, latencyMS: 20}
	busyWorkload = workload{pending: 2, start: 0.6, load: 5, first: 0.15, latencyMS: 20}
)

const probeEvery = 0.2 // the prober's interval: requests before Ready fail

// simRepeat is what a repeat does to every arm (shared noise).
type simRepeat struct{ pending, start, load, latency float64 }

func newRepeats(rng *rand.Rand, n int, nz noise) []simRepeat {
	out := make([]simRepeat, n)
	for i := range out {
		out[i] = simRepeat{rng.NormFloat64() * nz.repeat, rng.NormFloat64() * nz.repeat, rng.NormFloat64() * nz.repeat, rng.NormFloat64() * nz.latRepeat}
	}
	return out
}

// simArm draws one arm of an experiment: for each repeat, pods pods serving requests requests
// each, with the effect planted.
func simArm(rng *rand.Rand, name string, reps []simRepeat, pods, requests int, w workload, nz noise, e effect) compare.ArmInput {
	in := compare.ArmInput{Name: name, Runs: map[string]compare.RunData{}}
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for r, rep := range reps {
		arm := simRepeat{rng.NormFloat64() * nz.armRepeat, rng.NormFloat64() * nz.armRepeat, rng.NormFloat64() * nz.armRepeat, rng.NormFloat64() * nz.latArmRepeat}
		var rd compare.RunData
		for p := range pods {
			podNoise := rng.NormFloat64() * nz.pod
			ln := func(base, f, shared, own float64) float64 {
				return base * f * math.Exp(shared+own+podNoise)
			}
			pending := ln(w.pending, e.pending, rep.pending, arm.pending)
			st := ln(w.start, e.start, rep.start, arm.start)
			load := ln(w.load, e.load, rep.load, arm.load)
			first := w.first * e.firstRequest * (0.5 + rng.Float64())
			created := start.Add(time.Duration(r)*time.Minute + time.Duration(p)*time.Second)
			total := pending + st + load + first
			until := created.Add(time.Duration((total + 30) * float64(time.Second)))
			s := align.Summary{
				Milestones:    align.Milestones{Created: &created},
				ObservedUntil: &until,
				Durations:     align.Durations{Pending: &pending, Start: &st, ModelLoad: &load, Total: &total},
			}
			preReady := int((st + load) / probeEvery)
			lat := map[int32]int64{}
			errs := 0
			latency := w.latencyMS * e.latency * math.Exp(rep.latency+arm.latency+rng.NormFloat64()*nz.latPod)
			for range requests {
				if rng.Float64() < nz.servedErrorRate+e.servedErrorRate {
					errs++
					continue
				}
				ms := latency * math.Exp(nz.jitter*rng.NormFloat64())
				if nz.tailOneIn > 0 && rng.IntN(nz.tailOneIn) == 0 {
					ms *= nz.tailFactor
				}
				lat[align.LatencyBucket(ms)]++
			}
			s.Counts = align.Counts{Requests: requests + preReady, RequestErrors: errs + preReady, PreReadyRequests: preReady, PreReadyErrors: preReady}
			rd.Pods = append(rd.Pods, compare.PodData{Summary: s, Latency: lat})
		}
		in.Runs[fmt.Sprint(r+1)] = rd
	}
	return in
}

// design is the shape of a simulated experiment: repeats, pods per arm and repeat, requests
// per pod after Ready.
type design struct{ repeats, pods, requests int }

// issueDesign is the design of issue 10's simulations: 3 repeats × 3 pods × 100 requests.
var issueDesign = design{repeats: 3, pods: 3, requests: 100}

// experiment draws a control arm and a treatment arm with effect e over the same repeats.
func experiment(rng *rand.Rand, d design, w workload, nz noise, e effect) []compare.ArmInput {
	reps := newRepeats(rng, d.repeats, nz)
	return []compare.ArmInput{
		simArm(rng, "control", reps, d.pods, d.requests, w, nz, noEffect),
		simArm(rng, "treatment", reps, d.pods, d.requests, w, nz, e),
	}
}

// simulate compares n simulated experiments and returns the treatment arm of each.
func simulate(n int, seed uint64, d design, w workload, nz noise, e effect, primary []string) []compare.ArmResult {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]compare.ArmResult, 0, n)
	for i := range n {
		rs := compare.Compare("control", experiment(rng, d, w, nz, e), nil, compare.Options{Primary: primary, Seed: uint64(i)})
		for _, r := range rs {
			if r.Arm == "treatment" {
				out = append(out, r)
			}
		}
	}
	return out
}

// verdictCounts tallies arm verdicts.
func verdictCounts(rs []compare.ArmResult) map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		out[r.Verdict]++
	}
	return out
}
