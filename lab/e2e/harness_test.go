// Package e2e runs the real kube-scheduler on the lab's simulated GPU nodes together with the
// project's collector, correlator and api, and checks what the API says about what happened.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/testenv"
	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/kubelet"
	"github.com/schedlens/schedlens/lab/labenv"
	"github.com/schedlens/schedlens/lab/stack"
)

// The control plane, its nodes and the simulated kubelet are shared by the tests of this
// package (kube-apiserver runs once per process); each test has its own namespace, NATS,
// database, collector, correlator and api.
var (
	client  kubernetes.Interface
	theLab  *labenv.Lab
	kubelt  *kubelet.Kubelet
	spec    *cluster.Spec
	logger  = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cpError func() error
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "schedlens-lab-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	l, err := labenv.Start(ctx, labenv.Options{Dir: dir, Seed: 20, Speed: 0.25, Logger: logger, Spec: cluster.WithDRA(cluster.Default())})
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		return 1
	}
	defer l.Stop()
	client, kubelt, spec, cpError, theLab = l.Client, l.Kubelet, l.Spec, l.Err, l
	return m.Run()
}

// env is one test's namespace and pipeline.
type env struct {
	t     *testing.T
	ns    string
	s     *stack.Stack
	dbURL string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ns := "e2e-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return newEnvIn(t, ns)
}

// newEnvIn is a pipeline watching namespace ns, which exists or will; with changes its
// options go through them first.
func newEnvIn(t *testing.T, ns string, changes ...func(*stack.Options)) *env {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	o := stack.Options{
		Client: client, DatabaseURL: dbURL, Namespaces: []string{ns}, NATSDir: t.TempDir(), Logger: logger,
		DCGMTargets: theLab.DCGMTargets,
	}
	for _, c := range changes {
		c(&o)
	}
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ns: ns, s: s, dbURL: dbURL}
	t.Cleanup(func() {
		e.deleteAll()
		s.Stop()
		if err := s.Err(); err != nil {
			t.Errorf("pipeline: %v", err)
		}
		if err := cpError(); err != nil {
			t.Errorf("control plane: %v", err)
		}
	})
	return e
}

// podSpec is a pod of the fixed workload: one container asking for one GPU.
type podSpec struct {
	name, arm, run string
	experiment     string // default day20
	gpus           int64
	priorityClass  string
	nodeSelector   map[string]string
	requiredLabel  [2]string // key, value of a required node affinity term
	crashes        int
	gate           string // a scheduling gate the pod is created with
}

func (e *env) create(p podSpec) *corev1.Pod {
	e.t.Helper()
	if p.gpus == 0 {
		p.gpus = 1
	}
	if p.run == "" {
		p.run = "1"
	}
	if p.experiment == "" {
		p.experiment = "day20"
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: e.ns, Labels: map[string]string{
			events.LabelExperiment: p.experiment, events.LabelArm: p.arm, events.LabelRun: p.run,
		}, Annotations: map[string]string{kubelet.AnnotationModel: "llama-3-8b"}},
		Spec: corev1.PodSpec{
			PriorityClassName: p.priorityClass,
			NodeSelector:      p.nodeSelector,
			Containers: []corev1.Container{{Name: "model", Image: "nvcr.io/nvidia/tritonserver:25.01-py3",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(p.gpus, resource.DecimalSI)}}}},
		},
	}
	if p.crashes > 0 {
		pod.Annotations[kubelet.AnnotationCrashes] = fmt.Sprint(p.crashes)
	}
	if p.requiredLabel[0] != "" {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: p.requiredLabel[0], Operator: corev1.NodeSelectorOpIn, Values: []string{p.requiredLabel[1]}}},
			}}},
		}}
	}
	if p.gate != "" {
		pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: p.gate}}
	}
	out, err := client.CoreV1().Pods(e.ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s: %v", p.name, err)
	}
	return out
}

func (e *env) pod(name string) (*corev1.Pod, bool) {
	p, err := client.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		e.t.Fatalf("get pod %s: %v", name, err)
	}
	return p, true
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (e *env) waitReady(names ...string) map[string]*corev1.Pod {
	e.t.Helper()
	out := map[string]*corev1.Pod{}
	waitFor(e.t, 60*time.Second, fmt.Sprintf("pods %v Ready", names), func() bool {
		for _, n := range names {
			p, ok := e.pod(n)
			if !ok || !ready(p) {
				return false
			}
			out[n] = p
		}
		return true
	})
	return out
}

func (e *env) waitGone(names ...string) {
	e.t.Helper()
	waitFor(e.t, 60*time.Second, fmt.Sprintf("pods %v gone", names), func() bool {
		for _, n := range names {
			if _, ok := e.pod(n); ok {
				return false
			}
		}
		return true
	})
}

// deleteAll removes the test's pods so the next test finds the GPUs free.
func (e *env) deleteAll() {
	ctx := context.Background()
	list, err := client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	zero := int64(0)
	for _, p := range list.Items {
		_ = client.CoreV1().Pods(e.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	waitFor(e.t, 30*time.Second, "the test's pods to go", func() bool {
		l, err := client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
}

// settle waits until everything the collector saw is stored.
func (e *env) settle() {
	e.t.Helper()
	time.Sleep(300 * time.Millisecond) // for the informers to deliver what just happened
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.s.CaughtUp(ctx); err != nil {
		e.t.Fatal(err)
	}
}

// timeline reads a pod's timeline from the API.
func (e *env) timeline(uid types.UID) align.Timeline {
	e.t.Helper()
	var tl align.Timeline
	if code := e.get("/v1/pods/"+string(uid)+"/timeline", &tl); code != http.StatusOK {
		e.t.Fatalf("timeline of %s: HTTP %d", uid, code)
	}
	return tl
}

func (e *env) get(path string, v any) int {
	e.t.Helper()
	resp, err := http.Get("http://" + e.s.APIAddr + path)
	if err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			e.t.Fatalf("GET %s: %v", path, err)
		}
	}
	return resp.StatusCode
}

// snapshotData returns the data of the pod's latest pod_status event in its timeline.
func snapshotData(t *testing.T, tl align.Timeline) events.PodStatus {
	t.Helper()
	var last events.PodStatus
	found := false
	for _, ev := range tl.Events {
		if ev.Kind == events.KindPodStatus {
			var p events.PodStatus
			if err := json.Unmarshal(ev.Data, &p); err != nil {
				t.Fatal(err)
			}
			last, found = p, true
		}
	}
	if !found {
		t.Fatalf("timeline of %s has no pod_status", tl.Pod.Name)
	}
	return last
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	if !testenv.Until(d, 50*time.Millisecond, ok) {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
