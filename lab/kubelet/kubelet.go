// Package kubelet plays the kubelet of every simulated GPU node: a pod the real scheduler bound
// to one of them goes through image pull → Running → model load → Ready by writing its status,
// with delays drawn (seeded) from a model that depends on the GPU model, on whether the node has
// the image and the model cached, and on how many pods share the GPU. It crashes containers on
// demand, posts every node's heartbeats (a Lease and the node's conditions, so the real node
// lifecycle controller sees it alive), stops them to fail a node and resumes them to rejoin it,
// and finishes graceful deletions so preemptions, evictions and rollouts complete (without a
// kubelet a deleted pod stays Terminating forever).
//
// Delay model (seconds, before Config.Speed scales them):
//   - image pull: 0.3 when the node already pulled the image, else 1.5–3.0;
//   - container start: 0.2–0.4;
//   - model load: H100 3, A100 4, L40S 5, T4 8, other 6; ×0.6 when the node caches the model
//     (pool cachedModels, or a pod of the same model ran there before); ×(1 + 0.5·(sharers−1)) on
//     a time-sliced or MPS GPU; ×(7/slices of the profile)^0.5 on a MIG instance; × a lognormal
//     jitter (σ 0.15).
//
// Addresses are loopback, inside the lab's block of second octets B..B+3 (Config.IPBlock, so
// that two labs on one machine never share one): node i is 127.B.i.1, its n-th pod
// 127.<B+1+(n/253)%3>.i.<2+n%253> — distinct until a node has run 759 pods, then reused — so
// the inference endpoints (package endpoints) can listen on them.
package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/sim"
)

// Pod annotations the simulated kubelet honours.
const (
	// AnnotationModel names the model a pod loads (cache hits are per model); default "model".
	AnnotationModel = "lab.schedlens.io/model"
	// AnnotationCrashes makes the container crash that many times while loading the model
	// before it becomes Ready (a crash loop with restarts).
	AnnotationCrashes = "lab.schedlens.io/crashes"
	// AnnotationPrepareFailures makes preparing the pod's DRA claims fail that many times
	// (a FailedPrepareDynamicResources event each, one second apart) before it succeeds.
	AnnotationPrepareFailures = "lab.schedlens.io/prepare-failures"
)

// Config tunes the simulation.
type Config struct {
	Seed  uint64
	Speed float64 // multiplies every delay: 0.5 runs twice as fast; default 1
	// IPBlock is the first of the four second octets of 127.0.0.0/8 the lab's addresses use
	// (default 100).
	IPBlock int
	// Heartbeat is how often each node renews its Lease (default 1s; real time, not scaled by
	// Speed). Keep it a quarter of the controller manager's node monitor grace period or less.
	Heartbeat time.Duration
	// StatusEvery is how often each node posts its conditions with a fresh heartbeat (default
	// 10s).
	StatusEvery time.Duration
}

// Kubelet simulates the kubelet of every node in a cluster spec.
type Kubelet struct {
	client kubernetes.Interface
	spec   *cluster.Spec
	cfg    Config
	logger *slog.Logger

	mu     sync.Mutex
	rng    *rand.Rand
	nodes  map[string]*node
	pods   map[types.UID]*pod
	ctx    context.Context
	store  cache.Store // the pods informer's, once Run started it
	claims cache.Store // the ResourceClaims informer's, for a cluster with DRA pools
}

type node struct {
	name   string
	index  int
	pool   cluster.Pool
	failed bool                  // heartbeats stopped (FailNode): the kubelet writes nothing
	lease  *coordinationv1.Lease // last written; nil: read or create it first
	gpus   []gpu
	images map[string]bool
	models map[string]bool
	nextIP int
}

type gpu struct {
	uuid  string
	slots []types.UID // one per replica or MIG instance; "" when free
}

type pod struct {
	ns, name  string
	uid       types.UID
	node      *node
	model     string
	image     string
	container string
	ip        string
	gpu, slot int // -1 without a GPU
	units     int
	sharing   string // how its DRA claim shares the GPU (cluster sharing modes); "" for the pool's
	prepare   int    // DRA prepare failures still to inject
	crashes   int
	restarts  int
	running   bool
	ready     bool
	loading   bool
	deleting  bool
	gen       int                 // bumped to cancel pending steps
	pending   []func(*corev1.Pod) // status changes not written while the node is failed
}

// New returns a kubelet for the nodes of spec; Run starts it.
func New(client kubernetes.Interface, spec *cluster.Spec, cfg Config, logger *slog.Logger) *Kubelet {
	cfg = cfg.withDefaults()
	k := &Kubelet{
		client: client, spec: spec, cfg: cfg, logger: logger,
		rng:   rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x6b75)),
		nodes: map[string]*node{}, pods: map[types.UID]*pod{},
	}
	i := 0
	for _, p := range spec.Pools {
		for n := 1; n <= p.Nodes; n++ {
			nd := &node{name: p.NodeName(n), index: i, pool: p, images: map[string]bool{}, models: map[string]bool{}}
			for _, m := range p.CachedModels {
				nd.models[m] = true
			}
			slots := 1
			switch p.Sharing.Mode {
			case cluster.TimeSlicing, cluster.MPS:
				slots = p.Sharing.Replicas
			case cluster.MIG:
				slots = p.Sharing.Slices
			}
			for g := range p.GPU.Count {
				nd.gpus = append(nd.gpus, gpu{uuid: cluster.GPUUUID(nd.name, g), slots: make([]types.UID, slots)})
			}
			k.nodes[nd.name] = nd
			i++
		}
	}
	return k
}

// Run posts the nodes' heartbeats and follows pods until ctx ends.
func (k *Kubelet) Run(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(k.client, 0)
	inf := f.Core().V1().Pods().Informer()
	k.mu.Lock()
	k.ctx, k.store = ctx, inf.GetStore()
	if k.spec.HasDRA() {
		k.claims = f.Resource().V1().ResourceClaims().Informer().GetStore()
	}
	k.mu.Unlock()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.observe(obj) },
		UpdateFunc: func(_, obj any) { k.observe(obj) },
		DeleteFunc: func(obj any) { k.forget(obj) },
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	k.heartbeats(ctx)
	f.Shutdown()
	return nil
}

func (k *Kubelet) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	nd := k.nodes[p.Spec.NodeName]
	if nd == nil {
		return
	}
	st := k.pods[p.UID]
	if nd.failed && (st == nil || p.DeletionTimestamp != nil) {
		return // the node is cut off: RejoinNode observes the pod again
	}
	if st == nil {
		if p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			return
		}
		st = k.admit(p, nd)
		k.pods[p.UID] = st
		if p.DeletionTimestamp == nil && st.prepare > 0 {
			k.after(st, 1, k.failPrepare)
		} else if p.DeletionTimestamp == nil {
			k.after(st, k.pullDelay(st)+k.startDelay(), k.start)
		}
	}
	if p.DeletionTimestamp != nil && !st.deleting {
		st.deleting = true
		st.gen++
		k.after(st, k.uniform(0.1, 0.3), k.finishDeletion)
	}
}

// admit assigns the pod its GPU slots.
func (k *Kubelet) admit(p *corev1.Pod, nd *node) *pod {
	st := &pod{ns: p.Namespace, name: p.Name, uid: p.UID, node: nd, gpu: -1, slot: -1, model: "model"}
	if m := p.Annotations[AnnotationModel]; m != "" {
		st.model = m
	}
	if n, err := strconv.Atoi(p.Annotations[AnnotationCrashes]); err == nil && n > 0 {
		st.crashes = n
	}
	if n, err := strconv.Atoi(p.Annotations[AnnotationPrepareFailures]); err == nil && n > 0 && len(p.Spec.ResourceClaims) > 0 {
		st.prepare = n
	}
	if nd.pool.DRA {
		k.admitClaims(p, nd, st)
		return st
	}
	if len(p.Spec.Containers) > 0 {
		st.container, st.image = p.Spec.Containers[0].Name, p.Spec.Containers[0].Image
	}
	for _, c := range p.Spec.Containers {
		for name, q := range c.Resources.Limits {
			if strings.HasPrefix(string(name), "nvidia.com/") {
				st.units += int(q.Value())
			}
		}
	}
	for u := 0; u < st.units; u++ {
		g, s := nd.freeSlot()
		if g < 0 {
			break // more than the node has: the scheduler would not have bound it
		}
		nd.gpus[g].slots[s] = p.UID
		if st.gpu < 0 {
			st.gpu, st.slot = g, s
		}
	}
	return st
}

// admitClaims gives a pod on a DRA node the devices its claims were allocated there: a MIG
// instance is its slot; a whole GPU takes a slot of its own, added when pods share the claim
// (or, as the driver allows with sharing configured, several claims the device).
func (k *Kubelet) admitClaims(p *corev1.Pod, nd *node, st *pod) {
	if k.claims == nil {
		return
	}
	for _, pc := range kube.PodClaims(p, nil) {
		obj, ok, err := k.claims.GetByKey(p.Namespace + "/" + pc.Claim)
		if pc.Claim == "" || err != nil || !ok {
			continue
		}
		claim := obj.(*resourcev1.ResourceClaim)
		if claim.Status.Allocation == nil {
			continue
		}
		if len(claim.Status.ReservedFor) > 1 {
			st.sharing = cluster.TimeSlicing // the driver's default for a shared claim
		}
		if s := kube.ClaimSharing(claim); s != "" {
			st.sharing = s // events.SharingTimeSlicing and SharingMPS are cluster.TimeSlicing and MPS
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			g, inst, ok := cluster.ParseDRADevice(r.Device)
			if r.Driver != cluster.DRADriver || r.Pool != nd.name || !ok || g >= len(nd.gpus) {
				continue
			}
			slot := inst
			if nd.pool.Sharing.Mode != cluster.MIG {
				slot = slices.Index(nd.gpus[g].slots, "")
				if slot < 0 {
					nd.gpus[g].slots = append(nd.gpus[g].slots, "")
					slot = len(nd.gpus[g].slots) - 1
				}
			}
			if slot >= len(nd.gpus[g].slots) {
				continue
			}
			nd.gpus[g].slots[slot] = p.UID
			st.units++
			if st.gpu < 0 {
				st.gpu, st.slot = g, slot
			}
		}
	}
}

// failPrepare: preparing the pod's claims failed (an injected failure); the kubelet retries
// after a second, as its DRA manager does.
func (k *Kubelet) failPrepare(st *pod) {
	k.mu.Lock()
	st.prepare--
	again := st.prepare > 0
	ns, name, uid := st.ns, st.name, st.uid
	k.mu.Unlock()
	k.event(ns, name, uid, corev1.EventTypeWarning, "FailedPrepareDynamicResources",
		"Failed to prepare dynamic resources: NodePrepareResources failed for claim "+ns+"/"+name+": injected by the lab")
	k.mu.Lock()
	if again {
		k.after(st, 1, k.failPrepare)
	} else {
		k.after(st, k.pullDelay(st)+k.startDelay(), k.start)
	}
	k.mu.Unlock()
}

// event records a Kubernetes Event about a pod, as the kubelet's recorder does.
func (k *Kubelet) event(ns, name string, uid types.UID, typ, reason, note string) {
	now := metav1.NowMicro()
	ev := &eventsv1.Event{
		// Named as the kubelet's recorder names them: the object's name and a unique suffix.
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", name, now.UnixNano()), Namespace: ns},
		EventTime:           now,
		ReportingController: "kubelet",
		ReportingInstance:   "lab-kubelet",
		Action:              "PrepareResources",
		Reason:              reason,
		Note:                note,
		Type:                typ,
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name, UID: uid, APIVersion: "v1"},
	}
	if _, err := k.client.EventsV1().Events(ns).Create(k.ctx, ev, metav1.CreateOptions{}); err != nil {
		k.logger.Warn("record event", "pod", ns+"/"+name, "reason", reason, "error", err)
	}
}

// freeSlot picks the free slot on the least-used GPU.
func (nd *node) freeSlot() (int, int) {
	best, bestUsed, slot := -1, math.MaxInt, -1
	for g, gp := range nd.gpus {
		used, free := 0, -1
		for s, u := range gp.slots {
			if u != "" {
				used++
			} else if free < 0 {
				free = s
			}
		}
		if free >= 0 && used < bestUsed {
			best, bestUsed, slot = g, used, free
		}
	}
	return best, slot
}

func (nd *node) sharers(g int) int {
	n := 0
	for _, u := range nd.gpus[g].slots {
		if u != "" {
			n++
		}
	}
	return n
}

func (k *Kubelet) release(st *pod) {
	for g := range st.node.gpus {
		for s, u := range st.node.gpus[g].slots {
			if u == st.uid {
				st.node.gpus[g].slots[s] = ""
			}
		}
	}
}

func (k *Kubelet) forget(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if st := k.pods[p.UID]; st != nil {
		st.gen++
		k.release(st)
		delete(k.pods, p.UID)
	}
}

// after runs step for st after d seconds (scaled), unless st changed course meanwhile.
// Called with k.mu held.
func (k *Kubelet) after(st *pod, seconds float64, step func(*pod)) {
	gen := st.gen
	ctx := k.ctx
	time.AfterFunc(scaled(seconds, k.cfg.Speed), func() {
		if ctx != nil && ctx.Err() != nil {
			return
		}
		k.mu.Lock()
		current := k.pods[st.uid] == st && st.gen == gen
		k.mu.Unlock()
		if current {
			step(st)
		}
	})
}

// start: the image is pulled and the container runs; the model starts loading.
func (k *Kubelet) start(st *pod) {
	k.mu.Lock()
	nd := st.node
	if nd.pool.DRA && st.gpu < 0 && k.store != nil {
		// Bound before this kubelet saw its claims allocated (two watches): look again.
		if obj, ok, _ := k.store.GetByKey(st.ns + "/" + st.name); ok {
			k.admitClaims(obj.(*corev1.Pod), nd, st)
		}
	}
	nd.images[st.image] = true
	if st.ip == "" {
		n := nd.nextIP
		nd.nextIP++
		st.ip = podAddr(k.cfg.IPBlock, nd.index, n)
	}
	st.running, st.loading, st.ready = true, true, false
	restarts, ip, hostIP := st.restarts, st.ip, k.nodeIP(nd)
	crash := st.crashes > 0
	load := k.loadDelay(st)
	k.mu.Unlock()

	now := metav1.Now()
	k.updateStatus(st, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP, p.Status.HostIP = ip, hostIP
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		p.Status.HostIPs = []corev1.HostIP{{IP: hostIP}}
		if p.Status.StartTime == nil {
			p.Status.StartTime = &now
		}
		setCondition(p, corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", now)
		setCondition(p, corev1.PodInitialized, corev1.ConditionTrue, "", now)
		setCondition(p, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", now)
		setCondition(p, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", now)
		p.Status.ContainerStatuses = containerStatuses(p, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}, false, restarts)
	})
	k.mu.Lock()
	if crash {
		k.after(st, load*k.uniform(0.3, 0.7), k.crash)
	} else {
		k.after(st, load, k.ready)
	}
	k.mu.Unlock()
}

// ready: the model is loaded; the readiness probe passes.
func (k *Kubelet) ready(st *pod) {
	k.mu.Lock()
	st.loading, st.ready = false, true
	st.node.models[st.model] = true
	restarts := st.restarts
	k.mu.Unlock()
	now := metav1.Now()
	k.updateStatus(st, func(p *corev1.Pod) {
		setCondition(p, corev1.ContainersReady, corev1.ConditionTrue, "", now)
		setCondition(p, corev1.PodReady, corev1.ConditionTrue, "", now)
		started := now
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Running != nil {
				started = c.State.Running.StartedAt
			}
		}
		p.Status.ContainerStatuses = containerStatuses(p, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}, true, restarts)
	})
}

// crash: the container exits with an error; the kubelet restarts it after a back-off.
func (k *Kubelet) crash(st *pod) {
	k.mu.Lock()
	st.running, st.loading, st.ready = false, false, false
	if st.crashes > 0 {
		st.crashes--
	}
	st.restarts++
	restarts := st.restarts
	st.gen++
	k.mu.Unlock()
	now := metav1.Now()
	k.updateStatus(st, func(p *corev1.Pod) {
		setCondition(p, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", now)
		setCondition(p, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", now)
		p.Status.ContainerStatuses = containerStatuses(p, corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting failed container"},
		}, false, restarts)
		p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", FinishedAt: now,
		}}
	})
	k.mu.Lock()
	k.after(st, 1.0, k.start)
	k.mu.Unlock()
}

// Crash makes a running pod's container crash now (it restarts and loads its model again).
func (k *Kubelet) Crash(namespace, name string) error {
	k.mu.Lock()
	var st *pod
	for _, p := range k.pods {
		if p.ns == namespace && p.name == name && !p.deleting {
			st = p
		}
	}
	if st == nil || !st.running {
		k.mu.Unlock()
		return fmt.Errorf("pod %s/%s is not running on a simulated node", namespace, name)
	}
	st.gen++
	k.mu.Unlock()
	k.crash(st)
	return nil
}

// finishDeletion ends a graceful deletion: the containers stopped, the kubelet confirms with a
// delete of grace 0.
func (k *Kubelet) finishDeletion(st *pod) {
	k.mu.Lock()
	if st.node.failed {
		st.deleting = false // RejoinNode observes the deletion again
		k.mu.Unlock()
		return
	}
	st.running, st.ready, st.loading = false, false, false
	k.mu.Unlock()
	ctx := context.Background()
	zero := int64(0)
	err := k.client.CoreV1().Pods(st.ns).Delete(ctx, st.name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &st.uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		k.logger.Warn("finish deletion", "pod", st.ns+"/"+st.name, "error", err)
	}
}

// updateStatus applies mutate to the pod's latest version and writes its status, retrying on
// conflicts. A pod that is gone is left alone. While the pod's node is failed the change is kept
// for RejoinNode instead.
func (k *Kubelet) updateStatus(st *pod, mutate func(*corev1.Pod)) {
	k.mu.Lock()
	if st.node.failed {
		st.pending = append(st.pending, mutate)
		k.mu.Unlock()
		return
	}
	k.mu.Unlock()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := k.client.CoreV1().Pods(st.ns).Get(ctx, st.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID != st.uid {
			return apierrors.NewNotFound(corev1.Resource("pods"), st.name)
		}
		mutate(p)
		_, err = k.client.CoreV1().Pods(st.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		k.logger.Warn("update pod status", "pod", st.ns+"/"+st.name, "error", err)
	}
}

func setCondition(p *corev1.Pod, typ corev1.PodConditionType, status corev1.ConditionStatus, reason string, at metav1.Time) {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == typ {
			if c.Status != status {
				c.LastTransitionTime = at
			}
			c.Status, c.Reason = status, reason
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: typ, Status: status, Reason: reason, LastTransitionTime: at})
}

func containerStatuses(p *corev1.Pod, state corev1.ContainerState, ready bool, restarts int) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for i, c := range p.Spec.Containers {
		started := state.Running != nil
		out = append(out, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "lab://" + c.Image, State: state, Ready: ready,
			RestartCount: int32(restarts), Started: &started,
			ContainerID: fmt.Sprintf("lab://%s-%d-%d", p.UID, i, restarts),
		})
	}
	return out
}

// Pods implements sim.Source.
func (k *Kubelet) Pods() []sim.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]sim.Pod, 0, len(k.pods))
	for _, st := range k.pods {
		sp := sim.Pod{
			Namespace: st.ns, Name: st.name, UID: string(st.uid), Node: st.node.name, IP: st.ip, Container: st.container,
			Running: st.running, Ready: st.ready && !st.node.failed, Loading: st.loading, GPUIndex: -1, MIGIndex: -1,
		}
		if st.gpu >= 0 {
			pool := st.node.pool
			sp.GPUModel, sp.GPUIndex, sp.GPUUUID = pool.GPU.Product, st.gpu, st.node.gpus[st.gpu].uuid
			sp.Sharing, sp.Sharers = pool.Sharing.Mode, st.node.sharers(st.gpu)
			if pool.Sharing.Mode == cluster.MIG {
				sp.MIGProfile, sp.MIGIndex = pool.Sharing.Profile, st.slot
			}
		}
		out = append(out, sp)
	}
	slices.SortFunc(out, func(a, b sim.Pod) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	return out
}

// Nodes implements sim.Source.
func (k *Kubelet) Nodes() []sim.Node {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]sim.Node, 0, len(k.nodes))
	for _, nd := range k.nodes {
		sn := sim.Node{Name: nd.name, IP: k.nodeIP(nd), Ready: !nd.failed, GPUModel: nd.pool.GPU.Product}
		for g, gp := range nd.gpus {
			sg := sim.GPU{Index: g, UUID: gp.uuid, MemoryMiB: nd.pool.GPU.MemoryMiB}
			if nd.pool.Sharing.Mode == cluster.MIG {
				for range gp.slots {
					sg.MIGProfiles = append(sg.MIGProfiles, nd.pool.Sharing.Profile)
				}
			}
			sn.GPUs = append(sn.GPUs, sg)
		}
		out = append(out, sn)
	}
	slices.SortFunc(out, func(a, b sim.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}
