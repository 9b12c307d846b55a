package app_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/experiment"
	"github.com/schedlens/schedlens/lab/preflight"
	"github.com/schedlens/schedlens/lab/preflight/app"
)

// armPlacement is what can be compared between two placements of an arm by the scheduler:
// the distinct nodes and the GPU models of its pods. Pods of equal score are placed at random
// among the tied nodes (kube-scheduler's selectHost), so which node takes the third affinity pod
// may differ; the set of nodes and the models may not.
type armPlacement struct {
	Nodes  []string
	Models []string
}

func placementOf(nodes, models []string) armPlacement {
	n := slices.Clone(nodes)
	slices.Sort(n)
	m := slices.Clone(models)
	slices.Sort(m)
	return armPlacement{Nodes: slices.Compact(n), Models: m}
}

// Against the lab's real API server: -kubeconfig snapshots its nodes; -simulate places the day20
// arms (plus an arm no node can take) as the lab then does when its runner runs them, and the
// unschedulable arm gets the same FailedScheduling message from the dry run as from the lab's
// scheduler.
func TestLiveLab(t *testing.T) {
	kubeconfig := startChildLab(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The snapshot is the lab's nodes as the lab created them.
	snap, err := preflight.Snapshot(ctx, client, "lab")
	if err != nil {
		t.Fatal(err)
	}
	want := cluster.Default().Nodes()
	if len(snap.Nodes) != len(want) {
		t.Fatalf("snapshot has %d nodes, the lab %d", len(snap.Nodes), len(want))
	}
	for _, w := range want {
		i := slices.IndexFunc(snap.Nodes, func(n *corev1.Node) bool { return n.Name == w.Name })
		if i < 0 {
			t.Errorf("snapshot lacks node %s", w.Name)
			continue
		}
		n := snap.Nodes[i]
		if diff := cmp.Diff(w.Labels, n.Labels); diff != "" {
			t.Errorf("%s labels (-lab +snapshot):\n%s", w.Name, diff)
		}
		if diff := cmp.Diff(fmt.Sprint(w.Spec.Taints), fmt.Sprint(n.Spec.Taints)); diff != "" {
			t.Errorf("%s taints: %s", w.Name, diff)
		}
		for r, q := range w.Status.Allocatable {
			if got := n.Status.Allocatable[r]; got.Cmp(q) != 0 {
				t.Errorf("%s allocatable %s: %s, want %s", w.Name, r, got.String(), q.String())
			}
		}
	}
	if len(snap.PriorityClasses) < 2 {
		t.Errorf("snapshot priority classes: %d", len(snap.PriorityClasses))
	}

	// day20 once, without disruptions, plus an arm asking for a GPU model the lab lacks.
	def := experiment.Day20()
	def.Repeats, def.Disruptions = 1, nil
	def.Arms = append(def.Arms, experiment.Arm{Name: "b200", Required: map[string]string{"gpu-model": "B200"}})
	const ns = "preflight-live"
	manifests, err := preflight.ExperimentManifests(def, ns, 1)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "day20.yaml")
	if err := os.WriteFile(file, manifests, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, out, errs := run(t, "", "-kubeconfig", kubeconfig, "-simulate", "-o", "json", "-f", file)
	elapsed := time.Since(start)
	if code != app.ExitFindings {
		t.Fatalf("exit %d, want 1 (the b200 arm cannot be placed)\n%s\n%s", code, out, errs)
	}
	report := decodeReport(t, out)
	if report.Cluster.Nodes != len(want) || !strings.HasPrefix(report.Cluster.Source, "kubeconfig context ") {
		t.Errorf("cluster %+v", report.Cluster)
	}
	sim := report.Simulation
	t.Logf("preflight -kubeconfig -simulate of %d arms: %.1fs in all, dry run %.1fs (control plane start %.1fs)", len(def.Arms), elapsed.Seconds(), sim.Seconds, sim.StartupSeconds)
	simulated := map[string]armPlacement{}
	simMessage := map[string]string{}
	simVictims := map[string]int{}
	for _, g := range sim.Groups {
		var nodes, models []string
		for _, p := range g.Pods {
			if _, arm, _ := strings.Cut(p.Name, def.Name+"-"); strings.Contains(arm, "-bg-") {
				continue
			}
			if p.Status == preflight.PodScheduled {
				nodes, models = append(nodes, p.Node), append(models, p.GPUModel)
			}
			if p.Status == preflight.PodPending {
				simMessage[g.Name] = p.Message
			}
		}
		simulated[g.Name] = placementOf(nodes, models)
		simVictims[g.Name] = len(g.Preempted)
	}

	// Now the lab runs the same arms with its runner; watch where its pods land.
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	bound := map[string]*corev1.Pod{}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	record := func(o any) {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			mu.Lock()
			bound[p.Name] = p
			mu.Unlock()
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, o any) { record(o) }}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	f.Start(stop)
	defer func() { close(stop); f.Shutdown() }()
	runner := &experiment.Runner{Client: client, Namespace: ns, Timeout: 8 * time.Second, Hold: 200 * time.Millisecond}
	if err := runner.Run(ctx, def); err != nil {
		t.Fatal(err)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeByName := map[string]*corev1.Node{}
	for i := range nodes.Items {
		nodeByName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	evs, err := client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	observed := map[string]armPlacement{}
	labMessage := map[string]string{}
	labVictims := map[string]int{}
	mu.Lock()
	for _, arm := range def.Arms {
		var nodes, models []string
		for i := 1; i <= def.Fixed.Pods; i++ {
			p := bound[fmt.Sprintf("%s-%s-r1-%d", def.Name, arm.Name, i)]
			if p == nil {
				continue
			}
			nodes = append(nodes, p.Spec.NodeName)
			if g := kube.GPUOf(p, nodeByName[p.Spec.NodeName]); g != nil {
				models = append(models, g.Model)
			}
		}
		observed[arm.Name] = placementOf(nodes, models)
		var last *eventsv1.Event
		for i := range evs.Items {
			e := &evs.Items[i]
			if e.Regarding.Name == fmt.Sprintf("%s-%s-r1-1", def.Name, arm.Name) && e.Reason == "FailedScheduling" && (last == nil || e.CreationTimestamp.After(last.CreationTimestamp.Time)) {
				last = e
			}
			if e.Reason == "Preempted" && strings.HasPrefix(e.Regarding.Name, fmt.Sprintf("%s-%s-", def.Name, arm.Name)) {
				labVictims[arm.Name]++
			}
		}
		if last != nil && bound[last.Regarding.Name] == nil {
			labMessage[arm.Name] = last.Note
		}
	}
	mu.Unlock()

	for _, arm := range slices.Sorted(maps.Keys(observed)) {
		s, o := simulated[arm], observed[arm]
		t.Logf("arm %s: lab %v, dry run %v", arm, o, s)
		if arm == def.Baseline {
			// No rules: every untainted node scores the same for the first pod, so only the shape
			// is the scheduler's (three pods on three distinct exclusive nodes).
			if len(s.Nodes) != 3 || len(o.Nodes) != 3 || len(s.Models) != 3 || len(o.Models) != 3 {
				t.Errorf("control: simulated %+v, observed %+v: want three distinct nodes each", s, o)
			}
			continue
		}
		if diff := cmp.Diff(o, s); diff != "" {
			t.Errorf("arm %s placement (-lab +simulated):\n%s", arm, diff)
		}
	}
	if labVictims["priority"] != 3 || simVictims["priority"] != 3 {
		t.Errorf("priority arm preempted %d background pods in the lab, %d in the dry run; want 3", labVictims["priority"], simVictims["priority"])
	}
	t.Logf("b200 FailedScheduling in the lab and the dry run: %q", labMessage["b200"])
	if labMessage["b200"] == "" || simMessage["b200"] != labMessage["b200"] {
		t.Errorf("b200 FailedScheduling:\nlab:       %q\nsimulated: %q", labMessage["b200"], simMessage["b200"])
	}
	if len(observed["b200"].Nodes) != 0 || len(simulated["b200"].Nodes) != 0 {
		t.Errorf("b200 placed: lab %+v, simulated %+v", observed["b200"], simulated["b200"])
	}

	// A running GPU pod and a PDB of the lab are in the next snapshot, the pod with its node.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "running", Namespace: ns, Labels: map[string]string{"app": "running"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "m", Image: "triton", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "running", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "running"}}}}
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		snap, err = preflight.Snapshot(ctx, client, "lab")
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(snap.Pods, func(p *corev1.Pod) bool { return p.Name == "running" })
		if i >= 0 && snap.Pods[i].Spec.NodeName != "" && len(snap.PDBs) == 1 && snap.PDBs[0].Name == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("snapshot: %d GPU pods, %d PDBs: want the running pod, bound, and its PDB", len(snap.Pods), len(snap.PDBs))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
