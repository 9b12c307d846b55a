package disrupt

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/schedlens/schedlens/lab/kubelet"
)

// Workload is the scenario of an ordinary team's inference service, not an experiment: a
// Deployment with no schedlens.io labels (schedlens must find it from its owner references),
// its pods asking for one GPU each and served by the lab's inference endpoints, guarded by a
// PodDisruptionBudget, taken through a rollout, a drain and a node failure, all through the
// real controllers.
type Workload struct {
	Client kubernetes.Interface
	// Nodes fails and rejoins nodes (the simulated kubelet).
	Nodes Nodes
	// Namespace (default prod) is created if missing; Name is the Deployment's (default infer).
	Namespace, Name string
	// Replicas (default 3), Image (default Triton 25.01) and the image the rollout moves to
	// (default Triton 25.02); Model is the model the pods load (default llama-3-8b).
	Replicas        int
	Image, NewImage string
	Model           string
	// Timeout bounds each wait (default 60s).
	Timeout time.Duration
	// Progress, when set, is told each step as it ends.
	Progress func(step string, elapsed time.Duration)
}

// WorkloadReport is what the scenario did, with the times it saw each step.
type WorkloadReport struct {
	Namespace, Deployment string
	// Created is when the Deployment was created, Ready when all its replicas first were.
	Created, Ready time.Time
	// Disruptions are the rollout, the drain and the node failure, in that order.
	Disruptions []Disruption
	// Finished is when the node had rejoined and the Deployment was whole.
	Finished time.Time
}

func (w *Workload) withDefaults() Workload {
	c := *w
	if c.Namespace == "" {
		c.Namespace = "prod"
	}
	if c.Name == "" {
		c.Name = "infer"
	}
	if c.Replicas <= 0 {
		c.Replicas = 3
	}
	if c.Image == "" {
		c.Image = "nvcr.io/nvidia/tritonserver:25.01-py3"
	}
	if c.NewImage == "" {
		c.NewImage = "nvcr.io/nvidia/tritonserver:25.02-py3"
	}
	if c.Model == "" {
		c.Model = "llama-3-8b"
	}
	if c.Progress == nil {
		c.Progress = func(string, time.Duration) {}
	}
	return c
}

// Deployment is the scenario's Deployment: Replicas pods of Image asking for one nvidia.com/gpu
// each, labelled app=<name> only, rolled out with Kubernetes' default strategy (25 % surge,
// 25 % unavailable: one new pod at a time for 3 replicas).
func (w *Workload) Deployment() *appsv1.Deployment {
	c := w.withDefaults()
	labels := map[string]string{"app": c.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(c.Replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{kubelet.AnnotationModel: c.Model}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "triton", Image: c.Image,
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")},
						Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
					},
				}}},
			},
		},
	}
}

// PodDisruptionBudget keeps all but one replica available during voluntary disruptions (the
// drain's evictions).
func (w *Workload) PodDisruptionBudget() *policyv1.PodDisruptionBudget {
	c := w.withDefaults()
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(int32(c.Replicas - 1))),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": c.Name}},
		},
	}
}

// Run creates the namespace, the PodDisruptionBudget and the Deployment, waits until every
// replica is Ready, then
//  1. rolls out a new image (as `kubectl set image`) and waits until the rollout is complete;
//  2. drains the first node (by name) that runs one of its pods: cordon, evictions through the
//     Eviction API, replacements Ready, uncordon;
//  3. fails the first node that runs one of its pods, other than the drained one when it can:
//     heartbeats stop, the node goes NotReady, the real controllers evict its pods and the
//     ReplicaSet replaces them; the heartbeats resume and the node is Ready again.
//
// The Deployment is left running; deleting the namespace removes it.
func (w *Workload) Run(ctx context.Context) (*WorkloadReport, error) {
	c := w.withDefaults()
	start := time.Now()
	out := &WorkloadReport{Namespace: c.Namespace, Deployment: c.Name}
	d := &Disruptor{Client: c.Client, Nodes: c.Nodes, Timeout: c.Timeout}
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace %s: %w", c.Namespace, err)
	}
	if _, err := c.Client.PolicyV1().PodDisruptionBudgets(c.Namespace).Create(ctx, c.PodDisruptionBudget(), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create pdb %s: %w", c.Name, err)
	}
	if _, err := c.Client.AppsV1().Deployments(c.Namespace).Create(ctx, c.Deployment(), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create deployment %s: %w", c.Name, err)
	}
	out.Created = time.Now()
	if out.Ready, err = d.WaitComplete(ctx, c.Namespace, c.Name); err != nil {
		return out, err
	}
	c.Progress("ready", time.Since(start))

	rollout, err := d.Rollout(ctx, c.Namespace, c.Name, func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = c.NewImage })
	out.Disruptions = append(out.Disruptions, rollout)
	if err != nil {
		return out, fmt.Errorf("rollout: %w", err)
	}
	c.Progress("rollout", time.Since(start))

	nodes, err := c.nodes(ctx, d)
	if err != nil {
		return out, err
	}
	drain, err := d.Drain(ctx, c.Namespace, c.Name, nodes[0])
	out.Disruptions = append(out.Disruptions, drain)
	if err != nil {
		return out, fmt.Errorf("drain: %w", err)
	}
	c.Progress("drain", time.Since(start))

	if nodes, err = c.nodes(ctx, d); err != nil {
		return out, err
	}
	failed := nodes[0]
	if failed == drain.Node && len(nodes) > 1 {
		failed = nodes[1]
	}
	failure, err := d.NodeFailure(ctx, c.Namespace, c.Name, failed)
	out.Disruptions = append(out.Disruptions, failure)
	if err != nil {
		return out, fmt.Errorf("node failure: %w", err)
	}
	c.Progress("node failure", time.Since(start))
	out.Finished = time.Now()
	return out, nil
}

// nodes lists the nodes running the Deployment's pods, by name.
func (w *Workload) nodes(ctx context.Context, d *Disruptor) ([]string, error) {
	pods, err := d.Pods(ctx, w.Namespace, w.Name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil && !slices.Contains(out, p.Spec.NodeName) {
			out = append(out, p.Spec.NodeName)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no node runs a pod of %s", w.Name)
	}
	slices.Sort(out)
	return out, nil
}
