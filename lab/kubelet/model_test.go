package kubelet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlens/schedlens/lab/cluster"
)

// Seconds in the wants below are written to the millisecond (or finer where it matters).
var approx = cmpopts.EquateApprox(0, 0.0005)

// fixed is a draws that always draws u (uniform, in [0, 1)) and z (standard normal), and counts
// the draws.
type fixed struct {
	u, z float64
	n    int
}

func (f *fixed) Float64() float64     { f.n++; return f.u }
func (f *fixed) NormFloat64() float64 { f.n++; return f.z }

// almost1 is the largest uniform draw.
var almost1 = math.Nextafter(1, 0)

const (
	h100  = "NVIDIA-H100-80GB-HBM3"
	a100  = "NVIDIA-A100-SXM4-80GB"
	l40s  = "NVIDIA-L40S"
	t4    = "Tesla-T4"
	other = "NVIDIA-GeForce-RTX-4090"
)

func TestModelLoadSeconds(t *testing.T) {
	ts, mps, mig := cluster.TimeSlicing, cluster.MPS, cluster.MIG
	for _, c := range []struct {
		name string
		load modelLoad
		z    float64 // the jitter's normal draw; 0 is the median, no jitter
		want float64
	}{
		// Base by GPU model (a substring of the product).
		{"H100", modelLoad{product: h100}, 0, 3},
		{"H100 NVL", modelLoad{product: "NVIDIA-H100-NVL"}, 0, 3},
		{"A100", modelLoad{product: a100}, 0, 4},
		{"L40S", modelLoad{product: l40s}, 0, 5},
		{"T4", modelLoad{product: t4}, 0, 8},
		{"other GPU", modelLoad{product: other}, 0, 6},
		{"L4 is not L40S", modelLoad{product: "NVIDIA-L4"}, 0, 6},
		{"no product", modelLoad{}, 0, 6},

		// ×0.6 when the node caches the model.
		{"H100 cached", modelLoad{product: h100, cached: true}, 0, 1.8},
		{"A100 cached", modelLoad{product: a100, cached: true}, 0, 2.4},
		{"L40S cached", modelLoad{product: l40s, cached: true}, 0, 3},
		{"T4 cached", modelLoad{product: t4, cached: true}, 0, 4.8},
		{"other cached", modelLoad{product: other, cached: true}, 0, 3.6},

		// Time-slicing and MPS: ×(1 + 0.5·(sharers−1)).
		{"time-slicing alone", modelLoad{product: a100, sharing: ts, sharers: 1}, 0, 4},
		{"time-slicing 2 sharers", modelLoad{product: a100, sharing: ts, sharers: 2}, 0, 6},
		{"time-slicing 4 sharers", modelLoad{product: a100, sharing: ts, sharers: 4}, 0, 10},
		{"mps 3 sharers", modelLoad{product: a100, sharing: mps, sharers: 3}, 0, 8},
		{"mps 2 sharers H100", modelLoad{product: h100, sharing: mps, sharers: 2}, 0, 4.5},
		{"time-slicing 4 sharers cached", modelLoad{product: a100, cached: true, sharing: ts, sharers: 4}, 0, 6},
		{"exclusive ignores sharers", modelLoad{product: a100, sharing: cluster.Exclusive, sharers: 4}, 0, 4},
		{"no GPU ignores sharers", modelLoad{product: a100, sharers: 4}, 0, 4},

		// MIG: ×(7/slices)^0.5.
		{"mig 1g.10gb", modelLoad{product: a100, sharing: mig, profile: "1g.10gb"}, 0, 10.583},     // 4·√7
		{"mig 2g.20gb", modelLoad{product: a100, sharing: mig, profile: "2g.20gb"}, 0, 7.483},      // 4·√3.5
		{"mig 3g.40gb", modelLoad{product: a100, sharing: mig, profile: "3g.40gb"}, 0, 6.110},      // 4·√(7/3)
		{"mig 4g.40gb", modelLoad{product: a100, sharing: mig, profile: "4g.40gb"}, 0, 5.292},      // 4·√1.75
		{"mig 7g.80gb", modelLoad{product: a100, sharing: mig, profile: "7g.80gb"}, 0, 4},          // 4·√1
		{"mig 1g.10gb H100", modelLoad{product: h100, sharing: mig, profile: "1g.10gb"}, 0, 7.937}, // 3·√7
		{"mig 3g.40gb cached", modelLoad{product: a100, cached: true, sharing: mig, profile: "3g.40gb"}, 0, 3.666},
		{"mig ignores sharers", modelLoad{product: a100, sharing: mig, sharers: 7, profile: "7g.80gb"}, 0, 4},
		{"mig unreadable profile is 1 slice", modelLoad{product: a100, sharing: mig, profile: "mig"}, 0, 10.583},
		{"mig no profile is 1 slice", modelLoad{product: a100, sharing: mig}, 0, 10.583},

		// Lognormal jitter, σ 0.15: ×e^(0.15·z).
		{"jitter +1σ", modelLoad{product: h100}, 1, 3.486},   // 3·e^0.15
		{"jitter −1σ", modelLoad{product: h100}, -1, 2.582},  // 3/e^0.15
		{"jitter +2σ", modelLoad{product: h100}, 2, 4.050},   // 3·e^0.3
		{"jitter −3σ T4", modelLoad{product: t4}, -3, 5.101}, // 8/e^0.45
		// 4·0.6·1.5·e^0.15
		{"jitter on everything", modelLoad{product: a100, cached: true, sharing: ts, sharers: 2}, 1, 4.183},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &fixed{u: 0.5, z: c.z}
			got := c.load.seconds(r)
			if diff := cmp.Diff(c.want, got, approx); diff != "" {
				t.Errorf("%+v load seconds (-want +got):\n%s", c.load, diff)
			}
			if r.n != 1 {
				t.Errorf("%d draws, want 1 normal draw", r.n)
			}
		})
	}
}

// The jitter over many seeded draws: median the base, log-spread σ 0.15.
func TestModelLoadJitter(t *testing.T) {
	type spread struct {
		Median, P16, P84 float64 // seconds: the percentiles at −1σ and +1σ
		Sigma            float64 // standard deviation of ln(seconds/base)
	}
	for _, c := range []struct {
		name string
		load modelLoad
		want spread
	}{
		{"H100", modelLoad{product: h100}, spread{Median: 3, P16: 2.58, P84: 3.49, Sigma: 0.15}},
		{"T4 cached", modelLoad{product: t4, cached: true}, spread{Median: 4.8, P16: 4.13, P84: 5.58, Sigma: 0.15}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			base := c.load.seconds(&fixed{})
			const n = 20000
			var got []float64
			var sum, sum2 float64
			for range n {
				s := c.load.seconds(r)
				got = append(got, s)
				l := math.Log(s / base)
				sum, sum2 = sum+l, sum2+l*l
			}
			slices.Sort(got)
			mean := sum / n
			sp := spread{
				Median: got[n/2], P16: got[n*16/100], P84: got[n*84/100],
				Sigma: math.Sqrt(sum2/n - mean*mean),
			}
			if diff := cmp.Diff(c.want, sp, cmpopts.EquateApprox(0.01, 0)); diff != "" { // within 1%
				t.Errorf("load seconds over %d draws (-want +got):\n%s", n, diff)
			}
		})
	}
}

func TestPullAndStartSeconds(t *testing.T) {
	pull := func(r draws) float64 { return pullSeconds(false, r) }
	pullCached := func(r draws) float64 { return pullSeconds(true, r) }
	for _, c := range []struct {
		name  string
		delay func(draws) float64
		u     float64 // the uniform draw
		want  float64
		draws int
	}{
		{"pull lowest", pull, 0, 1.5, 1},
		{"pull middle", pull, 0.5, 2.25, 1},
		{"pull highest", pull, almost1, 3.0, 1},
		{"pull cached", pullCached, 0, 0.3, 0},
		{"pull cached, any draw", pullCached, almost1, 0.3, 0},
		{"start lowest", startSeconds, 0, 0.2, 1},
		{"start middle", startSeconds, 0.5, 0.3, 1},
		{"start highest", startSeconds, almost1, 0.4, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &fixed{u: c.u}
			got := c.delay(r)
			if diff := cmp.Diff(c.want, got, approx); diff != "" {
				t.Errorf("seconds (-want +got):\n%s", diff)
			}
			// A draw more or less shifts every later delay of a seeded lab.
			if r.n != c.draws {
				t.Errorf("%d draws, want %d", r.n, c.draws)
			}
		})
	}
}

// The range of many seeded draws.
func TestPullAndStartRange(t *testing.T) {
	type span struct{ Min, Max float64 }
	for _, c := range []struct {
		name  string
		delay func(draws) float64
		want  span
	}{
		{"pull", func(r draws) float64 { return pullSeconds(false, r) }, span{1.5, 3.0}},
		{"pull cached", func(r draws) float64 { return pullSeconds(true, r) }, span{0.3, 0.3}},
		{"start", startSeconds, span{0.2, 0.4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			got := span{math.Inf(1), math.Inf(-1)}
			for range 10000 {
				s := c.delay(r)
				got = span{min(got.Min, s), max(got.Max, s)}
			}
			if diff := cmp.Diff(c.want, got, cmpopts.EquateApprox(0, 0.001)); diff != "" {
				t.Errorf("range over 10000 draws (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScaled(t *testing.T) {
	for _, c := range []struct {
		seconds, speed float64
		want           time.Duration
	}{
		{2, 1, 2 * time.Second},
		{2, 0.5, time.Second},
		{2, 2, 4 * time.Second},
		{0.3, 0.1, 30 * time.Millisecond},
		{10.583, 0.25, 2645750 * time.Microsecond},
	} {
		t.Run(fmt.Sprintf("%gs at speed %g", c.seconds, c.speed), func(t *testing.T) {
			if diff := cmp.Diff(c.want, scaled(c.seconds, c.speed)); diff != "" {
				t.Errorf("delay (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	for _, c := range []struct {
		name      string
		cfg, want Config
	}{
		{"zero", Config{}, Config{Speed: 1, IPBlock: 100}},
		{"kept", Config{Seed: 7, Speed: 0.25, IPBlock: 8}, Config{Seed: 7, Speed: 0.25, IPBlock: 8}},
		{"negative speed", Config{Speed: -1, IPBlock: 104}, Config{Speed: 1, IPBlock: 104}},
		{"last block that fits", Config{Speed: 2, IPBlock: 252}, Config{Speed: 2, IPBlock: 252}},
		{"block past 255", Config{Speed: 1, IPBlock: 253}, Config{Speed: 1, IPBlock: 100}},
		{"negative block", Config{Speed: 1, IPBlock: -4}, Config{Speed: 1, IPBlock: 100}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, c.cfg.withDefaults()); diff != "" {
				t.Errorf("withDefaults (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.want, New(nil, &cluster.Spec{}, c.cfg, nil).cfg); diff != "" {
				t.Errorf("New's config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodAddr(t *testing.T) {
	for _, c := range []struct {
		block, node, n int
		want           string
	}{
		{100, 3, 0, "127.101.3.2"},
		{100, 3, 1, "127.101.3.3"},
		{100, 3, 252, "127.101.3.254"},
		{100, 3, 253, "127.102.3.2"},   // the 254th pod: next octet
		{100, 3, 505, "127.102.3.254"}, //
		{100, 3, 506, "127.103.3.2"},   //
		{100, 3, 758, "127.103.3.254"}, // the last distinct one
		{100, 3, 759, "127.101.3.2"},   // reused: the 760th pod gets the first pod's address
		{100, 3, 1012, "127.102.3.2"},  //
		{100, 0, 0, "127.101.0.2"},
		{100, 254, 0, "127.101.254.2"},
		{8, 0, 0, "127.9.0.2"},
		{104, 3, 0, "127.105.3.2"},
		{104, 3, 253, "127.106.3.2"},
		{104, 3, 759, "127.105.3.2"},
		{252, 1, 506, "127.255.1.2"},
	} {
		t.Run(fmt.Sprintf("block %d node %d pod %d", c.block, c.node, c.n), func(t *testing.T) {
			if diff := cmp.Diff(c.want, podAddr(c.block, c.node, c.n)); diff != "" {
				t.Errorf("pod address (-want +got):\n%s", diff)
			}
		})
	}
}

// Node addresses follow the node's index across pools, in spec order.
func TestNodeIP(t *testing.T) {
	spec := &cluster.Spec{Pools: []cluster.Pool{
		{Name: "a", Nodes: 2, GPU: cluster.GPU{Product: h100, Count: 1}},
		{Name: "b", Nodes: 1, GPU: cluster.GPU{Product: t4, Count: 1}},
	}}
	for _, c := range []struct {
		name string
		cfg  Config
		want map[string]string
	}{
		{"default block", Config{}, map[string]string{"gpu-a-1": "127.100.0.1", "gpu-a-2": "127.100.1.1", "gpu-b-1": "127.100.2.1"}},
		{"block 8", Config{IPBlock: 8}, map[string]string{"gpu-a-1": "127.8.0.1", "gpu-a-2": "127.8.1.1", "gpu-b-1": "127.8.2.1"}},
		{"block 252", Config{IPBlock: 252}, map[string]string{"gpu-a-1": "127.252.0.1", "gpu-a-2": "127.252.1.1", "gpu-b-1": "127.252.2.1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{}
			for _, n := range New(nil, spec, c.cfg, nil).Nodes() {
				got[n.Name] = n.IP
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("node addresses (-want +got):\n%s", diff)
			}
		})
	}
}

// Two labs on one machine (blocks 4 apart, as labenv reserves them) never share an address,
// and no lab shares one within itself until a node has run 759 pods.
func TestAddressesDistinct(t *testing.T) {
	type lab struct {
		Addresses, Distinct int
		Octets              []int // second octets used
	}
	const nodes, pods = 5, 759
	for _, c := range []struct {
		name   string
		blocks []int
		want   []lab
		shared int // addresses in more than one lab
	}{
		{"one lab", []int{100}, []lab{{3800, 3800, []int{100, 101, 102, 103}}}, 0},
		{"blocks 100 and 104", []int{100, 104}, []lab{
			{3800, 3800, []int{100, 101, 102, 103}},
			{3800, 3800, []int{104, 105, 106, 107}},
		}, 0},
		{"blocks 8 and 248", []int{8, 248}, []lab{
			{3800, 3800, []int{8, 9, 10, 11}},
			{3800, 3800, []int{248, 249, 250, 251}},
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			owners := map[string]int{}
			var got []lab
			for _, b := range c.blocks {
				var addrs []string
				for i := range nodes {
					addrs = append(addrs, nodeAddr(b, i))
					for n := range pods {
						addrs = append(addrs, podAddr(b, i, n))
					}
				}
				seen, octets := map[string]bool{}, map[int]bool{}
				for _, a := range addrs {
					seen[a] = true
					o, _ := strconv.Atoi(strings.Split(a, ".")[1])
					octets[o] = true
				}
				for a := range seen {
					owners[a]++
				}
				l := lab{Addresses: len(addrs), Distinct: len(seen)}
				for o := range octets {
					l.Octets = append(l.Octets, o)
				}
				slices.Sort(l.Octets)
				got = append(got, l)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("addresses of %d nodes × (1 + %d pods) per lab (-want +got):\n%s", nodes, pods, diff)
			}
			shared := 0
			for _, n := range owners {
				if n > 1 {
					shared++
				}
			}
			if shared != c.shared {
				t.Errorf("%d addresses in more than one lab, want %d", shared, c.shared)
			}
		})
	}
}

// loadOf reads a pod's load inputs off the kubelet's state: pool product and cached models,
// and the sharing of the GPU slot admit gave it.
func TestLoadOf(t *testing.T) {
	k := New(nil, testSpec, Config{}, nil)
	pods := map[string]*pod{}
	for _, p := range []struct {
		name, node, model string
		gpus              int
	}{
		{"cached", "gpu-h100-1", "llama", 1},
		{"not cached", "gpu-h100-1", "mistral", 1},
		{"shared 1st", "gpu-shared-1", "llama", 1},
		{"shared 2nd", "gpu-shared-1", "llama", 1},
		{"shared 3rd", "gpu-shared-1", "llama", 1},
		{"shared without GPU", "gpu-shared-1", "llama", 0},
		{"mig", "gpu-mig-1", "llama", 1},
	} {
		pods[p.name] = admitPod(k, p.node, p.name, p.model, p.gpus)
	}
	ts := cluster.TimeSlicing
	for _, c := range []struct {
		pod  string
		want modelLoad
	}{
		{"cached", modelLoad{product: h100, cached: true, sharers: 1}}, // exclusive: sharers unused
		{"not cached", modelLoad{product: h100, sharers: 1}},
		{"shared 1st", modelLoad{product: a100, sharing: ts, sharers: 3}}, // the GPU's sharers now
		{"shared 3rd", modelLoad{product: a100, sharing: ts, sharers: 3}},
		{"shared without GPU", modelLoad{product: a100}},
		{"mig", modelLoad{product: a100, sharing: cluster.MIG, sharers: 1, profile: "3g.40gb"}},
	} {
		t.Run(c.pod, func(t *testing.T) {
			if diff := cmp.Diff(c.want, loadOf(pods[c.pod]), cmp.AllowUnexported(modelLoad{})); diff != "" {
				t.Errorf("load inputs (-want +got):\n%s", diff)
			}
		})
	}
}

// The delays a seeded kubelet draws, pod after pod, as the kubelet draws them (observe: pull +
// start; start: load; ready: the model is cached). These numbers are what a lab with this seed
// replays (captured from kubelet.go before model.go was split out of it, to full precision); a
// change in the model or in the order of draws changes them.
func TestSeededDelays(t *testing.T) {
	type delays struct {
		Pod         string
		Start, Load float64 // seconds to Running, and from Running to Ready
	}
	want := []delays{
		{"h100 llama (cached)", 3.0925, 1.2211},
		{"h100 mistral", 0.6934, 3.1136},              // image pulled
		{"h100 mistral, no GPU left", 0.5434, 2.0751}, // mistral cached by the previous pod
		{"shared llama 1", 2.8510, 3.9342},
		{"shared llama 2", 0.5177, 3.0704},
		{"shared llama 3", 0.6501, 4.2703},
		{"mig llama 1", 2.8372, 4.3569},
		{"mig llama 2", 0.5676, 3.1558},
	}
	k := New(nil, testSpec, Config{Seed: 7}, nil)
	var got []delays
	for i, p := range []struct{ node, model string }{
		{"gpu-h100-1", "llama"}, {"gpu-h100-1", "mistral"}, {"gpu-h100-1", "mistral"},
		{"gpu-shared-1", "llama"}, {"gpu-shared-1", "llama"}, {"gpu-shared-1", "llama"},
		{"gpu-mig-1", "llama"}, {"gpu-mig-1", "llama"},
	} {
		st := admitPod(k, p.node, fmt.Sprint("p", i), p.model, 1)
		start := k.pullDelay(st) + k.startDelay()
		st.node.images[st.image] = true
		load := k.loadDelay(st)
		st.node.models[st.model] = true
		got = append(got, delays{want[i].Pod, start, load})
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 0.00005)); diff != "" {
		t.Errorf("seed 7 delays (-want +got):\n%s", diff)
	}
}

var testSpec = &cluster.Spec{Pools: []cluster.Pool{
	{Name: "h100", Nodes: 1, GPU: cluster.GPU{Product: h100, Count: 2}, CachedModels: []string{"llama"}},
	{Name: "shared", Nodes: 1, GPU: cluster.GPU{Product: a100, Count: 1}, Sharing: cluster.Sharing{Mode: cluster.TimeSlicing, Replicas: 4}},
	{Name: "mig", Nodes: 1, GPU: cluster.GPU{Product: a100, Count: 1}, Sharing: cluster.Sharing{Mode: cluster.MIG, Profile: "3g.40gb", Slices: 2}},
}}

// admitPod admits a pod with one image and gpus GPU units to a node, as observe does.
func admitPod(k *Kubelet, nodeName, name, model string, gpus int) *pod {
	c := corev1.Container{Name: "c", Image: "img"}
	if gpus > 0 {
		c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(gpus), resource.DecimalSI)}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{AnnotationModel: model}},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{c}},
	}
	st := k.admit(p, k.nodes[nodeName])
	k.pods[p.UID] = st
	return st
}
