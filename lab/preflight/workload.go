package preflight

import (
	"fmt"
	"hash/fnv"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/schedlens/schedlens/internal/events"
)

// AnnotationGroup puts a workload into a simulation group other than its experiment arm (e.g.
// the background load that one arm's pods preempt).
const AnnotationGroup = "schedlens.io/preflight-group"

// Workload is a Deployment, StatefulSet, Job or Pod: a pod template and how many replicas of
// it run at once.
type Workload struct {
	*Object
	Replicas int32
	Template corev1.PodTemplateSpec
	// TemplatePath is the field path of the pod template: "spec.template", or "" for a Pod.
	TemplatePath string
	// Strategy is a Deployment's rollout strategy, defaulted (RollingUpdate 25 % / 25 %).
	Strategy *appsv1.DeploymentStrategy
	// Serving is false for Jobs: pods that run to completion.
	Serving bool
	indexed bool // an Indexed Job
}

func (in *Input) addWorkload(o *Object, obj any) {
	w := &Workload{Object: o, Replicas: 1, TemplatePath: "spec.template", Serving: true}
	switch v := obj.(type) {
	case *appsv1.Deployment:
		if v.Spec.Replicas != nil {
			w.Replicas = *v.Spec.Replicas
		}
		w.Template = v.Spec.Template
		s := v.Spec.Strategy
		if s.Type == "" {
			s.Type = appsv1.RollingUpdateDeploymentStrategyType
		}
		if s.Type == appsv1.RollingUpdateDeploymentStrategyType {
			if s.RollingUpdate == nil {
				s.RollingUpdate = &appsv1.RollingUpdateDeployment{}
			}
			quarter := intstr.FromString("25%")
			if s.RollingUpdate.MaxSurge == nil {
				s.RollingUpdate.MaxSurge = &quarter
			}
			if s.RollingUpdate.MaxUnavailable == nil {
				s.RollingUpdate.MaxUnavailable = &quarter
			}
		}
		w.Strategy = &s
	case *appsv1.StatefulSet:
		if v.Spec.Replicas != nil {
			w.Replicas = *v.Spec.Replicas
		}
		w.Template = v.Spec.Template
	case *batchv1.Job:
		par, comp := int32(1), int32(-1)
		if v.Spec.Parallelism != nil {
			par = *v.Spec.Parallelism
		}
		if v.Spec.Completions != nil {
			comp = *v.Spec.Completions
		}
		w.Replicas = par
		if comp >= 0 && comp < par {
			w.Replicas = comp
		}
		w.Template, w.Serving = v.Spec.Template, false
		w.indexed = v.Spec.CompletionMode != nil && *v.Spec.CompletionMode == batchv1.IndexedCompletion
	case *corev1.Pod:
		w.Template = corev1.PodTemplateSpec{ObjectMeta: v.ObjectMeta, Spec: v.Spec}
		w.TemplatePath = ""
		w.Serving = v.Spec.RestartPolicy != corev1.RestartPolicyNever && v.Spec.RestartPolicy != corev1.RestartPolicyOnFailure
	}
	parseIgnore(o.ignore, w.Template.Annotations)
	in.Objects = append(in.Objects, o)
	in.Workloads = append(in.Workloads, w)
}

// SpecPath is the field path of part of the pod spec: "spec.template.spec.<rest>".
func (w *Workload) SpecPath(rest string) string {
	if w.TemplatePath == "" {
		return "spec." + rest
	}
	return w.TemplatePath + ".spec." + rest
}

// Labels are the labels of the workload's pods.
func (w *Workload) Labels() map[string]string { return w.Template.Labels }

// Experiment names the experiment and arm the workload's pods are labelled with.
func (w *Workload) Experiment() (name, arm string) {
	return w.Template.Labels[events.LabelExperiment], w.Template.Labels[events.LabelArm]
}

// Group is the simulation group the workload is placed in: the preflight-group annotation,
// else its experiment arm, else "" (workloads placed together).
func (w *Workload) Group() string {
	for _, a := range []map[string]string{w.Annotations, w.Template.Annotations} {
		if g := a[AnnotationGroup]; g != "" {
			return g
		}
	}
	if exp, arm := w.Experiment(); exp != "" && arm != "" {
		return arm
	}
	return ""
}

// Pod is one replica as the rules look at it: the template in the workload's namespace.
func (w *Workload) Pod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: w.Template.Labels, Annotations: w.Template.Annotations},
		Spec:       *w.Template.Spec.DeepCopy(),
	}
}

// Pods are every replica, named and labelled as its controller would: a Deployment's pods
// "<name>-<pod-template-hash>-<suffix>" with the pod-template-hash label, a StatefulSet's
// "<name>-<ordinal>", a Job's "<name>-<suffix>" (Indexed: "<name>-<index>-<suffix>") with its
// job-name labels. Suffixes are deterministic (a controller draws them at random).
func (w *Workload) Pods() []*corev1.Pod {
	if w.Kind == "Pod" {
		p := w.Pod()
		p.Name = w.Name
		return []*corev1.Pod{p}
	}
	hash := templateHash(&w.Template)
	var out []*corev1.Pod
	for i := range int(w.Replicas) {
		p := w.Pod()
		p.Labels = copyMap(w.Template.Labels)
		p.Annotations = copyMap(w.Template.Annotations)
		switch w.Kind {
		case "Deployment":
			p.Name = fmt.Sprintf("%s-%s-%s", w.Name, hash, suffix(w.Name, i))
			p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
			p.OwnerReferences = []metav1.OwnerReference{owner("apps/v1", "ReplicaSet", w.Name+"-"+hash)}
		case "StatefulSet":
			p.Name = fmt.Sprintf("%s-%d", w.Name, i)
			p.Labels[appsv1.StatefulSetPodNameLabel] = p.Name
			p.Labels[appsv1.PodIndexLabel] = strconv.Itoa(i)
			p.Labels[appsv1.ControllerRevisionHashLabelKey] = w.Name + "-" + hash
			p.Spec.Hostname = p.Name
			p.OwnerReferences = []metav1.OwnerReference{owner("apps/v1", "StatefulSet", w.Name)}
		case "Job":
			p.Name = fmt.Sprintf("%s-%s", w.Name, suffix(w.Name, i))
			if w.indexed {
				p.Name = fmt.Sprintf("%s-%d-%s", w.Name, i, suffix(w.Name, i))
				p.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(i)
			}
			p.Labels[batchv1.JobNameLabel] = w.Name
			p.Labels["job-name"] = w.Name
			p.OwnerReferences = []metav1.OwnerReference{owner("batch/v1", "Job", w.Name)}
		}
		out = append(out, p)
	}
	return out
}

// templateHash is the pod-template-hash the Deployment controller computes (fnv32a of the
// template's dump, safe-encoded).
func templateHash(t *corev1.PodTemplateSpec) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*t))
	return utilrand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// suffix is a deterministic five-character pod name suffix in the controllers' alphabet.
func suffix(name string, i int) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", name, i)
	s := utilrand.SafeEncodeString(strconv.FormatUint(h.Sum64(), 10))
	return s[len(s)-5:]
}

func owner(apiVersion, kind, name string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("preflight-" + kind + "-" + name), Controller: &yes}
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+3)
	for k, v := range m {
		out[k] = v
	}
	return out
}
