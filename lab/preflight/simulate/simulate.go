// Package simulate is preflight's dry run with the real scheduler: it starts the lab's control
// plane (etcd, kube-apiserver, kube-scheduler of k8s.io/kubernetes, in this process), creates the
// cluster's nodes as they are (labels, taints, allocatable GPUs), its PriorityClasses, PDBs and
// running GPU pods bound where they run, then each group's pods (every replica, named and
// labelled as their controllers would), and reports where each landed, which stayed Pending
// with the scheduler's own FailedScheduling message, and which pods were preempted.
//
// Groups (experiment arms) are placed one after another, each from the cluster's state: the
// previous group's pods are deleted and the preempted running pods re-created before the next.
// Within a group, workloads are created in manifest order, each settled before the next.
//
// There is no kubelet: a small reaper finishes graceful deletions (otherwise a preemption victim
// would stay Terminating and its preemptor nominated forever). Before each group a canary pod is
// bound on the last node, so the scheduler's cache has every node and running pod before the
// group's pods arrive. Persistent volume claims are left out of the pods (storage is not
// simulated).
package simulate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"k8s.io/kubernetes/cmd/kube-controller-manager/names"

	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/lab/controlplane"
	"github.com/schedlens/schedlens/lab/preflight"
)

// Simulator is a running control plane for dry runs. Only one can run per process
// (kube-apiserver keeps process-wide state); Run can be called many times.
type Simulator struct {
	cp      *controlplane.ControlPlane
	client  kubernetes.Interface
	startup time.Duration
	logger  *slog.Logger
	// Settle is how long a group must stay unchanged, every pod decided, before it is read.
	Settle time.Duration
}

// Start starts the control plane with its state under dir.
func Start(ctx context.Context, dir string, logger *slog.Logger) (*Simulator, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t0 := time.Now()
	// The resourceclaim controller makes pods' claims from their ResourceClaimTemplates.
	cp, err := controlplane.Start(ctx, controlplane.Config{Dir: dir,
		ControllerManager: &controlplane.ControllerManagerConfig{Controllers: []string{names.ResourceClaimController}}})
	if err != nil {
		return nil, fmt.Errorf("simulation control plane: %w", err)
	}
	return &Simulator{cp: cp, client: cp.Client, startup: time.Since(t0), logger: logger, Settle: 400 * time.Millisecond}, nil
}

// Stop stops the control plane.
func (s *Simulator) Stop() { s.cp.Stop() }

// Client is a clientset for the simulation's API server.
func (s *Simulator) Client() kubernetes.Interface { return s.client }

// SchedulerVersion is the kube-scheduler this binary was built with.
func SchedulerVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "k8s.io/kubernetes" {
				return m.Version
			}
		}
	}
	return "unknown"
}

// run is one dry run's state.
type run struct {
	s        *Simulator
	in       *preflight.SimulationInput
	timeout  time.Duration
	pods     cache.Indexer
	events   cache.Indexer
	nodes    map[string]*corev1.Node
	existing map[string]*corev1.Pod // namespace/name → sanitized pod to create
	claims   cache.Indexer          // ResourceClaims
	slices   []*resourcev1.ResourceSlice
	kept     map[string]bool // namespace/name of the cluster's allocated claims
	mu       sync.Mutex
	uids     map[types.UID]string // pods this run created → namespace/name
}

// Run places the input's groups and reports what the scheduler did. timeout bounds the wait
// for one workload's pods to be decided.
func (s *Simulator) Run(ctx context.Context, in *preflight.SimulationInput, timeout time.Duration) (*preflight.Simulation, error) {
	t0 := time.Now()
	if err := s.reset(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	f := informers.NewSharedInformerFactory(s.client, 0)
	defer func() {
		cancel() // the informers stop on ctx; Shutdown waits for them
		f.Shutdown()
	}()
	podInf, evInf := f.Core().V1().Pods().Informer(), f.Events().V1().Events().Informer()
	claimInf := f.Resource().V1().ResourceClaims().Informer()
	r := &run{s: s, in: in, timeout: timeout, pods: podInf.GetIndexer(), events: evInf.GetIndexer(), claims: claimInf.GetIndexer(),
		nodes: map[string]*corev1.Node{}, existing: map[string]*corev1.Pod{}, uids: map[types.UID]string{}, kept: map[string]bool{}}
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.reap(ctx, o) },
		UpdateFunc: func(_, o any) { r.reap(ctx, o) },
	}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInf.HasSynced, evInf.HasSynced, claimInf.HasSynced) {
		return nil, errors.New("simulation informers did not sync")
	}
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	out := &preflight.Simulation{Scheduler: SchedulerVersion(), StartupSeconds: s.startup.Seconds()}
	for _, g := range in.Groups {
		res, err := r.group(ctx, g)
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", g.Name, err)
		}
		out.Groups = append(out.Groups, *res)
	}
	out.Seconds = s.startup.Seconds() + time.Since(t0).Seconds()
	return out, nil
}

// reap finishes graceful deletions, as a kubelet would once the containers stopped.
func (r *run) reap(ctx context.Context, o any) {
	p, ok := o.(*corev1.Pod)
	if !ok || p.DeletionTimestamp == nil {
		return
	}
	go func() {
		zero := int64(0)
		err := r.s.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
			r.s.logger.Warn("finish deletion", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
	}()
}

// reset removes what an earlier run created.
func (s *Simulator) reset(ctx context.Context) error {
	c := s.client
	nss, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	zero := int64(0)
	for _, ns := range nss.Items {
		n := ns.Name
		if err := c.CoreV1().Pods(n).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("delete pods: %w", err)
		}
		_ = c.PolicyV1().PodDisruptionBudgets(n).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = c.AppsV1().ReplicaSets(n).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = c.AppsV1().StatefulSets(n).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = c.ResourceV1().ResourceClaimTemplates(n).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if err := c.ResourceV1().ResourceClaims(n).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("delete resource claims: %w", err)
		}
	}
	if err := c.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete resource slices: %w", err)
	}
	if err := c.ResourceV1().DeviceClasses().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete device classes: %w", err)
	}
	if err := c.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("delete nodes: %w", err)
	}
	pcs, err := c.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list priority classes: %w", err)
	}
	for _, pc := range pcs.Items {
		if !strings.HasPrefix(pc.Name, "system-") {
			if err := c.SchedulingV1().PriorityClasses().Delete(ctx, pc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete priority class %s: %w", pc.Name, err)
			}
		}
	}
	return nil
}

// setup creates the cluster: namespaces, PriorityClasses, nodes, PDBs; running pods are created
// by each group.
func (r *run) setup(ctx context.Context) error {
	c := r.s.client
	nss := map[string]bool{}
	for _, p := range r.in.Existing {
		nss[p.Namespace] = true
	}
	for _, p := range r.in.PDBs {
		nss[p.Namespace] = true
	}
	for _, g := range r.in.Groups {
		for _, w := range g.Workloads {
			nss[w.Namespace] = true
		}
	}
	for ns := range nss {
		if err := ensureNamespace(ctx, c, ns); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, pc := range r.in.PriorityClasses {
		if seen[pc.Name] || strings.HasPrefix(pc.Name, "system-") {
			continue
		}
		seen[pc.Name] = true
		obj := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: pc.Name, Labels: pc.Labels}, Value: pc.Value,
			GlobalDefault: pc.GlobalDefault, PreemptionPolicy: pc.PreemptionPolicy}
		if _, err := c.SchedulingV1().PriorityClasses().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create priority class %s: %w", pc.Name, err)
		}
	}
	// Running pods may name a class that is gone since: create it with their priority.
	for _, p := range r.in.Existing {
		if name := p.Spec.PriorityClassName; name != "" && !seen[name] && !strings.HasPrefix(name, "system-") {
			seen[name] = true
			v := int32(0)
			if p.Spec.Priority != nil {
				v = *p.Spec.Priority
			}
			_, err := c.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: v}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create priority class %s: %w", name, err)
			}
		}
	}
	for _, n := range r.in.Nodes {
		node := sanitizeNode(n)
		created, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
		created.Status = node.Status
		if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("node %s status: %w", n.Name, err)
		}
		r.nodes[n.Name] = n
	}
	for _, p := range r.in.PDBs {
		obj := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels}, Spec: p.Spec}
		if _, err := c.PolicyV1().PodDisruptionBudgets(p.Namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create pod disruption budget %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	for _, p := range r.in.Existing {
		q := sanitizePod(p)
		q.Spec.NodeName = p.Spec.NodeName
		// A running pod's devices are held by its allocated claims, re-created as they are;
		// the pod itself, bound, needs no claim.
		q.Spec.ResourceClaims = nil
		for _, cs := range [][]corev1.Container{q.Spec.InitContainers, q.Spec.Containers} {
			for i := range cs {
				cs[i].Resources.Claims = nil
			}
		}
		r.existing[p.Namespace+"/"+p.Name] = q
	}
	return r.setupDRA(ctx)
}

func ensureNamespace(ctx context.Context, c kubernetes.Interface, ns string) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// sanitizeNode keeps what scheduling reads: labels, annotations, taints, cordon, capacity,
// conditions, images; not the addresses (nothing here may reach a real node).
func sanitizeNode(n *corev1.Node) *corev1.Node {
	out := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, Annotations: n.Annotations},
		Spec:       corev1.NodeSpec{Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable},
		Status: corev1.NodeStatus{Capacity: n.Status.Capacity, Allocatable: n.Status.Allocatable, Conditions: n.Status.Conditions,
			Images: n.Status.Images, NodeInfo: n.Status.NodeInfo, Phase: n.Status.Phase},
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeHostName {
			out.Status.Addresses = append(out.Status.Addresses, a)
		}
	}
	return out
}

// sanitizePod keeps the pod's scheduling inputs; priority is resolved again from the class by
// the Priority admission plugin, volume claims are dropped (storage is not simulated), and so
// are scheduling gates (the dry run asks where a pod lands once admitted). DRA claims stay.
func sanitizePod(p *corev1.Pod) *corev1.Pod {
	spec := p.Spec.DeepCopy()
	spec.Priority, spec.PreemptionPolicy = nil, nil
	spec.NodeName = ""
	var claims []string
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			claims = append(claims, v.Name)
			return true
		}
		return false
	})
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			cs[i].VolumeMounts = slices.DeleteFunc(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return slices.Contains(claims, m.Name) })
			cs[i].VolumeDevices = nil
		}
	}
	spec.ServiceAccountName, spec.DeprecatedServiceAccount = "", ""
	spec.SchedulingGates = nil
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, Annotations: p.Annotations, OwnerReferences: p.OwnerReferences},
		Spec:       *spec,
	}
}

// owners creates the ReplicaSets and StatefulSets of a group's workloads (no controller runs:
// they only let the scheduler's default topology spreading see the pods' owners).
func (r *run) owners(ctx context.Context, g preflight.SimInputGroup) (func(), error) {
	c := r.s.client
	var undo []func()
	for _, w := range g.Workloads {
		pods := w.Pods()
		if len(pods) == 0 || len(pods[0].OwnerReferences) == 0 {
			continue
		}
		ref := pods[0].OwnerReferences[0]
		sel := &metav1.LabelSelector{MatchLabels: pods[0].Labels}
		replicas := w.Replicas
		tpl := *w.Template.DeepCopy()
		tpl.Labels = pods[0].Labels
		switch ref.Kind {
		case "ReplicaSet":
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: w.Namespace}, Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: sel, Template: tpl}}
			rs.Spec.Template.Spec = sanitizePod(&corev1.Pod{Spec: tpl.Spec}).Spec
			if _, err := c.AppsV1().ReplicaSets(w.Namespace).Create(ctx, rs, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("create replica set %s: %w", ref.Name, err)
			}
			ns, name := w.Namespace, ref.Name
			undo = append(undo, func() { _ = c.AppsV1().ReplicaSets(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
		case "StatefulSet":
			sel = &metav1.LabelSelector{MatchLabels: w.Template.Labels}
			tpl.Labels = w.Template.Labels
			ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: w.Namespace}, Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Selector: sel, Template: tpl}}
			ss.Spec.Template.Spec = sanitizePod(&corev1.Pod{Spec: tpl.Spec}).Spec
			if _, err := c.AppsV1().StatefulSets(w.Namespace).Create(ctx, ss, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("create stateful set %s: %w", ref.Name, err)
			}
			ns, name := w.Namespace, ref.Name
			undo = append(undo, func() { _ = c.AppsV1().StatefulSets(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
		}
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}, nil
}

// eventsFor returns the scheduler's events about a pod (by UID) with a reason, oldest first.
func (r *run) eventsFor(uid types.UID, reason string) []*eventsv1.Event {
	var out []*eventsv1.Event
	for _, o := range r.events.List() {
		e := o.(*eventsv1.Event)
		if e.Regarding.UID == uid && e.Reason == reason {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *eventsv1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	return out
}

func eventTime(e *eventsv1.Event) time.Time {
	if e.Series != nil {
		return e.Series.LastObservedTime.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// gpuOf is the GPU model and sharing mode of a bound pod on its node.
func (r *run) gpuOf(p *corev1.Pod) (model, sharing string) {
	n := r.nodes[p.Spec.NodeName]
	if n == nil {
		return "", ""
	}
	if g := kube.GPUOf(p, n); g != nil {
		return g.Model, g.Sharing
	}
	return r.claimsGPU(p)
}
