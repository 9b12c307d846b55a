package endpoints

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/schedlens/schedlens/lab/sim"
)

// Sharing modes as sim.Pod.Sharing spells them.
const (
	sharingExclusive   = "exclusive"
	sharingTimeSlicing = "time-slicing"
	sharingMPS         = "mps"
	sharingMIG         = "mig"
)

const (
	jitterSigma = 0.10 // sd of the log of the jitter factor
	tailOneIn   = 100  // one request in tailOneIn takes tailFactor longer
	tailFactor  = 3.0
	mpsPerPeer  = 0.35 // MPS slowdown per additional client on the GPU
)

// Latency draws how long pod p takes to serve one inference request: the base time of its GPU
// model, times the contention of its sharing mode, times a seeded jitter, with an occasional tail.
// The model is described in the package documentation. It uses exactly two draws of rng
// (a normal, then an integer), so a seeded rng gives a reproducible sequence.
func Latency(p sim.Pod, rng *rand.Rand) time.Duration {
	d := float64(baseLatency(p.GPUModel)) * contention(p)
	d *= math.Exp(jitterSigma * rng.NormFloat64())
	if rng.IntN(tailOneIn) == 0 {
		d *= tailFactor
	}
	return time.Duration(d)
}

// baseLatency is the uncontended service time on a whole GPU of the given product.
func baseLatency(product string) time.Duration {
	return lookupModel(product).latency
}

// contention is the slowdown the pod's sharing mode imposes.
func contention(p sim.Pod) float64 {
	sharers := max(p.Sharers, 1)
	switch p.Sharing {
	case sharingTimeSlicing:
		// the GPU is time-multiplexed between the sharers' contexts
		return float64(sharers)
	case sharingMPS:
		// kernels of the clients run concurrently, so the slowdown is well below linear
		return 1 + mpsPerPeer*float64(sharers-1)
	case sharingMIG:
		return migSlowdown(p.MIGProfile)
	default:
		return 1
	}
}

// migSlowdown is the slowdown of a MIG instance against the whole GPU, by its compute slices
// (the "1g" of "1g.10gb").
func migSlowdown(profile string) float64 {
	switch migSlices(profile) {
	case 1:
		return 3.5
	case 2:
		return 2
	case 3:
		return 1.5
	case 4:
		return 1.2
	default:
		return 1
	}
}

// migSlices returns the number of compute slices of a MIG profile such as "3g.40gb", or 7 (the
// whole GPU) when it cannot be read.
func migSlices(profile string) int {
	g, _, ok := strings.Cut(profile, "g")
	if !ok {
		return 7
	}
	n, err := strconv.Atoi(g)
	if err != nil || n < 1 || n > 7 {
		return 7
	}
	return n
}

// migMemoryMiB returns the framebuffer of a MIG profile such as "1g.10gb" (10 GiB), or 0 when
// the profile does not say.
func migMemoryMiB(profile string) int {
	_, mem, ok := strings.Cut(profile, ".")
	if !ok {
		return 0
	}
	gb, err := strconv.Atoi(strings.TrimSuffix(strings.ToLower(mem), "gb"))
	if err != nil || gb < 0 {
		return 0
	}
	return gb * 1024
}
