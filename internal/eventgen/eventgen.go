// Package eventgen generates the envelopes a collector would publish for a GPU scheduling
// experiment — pods created, FailedScheduling series, Scheduled, Running, Ready, readiness flaps
// and restarts, preemption, pods that never schedule, requests before and after Ready — seeded
// and deterministic, for the demo sample, tests and benchmarks. Notes follow what the real
// kube-scheduler emits (docs/../LAB.md).
package eventgen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

// Config shapes a generated experiment.
type Config struct {
	Seed           uint64
	Cluster        string
	Namespace      string
	Experiment     string
	Arms           []string
	Runs           int
	PodsPerArm     int // per arm and run
	RequestsPerPod int // probe requests per pod, starting at Running
	Start          time.Time
	// Scope, when set, is carried in pod snapshots, and an inventory of the pods alive is
	// emitted after each run; the first run's oversized pod is deleted while nobody watches, so
	// only the second inventory can end it (deleted_unobserved).
	Scope *events.Scope
	// FirstRun numbers the runs from it (1 when zero) and FirstRequest the request ids from
	// FirstRequest+1, so that one large experiment can be generated a few runs at a time (each
	// part with its own Seed and a later Start) without two envelopes sharing an id.
	FirstRun, FirstRequest int
	// InventoryEvery, above 1, emits the inventory (and the heartbeat before it) only after the
	// first two runs and every InventoryEvery-th one, as a collector listing now and then does.
	InventoryEvery int
	// OversizedRuns, when positive, deletes each run's never-scheduled pod (an observed
	// deletion) that many runs later, so the pods alive, and the inventories, stay bounded
	// however many runs there are. Zero keeps them forever, as the default experiment does.
	OversizedRuns int
	// IDPrefix is put before every envelope id: streams generated with different prefixes
	// share no id (the bench publishes several to one JetStream).
	IDPrefix string
	// DRA makes the arms wait where Kubernetes 1.37 clusters wait: the "affinity" arm's pods
	// are held by a Kueue admission gate first, the "priority" arm is scheduled by
	// KAI-Scheduler (Unschedulable events, its Scheduled note), and the "sharing" arm gets its
	// GPU through one DRA claim per pod (time-slicing config, allocated when scheduled; the
	// first pod of each run fails to prepare once). Off, the stream is the same as ever.
	DRA bool
}

// Default is the day20 experiment in miniature: four arms, three runs, a few pods each.
func Default() Config {
	return Config{
		Seed: 20, Cluster: "lab", Namespace: "ai-lab", Experiment: "day20",
		Arms: []string{"control", "affinity", "priority", "sharing"}, Runs: 3, PodsPerArm: 3,
		RequestsPerPod: 12, Start: time.Date(2026, 11, 30, 4, 32, 0, 0, time.UTC),
		Scope: &events.Scope{Namespaces: []string{"ai-lab"}, Selector: events.LabelExperiment},
	}
}

// Generate returns the envelopes of cfg's experiment in the order a collector would publish
// them (roughly by time). Every id is deterministic.
func Generate(cfg Config) []*events.Envelope {
	g := &gen{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed)), rv: 1000, life: map[string]*life{}, seq: cfg.FirstRequest,
		claims: map[string]allocation{}}
	first := max(cfg.FirstRun, 1)
	t := cfg.Start
	g.experiment(t)
	var vanished string
	var waiting []*podState // oversized pods to delete OversizedRuns runs later, oldest first
	since := cfg.Start
	for run := 1; run <= cfg.Runs; run++ {
		name := strconv.Itoa(first + run - 1)
		for _, arm := range cfg.Arms {
			for i := 1; i <= cfg.PodsPerArm; i++ {
				g.pod(arm, name, i, t)
				t = t.Add(time.Duration(200+g.rng.IntN(800)) * time.Millisecond)
			}
		}
		// One pod per run asks for more GPUs than any node has: never scheduled, censored.
		oversized := g.oversized(name, t)
		if cfg.OversizedRuns > 0 {
			if run > 1 { // the first one vanishes unobserved
				waiting = append(waiting, oversized)
			}
			for len(waiting) > 0 && len(waiting) > cfg.OversizedRuns {
				p := waiting[0]
				waiting = waiting[1:]
				g.snapshot(p, t.Add(g.ms(5, 50)), events.PhasePending, func(s *events.PodStatus) {
					s.DeletionTimestamp, s.Deleted = sec(t), true
				})
			}
		}
		t = t.Add(30 * time.Second)
		if cfg.Scope != nil && (run <= 2 || cfg.InventoryEvery <= 1 || run%cfg.InventoryEvery == 0) {
			if run == 2 {
				g.life[vanished].gone = t.Add(-time.Second) // deleted, and no one saw it
			} else {
				// The collector watched the run live (it was down during the second one): its
				// heartbeat says so since its last inventory.
				g.heartbeat(since, t.Add(-500*time.Millisecond))
			}
			g.inventory(first+run-1, t)
			since = t
		}
		if run == 1 {
			vanished = oversized.ref.UID
		}
	}
	return g.out
}

// experiment emits the definition, as the collector turns the experiment ConfigMap into one.
func (g *gen) experiment(at time.Time) {
	arms := make([]events.ArmSpec, 0, len(g.cfg.Arms))
	for _, a := range g.cfg.Arms {
		arms = append(arms, events.ArmSpec{Name: a})
	}
	g.emit(events.KindExperiment, "experiment/"+g.cfg.Namespace+"/"+g.cfg.Experiment+"-experiment/1", at, nil, "", &events.Experiment{
		Name: g.cfg.Experiment, Change: "placement of the inference pods",
		Fixed: &events.Workload{Image: "nvcr.io/nvidia/tritonserver:25.01-py3", Model: "resnet50", Pods: g.cfg.PodsPerArm,
			Request: &events.FixedRequest{Method: "POST", Port: 8000, Path: "/v2/models/resnet50/infer"}},
		Metrics: &events.Words{List: []string{"pending", "model_load", "time_to_first_success"}}, Repeats: g.cfg.Runs, Baseline: g.cfg.Arms[0], Arms: arms,
		Thresholds: map[string]any{"p95_latency_ms": float64(800), "error_rate": 0.01},
	})
}

// life is when a pod was first and last known to exist, for inventories.
type life struct{ seen, gone time.Time }

// inventory lists the pods a collector listing at t would find: seen by then, not yet gone.
func (g *gen) inventory(run int, t time.Time) {
	uids := []string{}
	for _, uid := range g.order {
		l := g.life[uid]
		if !l.seen.After(t) && (l.gone.IsZero() || l.gone.After(t)) {
			uids = append(uids, uid)
		}
	}
	g.emit(events.KindInventory, fmt.Sprintf("inventory/%s/eventgen/%d", g.cfg.Cluster, run), t, nil, "",
		&events.Inventory{Scope: *g.cfg.Scope, PodUIDs: uids})
}

// heartbeat says the collector's watch was live from since to at.
func (g *gen) heartbeat(since, at time.Time) {
	g.emit(events.KindHeartbeat, fmt.Sprintf("heartbeat/%s/eventgen/%d", g.cfg.Cluster, at.UnixNano()), at, nil, "",
		&events.Heartbeat{Scope: *g.cfg.Scope, Since: since.Truncate(time.Microsecond)})
}

type gen struct {
	cfg  Config
	rng  *rand.Rand
	rv   int
	seq  int
	out  []*events.Envelope
	node int
	// life and order track each pod's observed existence (for inventories), in creation order.
	life  map[string]*life
	order []string
	// claims are the shared DRA claims allocated so far (Config.DRA), by name.
	claims map[string]allocation
}

// allocation is a shared claim's: when it was allocated and seen so, on which node, for how
// many pods.
type allocation struct {
	at, observed time.Time
	node, uuid   string
	pods         int
}

func (g *gen) uid() string {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(g.rng.UintN(256))
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (g *gen) ms(lo, hi int) time.Duration {
	return time.Duration(lo+g.rng.IntN(hi-lo+1)) * time.Millisecond
}

type podState struct {
	ref      events.PodRef
	labels   map[string]string
	priority *int32
	class    string
	created  time.Time
	node     string
	ip       string
	gates    []string          // scheduling gates still on the pod (Config.DRA)
	claims   []events.PodClaim // its DRA claims as the collector resolves them (Config.DRA)
}

func (g *gen) emit(kind events.Kind, id string, at time.Time, pod *events.PodRef, node string, payload any) {
	env := &events.Envelope{
		V: events.Version, ID: g.cfg.IDPrefix + id, Kind: kind, Cluster: g.cfg.Cluster, Source: "eventgen",
		OccurredAt: at.Truncate(time.Microsecond), ObservedAt: at.Add(g.ms(1, 40)).Truncate(time.Microsecond),
		Pod: pod, Node: node, Payload: payload,
	}
	b, err := events.Encode(env)
	if err != nil {
		panic(err) // generated payloads always encode
	}
	decoded, err := events.Decode(b)
	if err != nil {
		panic(fmt.Sprintf("eventgen produced an invalid envelope: %v", err))
	}
	g.out = append(g.out, decoded)
}

func (g *gen) snapshot(p *podState, at time.Time, phase string, mutate func(*events.PodStatus)) {
	g.rv++
	created := p.created.Truncate(time.Second)
	s := &events.PodStatus{
		Phase: phase, NodeName: p.node, Labels: p.labels, PriorityClass: p.class, Priority: p.priority,
		Resources: &events.Resources{
			Requests: map[string]string{"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"},
			Limits:   map[string]string{"nvidia.com/gpu": "1"},
		},
		CreationTimestamp: &created,
		Owner:             &events.Owner{Kind: "ReplicaSet", Name: p.labels["app"]},
		ResourceVersion:   strconv.Itoa(g.rv),
	}
	s.SchedulingGates, s.Claims = p.gates, p.claims
	if mutate != nil {
		mutate(s)
	}
	if g.cfg.Scope != nil {
		s.Scope = g.cfg.Scope
	}
	s.GPU = &events.GPU{Resource: "nvidia.com/gpu", Count: 1, Sharing: events.SharingUnknown}
	if gpu := kube.GPUOfClaims(s.Claims); gpu != nil {
		s.GPU = gpu
	} else if p.node != "" {
		s.GPU.Model, s.GPU.Sharing, s.GPU.Replicas = "NVIDIA-H100-80GB-HBM3", events.SharingExclusive, 1
		if p.labels[events.LabelArm] == "sharing" {
			s.GPU.Model, s.GPU.Sharing, s.GPU.Replicas = "NVIDIA-A100-SXM4-80GB", events.SharingTimeSlicing, 4
		}
	}
	l := g.life[p.ref.UID]
	if l == nil {
		l = &life{seen: at}
		g.life[p.ref.UID] = l
		g.order = append(g.order, p.ref.UID)
	}
	if s.Deleted {
		l.gone = at
	}
	g.emit(events.KindPodStatus, "pod_status/"+p.ref.UID+"/"+s.ResourceVersion, at, &p.ref, p.node, s)
}

func (g *gen) k8sEvent(p *podState, at time.Time, reason, typ, action, note, eventUID string, count int) {
	controller := "default-scheduler"
	switch reason {
	case events.ReasonUnschedulable:
		controller = "kai-scheduler"
	case events.ReasonFailedPrepareDynamicResources:
		controller = "kubelet"
	}
	e := &events.K8sEvent{
		Reason: reason, Type: typ, Note: note, ReportingController: controller, Action: action,
		EventUID: eventUID, Count: count,
	}
	if reason == events.ReasonFailedScheduling {
		e.Scheduling = kube.ParseFailedScheduling(note)
	}
	g.emit(events.KindK8sEvent, "k8s_event/"+eventUID+"/"+strconv.Itoa(max(count, 1)), at, &p.ref, p.node, e)
}

func (g *gen) request(p *podState, at time.Time, ok, ready bool) {
	g.seq++
	r := &events.Request{Target: "http://" + p.ip + ":8000/v2/models/resnet50/infer", OK: ok, BytesOut: 602112, PodReady: &ready}
	if ok {
		r.Status, r.LatencyMS, r.BytesIn = 200, 18+g.rng.Float64()*30, 4012
	} else {
		r.Status, r.LatencyMS, r.Error = 503, 1+g.rng.Float64()*3, "http_503"
	}
	g.emit(events.KindRequest, fmt.Sprintf("request/prober-eventgen/%d", g.seq), at, &p.ref, p.node, r)
}

func (g *gen) gpuSample(p *podState, at time.Time, util float64) {
	gpu := strconv.Itoa(g.node % 2)
	uuid := fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", g.node, g.node)
	g.emit(events.KindGPUSample, fmt.Sprintf("gpu_sample/%s/%s/%d", p.node, uuid, at.UnixNano()), at, &p.ref, p.node, &events.GPUSample{
		GPU: gpu, UUID: uuid, Model: "NVIDIA H100 80GB HBM3", PeriodS: 5,
		Metrics: map[string]float64{"DCGM_FI_DEV_GPU_UTIL": util, "DCGM_FI_DEV_FB_USED": float64(16384 + g.rng.IntN(512))},
	})
}

func sec(t time.Time) *time.Time { s := t.Truncate(time.Second); return &s }

func cond(typ, status string, at time.Time) events.Condition {
	return events.Condition{Type: typ, Status: status, LastTransitionTime: sec(at)}
}

func (g *gen) newPod(arm, run string, i int, at time.Time) *podState {
	name := fmt.Sprintf("%s-%s-r%s-%d", g.cfg.Experiment, arm, run, i)
	p := &podState{
		ref:     events.PodRef{Namespace: g.cfg.Namespace, Name: name, UID: g.uid()},
		labels:  map[string]string{"app": g.cfg.Experiment, events.LabelExperiment: g.cfg.Experiment, events.LabelArm: arm, events.LabelRun: run},
		created: at,
		ip:      fmt.Sprintf("127.0.%d.%d", 1+g.rng.IntN(200), 1+g.rng.IntN(250)),
	}
	if arm == "priority" {
		prio := int32(1000000)
		p.class, p.priority = "high-priority", &prio
	}
	return p
}

// pod generates one experiment pod's whole life.
func (g *gen) pod(arm, run string, i int, t0 time.Time) {
	p := g.newPod(arm, run, i, t0)
	kai := g.cfg.DRA && arm == "priority"
	// The sharing arm's pods of a run share one claim (time-slicing config): the first pod's
	// scheduling allocates it, the others join it allocated.
	claim := fmt.Sprintf("%s-sharing-r%s-gpu", g.cfg.Experiment, run)
	if g.cfg.DRA && arm == "affinity" {
		p.gates = []string{"kueue.x-k8s.io/admission"}
	}
	if g.cfg.DRA && arm == "sharing" {
		p.claims = []events.PodClaim{{Name: "gpu", Claim: claim, DeviceClasses: []string{kube.DriverNVIDIAGPU}}}
	}
	g.snapshot(p, t0.Add(g.ms(2, 20)), events.PhasePending, func(s *events.PodStatus) {
		if len(p.gates) > 0 {
			s.Conditions = []events.Condition{{Type: "PodScheduled", Status: "False", Reason: "SchedulingGated", LastTransitionTime: sec(t0)}}
		}
	})
	t := t0.Add(g.ms(5, 60))
	if len(p.gates) > 0 {
		// Kueue admits the workload: it writes the flavor's node selector into the pod (still
		// gated), then the gate goes and the scheduler sees the pod.
		t = t.Add(g.ms(800, 2500))
		g.snapshot(p, t, events.PhasePending, nil)
		t = t.Add(g.ms(5, 30))
		p.gates = nil
		g.snapshot(p, t, events.PhasePending, nil)
		t = t.Add(g.ms(2, 10))
	}

	// Some pods wait: a FailedScheduling series whose count rises with each retry.
	if g.rng.IntN(3) == 0 || arm == "priority" {
		evUID := g.uid()
		retries := 1 + g.rng.IntN(3)
		note := "0/6 nodes are available: 1 Insufficient nvidia.com/gpu, 5 node(s) didn't match Pod's node affinity/selector. preemption: 0/6 nodes are available: 1 No preemption victims found for incoming pod, 5 Preemption is not helpful for scheduling."
		reason := events.ReasonFailedScheduling
		if kai {
			reason = events.ReasonUnschedulable
			note = "no nodes with enough resources were found: 1 node(s) didn't have enough resources: GPUs. \n5 node(s) didn't match Pod's node affinity/selector."
		}
		for c := 1; c <= retries; c++ {
			g.k8sEvent(p, t, reason, "Warning", "Scheduling", note, evUID, c)
			if c == 1 {
				g.snapshot(p, t.Add(g.ms(1, 5)), events.PhasePending, func(s *events.PodStatus) {
					s.Conditions = []events.Condition{{Type: "PodScheduled", Status: "False", Reason: "Unschedulable", LastTransitionTime: sec(t)}}
				})
			}
			t = t.Add(g.ms(300, 1500))
		}
		if arm == "priority" {
			g.preemptVictim(run, i, t, p)
			t = t.Add(g.ms(600, 1200))
		}
	}

	g.node++
	p.node = fmt.Sprintf("gpu-node-%d", 1+g.node%6)
	scheduled := t
	if p.claims != nil {
		// The scheduler allocates the claim just before it binds the pod: one GPU of the node,
		// time-sliced, reserved for this pod.
		a, ok := g.claims[claim]
		if !ok {
			// Allocated while the first pod was scheduled: before any pod of the arm bound.
			a = allocation{at: *sec(t0.Add(3 * time.Millisecond)), observed: t0.Add(4 * time.Millisecond).Truncate(time.Microsecond), node: p.node,
				uuid: fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", g.node, g.node)}
		}
		a.pods++
		g.claims[claim] = a
		p.node = a.node // the claim's GPU is on one node
		allocated, observed := a.at, a.observed
		p.claims = []events.PodClaim{{Name: "gpu", Claim: claim, DeviceClasses: []string{kube.DriverNVIDIAGPU},
			AllocatedAt: &allocated, AllocationObserved: &observed, ReservedFor: a.pods, Sharing: events.SharingTimeSlicing,
			Devices: []events.ClaimDevice{{Request: "gpu", DeviceClass: kube.DriverNVIDIAGPU, Driver: kube.DriverNVIDIAGPU, Pool: p.node, Device: "gpu-0",
				Node: p.node, Type: "gpu", Model: "NVIDIA H200", UUID: a.uuid}}}}
	}
	note := fmt.Sprintf("Successfully assigned %s/%s to %s", p.ref.Namespace, p.ref.Name, p.node)
	if kai {
		note = fmt.Sprintf("Successfully assigned pod %s/%s to node %s at node-pool default", p.ref.Namespace, p.ref.Name, p.node)
	}
	g.k8sEvent(p, scheduled, events.ReasonScheduled, "Normal", "Binding", note, g.uid(), 0)
	g.snapshot(p, scheduled.Add(g.ms(2, 15)), events.PhasePending, func(s *events.PodStatus) {
		s.Conditions = []events.Condition{cond("PodScheduled", "True", scheduled)}
	})
	if p.claims != nil && i == 1 {
		g.k8sEvent(p, scheduled.Add(g.ms(100, 400)), events.ReasonFailedPrepareDynamicResources, "Warning", "",
			fmt.Sprintf("Failed to prepare dynamic resources: NodePrepareResources failed for claim %s/%s: device busy", p.ref.Namespace, claim), g.uid(), 0)
	}

	// Image pull, then Running; the model loads before Ready (sharing loads slower).
	running := scheduled.Add(g.ms(800, 3000))
	load := g.ms(4000, 9000)
	if arm == "sharing" {
		load += g.ms(3000, 6000)
	}
	ready := running.Add(load)
	// serving fills in a snapshot of the running pod: Ready (or not) since since, its model
	// container started at started after restarts restarts.
	serving := func(ready bool, since time.Time, restarts int, started time.Time) func(*events.PodStatus) {
		status := "False"
		if ready {
			status = "True"
		}
		return func(s *events.PodStatus) {
			s.PodIP, s.HostIP = p.ip, "127.0.0.1"
			s.Conditions = []events.Condition{
				cond("PodScheduled", "True", scheduled), cond("Initialized", "True", scheduled),
				cond("ContainersReady", status, since), cond("Ready", status, since),
			}
			s.Containers = []events.ContainerStatus{{Name: "model", Ready: ready, RestartCount: restarts, State: "running", StartedAt: sec(started)}}
		}
	}
	g.snapshot(p, running.Add(g.ms(5, 50)), events.PhaseRunning, serving(false, running, 0, running))
	g.snapshot(p, ready.Add(g.ms(5, 50)), events.PhaseRunning, serving(true, ready, 0, running))

	// Probe requests from Running onward: 503 until Ready, then mostly successes.
	end := ready.Add(20 * time.Second)
	step := end.Sub(running) / time.Duration(max(g.cfg.RequestsPerPod, 1))
	for k := 0; k < g.cfg.RequestsPerPod; k++ {
		at := running.Add(time.Duration(k)*step + g.ms(0, 20))
		g.request(p, at, at.After(ready) && g.rng.IntN(50) != 0, at.After(ready))
	}

	// dcgm-exporter samples every 5 s: the GPU idles while the model loads, then serves.
	for at := running; at.Before(end); at = at.Add(5 * time.Second) {
		util := float64(g.rng.IntN(4))
		if at.After(ready) {
			util = float64(35 + g.rng.IntN(50))
		}
		g.gpuSample(p, at, util)
	}

	// Now and then a crash: readiness flaps, the container restarts, Ready again.
	if g.rng.IntN(5) == 0 {
		down := ready.Add(g.ms(5000, 9000))
		back := down.Add(g.ms(3000, 6000))
		g.snapshot(p, down.Add(g.ms(5, 50)), events.PhaseRunning, serving(false, down, 1, down))
		g.snapshot(p, back.Add(g.ms(5, 50)), events.PhaseRunning, serving(true, back, 1, down))
	}

	// The run ends: the pod is deleted.
	gone := end.Add(g.ms(1000, 3000))
	g.snapshot(p, gone, events.PhaseRunning, func(s *events.PodStatus) {
		serving(true, ready, 0, running)(s)
		s.DeletionTimestamp, s.Deleted = sec(gone), true
	})
}

// preemptVictim generates a low-priority background pod that the preemptor displaces.
func (g *gen) preemptVictim(run string, i int, at time.Time, preemptor *podState) {
	v := g.newPod("background", run, i, at.Add(-90*time.Second))
	v.labels = map[string]string{"app": g.cfg.Experiment + "-background"}
	v.node = fmt.Sprintf("gpu-node-%d", 1+g.node%6)
	started := v.created.Add(2 * time.Second)
	g.snapshot(v, started.Add(g.ms(5, 50)), events.PhaseRunning, func(s *events.PodStatus) {
		s.Conditions = []events.Condition{cond("PodScheduled", "True", v.created), cond("Ready", "True", started)}
		s.Containers = []events.ContainerStatus{{Name: "model", Ready: true, State: "running", StartedAt: sec(started)}}
	})
	g.k8sEvent(v, at, events.ReasonPreempted, "Normal", "Preempting",
		fmt.Sprintf("Preempted by pod %s on node %s", preemptor.ref.UID, v.node), g.uid(), 0)
	g.snapshot(v, at.Add(g.ms(10, 40)), events.PhaseRunning, func(s *events.PodStatus) {
		s.Conditions = []events.Condition{cond("PodScheduled", "True", v.created), cond("Ready", "True", started),
			{Type: "DisruptionTarget", Status: "True", Reason: "PreemptionByScheduler", LastTransitionTime: sec(at)}}
		s.DeletionTimestamp = sec(at)
	})
	g.snapshot(v, at.Add(g.ms(300, 700)), events.PhaseRunning, func(s *events.PodStatus) {
		s.DeletionTimestamp, s.Deleted = sec(at), true
	})
}

// oversized generates a pod asking for 3 GPUs: FailedScheduling forever, never scheduled. It
// returns the pod.
func (g *gen) oversized(run string, at time.Time) *podState {
	p := g.newPod("oversized", run, 1, at)
	g.snapshot(p, at.Add(g.ms(2, 20)), events.PhasePending, nil)
	evUID := g.uid()
	note := "0/6 nodes are available: 6 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."
	t := at.Add(g.ms(10, 50))
	for c := 1; c <= 4; c++ {
		g.k8sEvent(p, t, events.ReasonFailedScheduling, "Warning", "Scheduling", note, evUID, c)
		t = t.Add(time.Duration(c) * 5 * time.Second)
	}
	return p
}

// ChunkInventories replaces every inventory among envs by its parts of at most size UIDs, as a
// collector publishes a large scope (kube.InventoryEnvelopes: part i of n, the whole one's id
// with "/part-<i>-of-<n>", the same list time), each encoded and decoded as the correlator
// receives it. drop names parts to leave out, as "<inventory number>/<part>" counting both from
// 1. It also returns how many inventories it split.
func ChunkInventories(envs []*events.Envelope, size int, drop map[string]bool) ([]*events.Envelope, int, error) {
	var out []*events.Envelope
	n := 0
	for _, env := range envs {
		inv, ok := env.Payload.(*events.Inventory)
		if !ok {
			out = append(out, env)
			continue
		}
		n++
		uids := inv.PodUIDs
		parts := (len(uids) + size - 1) / size
		for i := range parts {
			if drop[fmt.Sprintf("%d/%d", n, i+1)] {
				continue
			}
			p := *env
			p.ID = fmt.Sprintf("%s/part-%d-of-%d", env.ID, i+1, parts)
			p.Payload = &events.Inventory{Scope: inv.Scope, PodUIDs: slices.Clone(uids[i*size : min((i+1)*size, len(uids))]), Part: i + 1, Parts: parts}
			p.Raw, p.Data = nil, nil
			b, err := events.Encode(&p)
			if err != nil {
				return nil, 0, err
			}
			dec, err := events.Decode(b)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, dec)
		}
	}
	return out, n, nil
}
