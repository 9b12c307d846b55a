package kubelet

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/schedlens/schedlens/lab/cluster"
)

// The model the package doc states, apart from the client calls: the delays as functions of what
// they depend on and of the random draws they consume, and the address scheme. The Kubelet
// methods at the end feed them a pod's and a node's state and the kubelet's seeded rng, drawing
// exactly what the kubelet always drew, in the same order (a cached image pull draws nothing).

// draws is the randomness the delay model consumes; the kubelet's *rand.Rand is one.
type draws interface {
	Float64() float64
	NormFloat64() float64
}

// uniform is a draw in [lo, hi).
func uniform(r draws, lo, hi float64) float64 { return lo + r.Float64()*(hi-lo) }

// pullSeconds is the image pull time: 0.3 when the node already pulled the image (no draw),
// else 1.5–3.0.
func pullSeconds(cached bool, r draws) float64 {
	if cached {
		return 0.3
	}
	return uniform(r, 1.5, 3.0)
}

// startSeconds is the container start time: 0.2–0.4.
func startSeconds(r draws) float64 { return uniform(r, 0.2, 0.4) }

// modelLoad is what a model's load time depends on.
type modelLoad struct {
	product string // the node's GPU product, e.g. NVIDIA-H100-80GB-HBM3
	cached  bool   // the node caches the model
	sharing string // the sharing mode of the pod's GPU; "" when the pod has no GPU
	sharers int    // time-slicing and mps: pods on the pod's GPU, itself included
	profile string // mig: the instance profile, e.g. 3g.40gb
}

// seconds is the load time: by GPU model H100 3, A100 4, L40S 5, T4 8, other 6; ×0.6 when
// cached; ×(1 + 0.5·(sharers−1)) time-sliced or MPS; ×(7/slices)^0.5 on a MIG instance; × a
// lognormal jitter (σ 0.15) of one normal draw.
func (l modelLoad) seconds(r draws) float64 {
	base := 6.0
	for _, m := range []struct {
		sub string
		s   float64
	}{{"H100", 3}, {"A100", 4}, {"L40S", 5}, {"T4", 8}} {
		if strings.Contains(l.product, m.sub) {
			base = m.s
			break
		}
	}
	if l.cached {
		base *= 0.6
	}
	switch l.sharing {
	case cluster.TimeSlicing, cluster.MPS:
		base *= 1 + 0.5*float64(l.sharers-1)
	case cluster.MIG:
		base *= math.Sqrt(7 / float64(migSlices(l.profile)))
	}
	return base * math.Exp(0.15*r.NormFloat64())
}

// migSlices is the compute slices of a MIG profile ("3g.40gb" → 3).
func migSlices(profile string) int {
	if i := strings.IndexByte(profile, 'g'); i > 0 {
		if n, err := strconv.Atoi(profile[:i]); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

// scaled is a delay of seconds under Config.Speed.
func scaled(seconds, speed float64) time.Duration {
	return time.Duration(seconds * speed * float64(time.Second))
}

// withDefaults is c with Speed 1 when not positive and IPBlock 100 when its four second octets
// B..B+3 would not fit in 1..255.
func (c Config) withDefaults() Config {
	if c.Speed <= 0 {
		c.Speed = 1
	}
	if c.IPBlock <= 0 || c.IPBlock > 252 {
		c.IPBlock = 100
	}
	return c
}

// nodeAddr is the address of node index in the lab of block: 127.B.i.1.
func nodeAddr(block, index int) string { return fmt.Sprintf("127.%d.%d.1", block, index) }

// podAddr is the address of the n-th pod (from 0) node index ran in the lab of block:
// 127.<B+1+(n/253)%3>.i.<2+n%253>, distinct for n < 759, then reused.
func podAddr(block, index, n int) string {
	return fmt.Sprintf("127.%d.%d.%d", block+1+(n/253)%3, index, 2+n%253)
}

// The kubelet's side: the model fed with its state and its rng. Called with k.mu held.

func (k *Kubelet) uniform(lo, hi float64) float64 { return uniform(k.rng, lo, hi) }

func (k *Kubelet) pullDelay(st *pod) float64 { return pullSeconds(st.node.images[st.image], k.rng) }

func (k *Kubelet) startDelay() float64 { return startSeconds(k.rng) }

// loadDelay is the model load time of st on its node now.
func (k *Kubelet) loadDelay(st *pod) float64 { return loadOf(st).seconds(k.rng) }

// loadOf is what st's model load time depends on now: its node's GPU and cache, and the sharing
// of its GPU (none when it has none).
func loadOf(st *pod) modelLoad {
	l := modelLoad{product: st.node.pool.GPU.Product, cached: st.node.models[st.model]}
	if st.gpu >= 0 {
		l.sharing, l.sharers, l.profile = st.node.pool.Sharing.Mode, st.node.sharers(st.gpu), st.node.pool.Sharing.Profile
		if st.sharing != "" {
			l.sharing = st.sharing // a DRA claim's sharing, not the pool's
		}
	}
	return l
}

func (k *Kubelet) nodeIP(nd *node) string { return nodeAddr(k.cfg.IPBlock, nd.index) }
