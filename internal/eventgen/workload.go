package eventgen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/schedlens/schedlens/internal/events"
)

// WorkloadConfig shapes a generated workload history: an unlabelled Deployment of Replicas GPU
// pods on Nodes nodes, taken through Rollouts rollouts, Drains drains and NodeFailures node
// failures, one every Gap, in that rotation — what a collector with its default scope would
// publish (pod snapshots, Scheduled events, node and workload states, successful probes).
type WorkloadConfig struct {
	Seed      uint64
	Cluster   string
	Namespace string
	Name      string
	Replicas  int
	Nodes     int
	Start     time.Time
	// Rollouts, Drains and NodeFailures are how many of each, in rotation, Gap apart.
	Rollouts, Drains, NodeFailures int
	Gap                            time.Duration
	// RequestsEvery, when positive, is how often each Ready pod answers a probe (successes).
	RequestsEvery time.Duration
	IDPrefix      string
	// End deletes every pod still alive when the history ends (Gap after the last disruption),
	// as deleting the Deployment does.
	End bool
}

// DefaultWorkload is prod/infer: 3 pods on 4 nodes, one rollout, one drain, one node failure,
// two minutes apart, probed every second.
func DefaultWorkload() WorkloadConfig {
	return WorkloadConfig{Seed: 22, Cluster: "lab", Namespace: "prod", Name: "infer", Replicas: 3, Nodes: 4,
		Start: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC), Rollouts: 1, Drains: 1, NodeFailures: 1, Gap: 2 * time.Minute, RequestsEvery: time.Second}
}

// Disruption is what the generator did, for tests to hold detection to.
type Disruption struct {
	Kind  string // rollout, drain, node_failure (report.Disruption kinds)
	Node  string // drains and node failures
	Start time.Time
	// Recovered is when every desired pod was Ready again; Interruption the seconds with fewer.
	Recovered    time.Time
	Interruption time.Duration
}

// wpod is a generated pod of the workload.
type wpod struct {
	ref      events.PodRef
	hash     string
	node     string
	created  time.Time
	ready    time.Time
	notReady time.Time // zero: Ready until it goes
	target   string    // DisruptionTarget reason
	targetAt time.Time
	gone     time.Time // deleted (zero: still there)
}

type wgen struct {
	cfg   WorkloadConfig
	rng   *rand.Rand
	rv    int
	out   []*events.Envelope
	pods  []*wpod
	n     int // pods created
	down  map[string]bool
	seq   int
	did   []Disruption
	until time.Time
}

// Workload generates the history and says what it did.
func Workload(cfg WorkloadConfig) ([]*events.Envelope, []Disruption) {
	g := &wgen{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x3017)), rv: 5000, down: map[string]bool{}}
	for i := 1; i <= cfg.Nodes; i++ {
		g.node(cfg.Start.Add(-time.Minute), g.nodeName(i), true, false)
	}
	rev, hash := 1, g.hash(1)
	g.deployment(cfg.Start, rev, hash)
	var alive []*wpod
	for i := 0; i < cfg.Replicas; i++ {
		alive = append(alive, g.start(hash, cfg.Start.Add(time.Duration(i)*100*time.Millisecond), ""))
	}
	t := cfg.Start
	kinds := []string{}
	for i := 0; i < max(cfg.Rollouts, cfg.Drains, cfg.NodeFailures); i++ {
		if i < cfg.Rollouts {
			kinds = append(kinds, "rollout")
		}
		if i < cfg.Drains {
			kinds = append(kinds, "drain")
		}
		if i < cfg.NodeFailures {
			kinds = append(kinds, "node_failure")
		}
	}
	for i, kind := range kinds {
		t = t.Add(cfg.Gap)
		switch kind {
		case "rollout":
			rev++
			hash = g.hash(rev)
			g.deployment(t, rev, hash)
			var next []*wpod
			for j, old := range alive {
				p := g.start(hash, t.Add(time.Duration(j)*2*time.Second), "")
				g.end(old, p.ready.Add(500*time.Millisecond), "", time.Time{}) // terminating 100 ms after its replacement is Ready
				next = append(next, p)
			}
			alive = next
			g.did = append(g.did, Disruption{Kind: kind, Start: t, Recovered: t})
		case "drain", "node_failure":
			node := alive[i%len(alive)].node
			reason := "EvictionByEvictionAPI"
			if kind == "drain" {
				g.node(t, node, true, true)
			} else {
				g.node(t, node, false, false)
				reason = "DeletionByTaintManager"
			}
			g.down[node] = true
			var next []*wpod
			var lastReady time.Time
			firstLoss := time.Time{}
			for _, p := range alive {
				if p.node != node {
					next = append(next, p)
					continue
				}
				lost, evicted := t.Add(time.Second), t.Add(time.Second)
				if kind == "node_failure" {
					lost, evicted = t.Add(500*time.Millisecond), t.Add(3*time.Second)
				}
				p.notReady = lost
				repl := g.start(hash, evicted.Add(100*time.Millisecond), "")
				g.end(p, evicted.Add(500*time.Millisecond), reason, evicted)
				next = append(next, repl)
				lastReady = maxT(lastReady, repl.ready)
				if firstLoss.IsZero() || lost.Before(firstLoss) {
					firstLoss = lost
				}
			}
			alive = next
			back := t.Add(30 * time.Second)
			if kind == "drain" {
				g.node(back, node, true, false)
			} else {
				g.node(back, node, true, false)
			}
			delete(g.down, node)
			g.did = append(g.did, Disruption{Kind: kind, Node: node, Start: t, Recovered: lastReady, Interruption: lastReady.Sub(firstLoss)})
		}
	}
	g.until = t.Add(cfg.Gap)
	if cfg.End {
		for _, p := range alive {
			g.end(p, g.until, "", time.Time{})
		}
	}
	g.probes()
	slices.SortStableFunc(g.out, func(a, b *events.Envelope) int { return a.OccurredAt.Compare(b.OccurredAt) })
	return g.out, g.did
}

func maxT(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (g *wgen) nodeName(i int) string { return fmt.Sprintf("gpu-node-%d", i) }

// hash is revision rev's pod-template-hash: ten characters, as the deployment controller's.
func (g *wgen) hash(rev int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d/%d", g.cfg.Namespace, g.cfg.Name, rev, g.cfg.Seed)))
	return hex.EncodeToString(sum[:])[:10]
}

func (g *wgen) emit(kind events.Kind, id string, at time.Time, pod *events.PodRef, node string, payload any) {
	env := &events.Envelope{V: events.Version, ID: g.cfg.IDPrefix + id, Kind: kind, Cluster: g.cfg.Cluster, Source: "eventgen",
		OccurredAt: at.Truncate(time.Microsecond), ObservedAt: at.Add(time.Duration(1+g.rng.IntN(20)) * time.Millisecond).Truncate(time.Microsecond),
		Pod: pod, Node: node, Payload: payload}
	b, err := events.Encode(env)
	if err != nil {
		panic(err)
	}
	decoded, err := events.Decode(b)
	if err != nil {
		panic(fmt.Sprintf("eventgen produced an invalid envelope: %v", err))
	}
	g.out = append(g.out, decoded)
}

func (g *wgen) node(at time.Time, name string, ready, cordoned bool) {
	g.rv++
	g.emit(events.KindNodeStatus, fmt.Sprintf("node_status/%s/%d", name, g.rv), at, nil, name, &events.NodeStatus{
		Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", events.LabelLabPool: "h100"},
		Ready:  ready, Unschedulable: cordoned, Allocatable: map[string]string{"nvidia.com/gpu": "8"}, KubeletVersion: "v1.37.2"})
}

func (g *wgen) deployment(at time.Time, rev int, hash string) {
	n := int32(g.cfg.Replicas)
	g.rv++
	g.emit(events.KindWorkloadStatus, fmt.Sprintf("workload_status/Deployment/%s/%s/%d", g.cfg.Namespace, g.cfg.Name, g.rv), at, nil, "", &events.WorkloadStatus{
		Kind: events.WorkloadDeployment, Namespace: g.cfg.Namespace, Name: g.cfg.Name, Replicas: &n, Revision: strconv.Itoa(rev), ResourceVersion: strconv.Itoa(g.rv)})
	g.rv++
	g.emit(events.KindWorkloadStatus, fmt.Sprintf("workload_status/ReplicaSet/%s/%s-%s/%d", g.cfg.Namespace, g.cfg.Name, hash, g.rv), at, nil, "", &events.WorkloadStatus{
		Kind: events.WorkloadReplicaSet, Namespace: g.cfg.Namespace, Name: g.cfg.Name + "-" + hash, Replicas: &n, Revision: strconv.Itoa(rev), TemplateHash: hash,
		Owner: &events.Owner{Kind: events.WorkloadDeployment, Name: g.cfg.Name}, ResourceVersion: strconv.Itoa(g.rv)})
}

// place picks a node that is up for a new pod, round robin.
func (g *wgen) place() string {
	for i := 0; i < g.cfg.Nodes; i++ {
		n := g.nodeName(1 + (g.n+i)%g.cfg.Nodes)
		if !g.down[n] {
			return n
		}
	}
	return g.nodeName(1)
}

// start creates a pod of revision hash at t: scheduled at once, Running 2 s later, Ready 3 s
// after that (with a little seeded jitter).
func (g *wgen) start(hash string, t time.Time, _ string) *wpod {
	g.n++
	uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", g.cfg.Seed&0xffffffff, g.n)
	name := fmt.Sprintf("%s-%s-%05d", g.cfg.Name, hash, g.n)
	p := &wpod{ref: events.PodRef{Namespace: g.cfg.Namespace, Name: name, UID: uid}, hash: hash, node: g.place(), created: t}
	g.pods = append(g.pods, p)
	scheduled := t.Add(time.Duration(3+g.rng.IntN(10)) * time.Millisecond)
	running := scheduled.Add(2 * time.Second)
	p.ready = running.Add(3*time.Second + time.Duration(g.rng.IntN(500))*time.Millisecond)
	g.snapshot(p, t, events.PhasePending, false, nil)
	g.emit(events.KindK8sEvent, "k8s_event/"+uid+"/scheduled", scheduled, &p.ref, p.node, &events.K8sEvent{
		Reason: events.ReasonScheduled, Type: "Normal", Action: "Binding", ReportingController: "default-scheduler",
		Note: fmt.Sprintf("Successfully assigned %s/%s to %s", g.cfg.Namespace, name, p.node), EventUID: uid + "-scheduled", Count: 1})
	g.snapshot(p, running, events.PhaseRunning, false, nil)
	g.snapshot(p, p.ready, events.PhaseRunning, true, nil)
	return p
}

// end takes a pod away at gone: not Ready from notReady (when set), its DisruptionTarget
// (reason, from targetAt) and deletion, then gone.
func (g *wgen) end(p *wpod, gone time.Time, reason string, targetAt time.Time) {
	if !p.notReady.IsZero() {
		g.snapshot(p, p.notReady, events.PhaseRunning, false, nil)
	}
	p.target, p.targetAt = reason, targetAt
	terminating := gone.Add(-400 * time.Millisecond)
	if reason != "" {
		terminating = targetAt
	}
	g.snapshot(p, terminating, events.PhaseRunning, false, func(s *events.PodStatus) {
		d := terminating.Truncate(time.Second)
		s.DeletionTimestamp = &d
	})
	p.gone = gone
	g.snapshot(p, gone, events.PhaseRunning, false, func(s *events.PodStatus) {
		d := terminating.Truncate(time.Second)
		s.DeletionTimestamp, s.Deleted = &d, true
	})
}

func (g *wgen) snapshot(p *wpod, at time.Time, phase string, ready bool, mutate func(*events.PodStatus)) {
	g.rv++
	created := p.created.Truncate(time.Second)
	readyStatus := "False"
	if ready {
		readyStatus = "True"
	}
	conds := []events.Condition{{Type: "PodScheduled", Status: "True", LastTransitionTime: &created}, {Type: "Ready", Status: readyStatus}}
	if p.target != "" && !at.Before(p.targetAt) {
		t := p.targetAt.Truncate(time.Second)
		conds = append(conds, events.Condition{Type: "DisruptionTarget", Status: "True", Reason: p.target, LastTransitionTime: &t})
	}
	s := &events.PodStatus{Phase: phase, NodeName: p.node, Labels: map[string]string{"app": g.cfg.Name, events.LabelPodTemplateHash: p.hash},
		Resources:  &events.Resources{Requests: map[string]string{"nvidia.com/gpu": "1"}, Limits: map[string]string{"nvidia.com/gpu": "1"}},
		Conditions: conds, CreationTimestamp: &created, Owner: &events.Owner{Kind: "ReplicaSet", Name: g.cfg.Name + "-" + p.hash},
		ResourceVersion: strconv.Itoa(g.rv),
		GPU:             &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Model: "NVIDIA-H100-80GB-HBM3", Sharing: events.SharingExclusive, Replicas: 1}}
	if mutate != nil {
		mutate(s)
	}
	g.emit(events.KindPodStatus, "pod_status/"+p.ref.UID+"/"+s.ResourceVersion, at, &p.ref, p.node, s)
}

// probes emits a successful request to every pod every RequestsEvery while it is Ready.
func (g *wgen) probes() {
	if g.cfg.RequestsEvery <= 0 {
		return
	}
	for _, p := range g.pods {
		end := g.until
		if !p.notReady.IsZero() {
			end = p.notReady
		} else if !p.gone.IsZero() {
			end = p.gone.Add(-500 * time.Millisecond)
		}
		for at := p.ready.Add(g.cfg.RequestsEvery / 2); at.Before(end); at = at.Add(g.cfg.RequestsEvery) {
			g.seq++
			ready := true
			g.emit(events.KindRequest, fmt.Sprintf("request/eventgen/%s/%d", g.cfg.Name, g.seq), at, &p.ref, p.node, &events.Request{
				Target: "http://127.0.0.1:8000/v2/models/model/infer", Method: "POST", Status: 200, OK: true, LatencyMS: 20 + 10*g.rng.Float64(), PodReady: &ready})
		}
	}
}
