// Package experiment runs a placement experiment on the lab: the same fixed workload (image,
// model, input) under each arm's placement rules, repeated, plus disruption scenarios (a
// rolling update, a node drain, a node that fails and rejoins). Pods carry the
// schedlens.io/experiment|arm|run labels and the definition is published as the experiment
// ConfigMap the collector watches.
//
// An arm's pods are created by the runner itself, one by one (bare pods: what is compared is
// where and how fast the scheduler and the kubelet bring them up). A disruption scenario runs a
// Deployment instead, disrupted through the lab's real controllers (package disrupt): the
// Deployment and ReplicaSet controllers roll it out and replace evicted pods, the node
// lifecycle and taint-eviction controllers evict the pods of a node whose heartbeats stopped.
package experiment

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/wait"
	"github.com/schedlens/schedlens/lab/disrupt"
	"github.com/schedlens/schedlens/lab/kubelet"
	"github.com/schedlens/schedlens/lab/specfile"
)

//go:embed day20.yaml
var day20YAML []byte

// Disruption scenarios.
const (
	RollingUpdate = "rolling-update"
	Drain         = "drain"
	NodeRejoin    = "node-rejoin"
)

// Definition is an experiment: what changes, what stays fixed, what is measured, how often.
type Definition struct {
	Name        string         `json:"name"`
	Change      string         `json:"change"`
	Fixed       *Workload      `json:"fixed"`
	Metrics     []string       `json:"metrics,omitempty"`
	Repeats     int            `json:"repeats"`
	Baseline    string         `json:"baseline"`
	Thresholds  map[string]any `json:"thresholds,omitempty"`
	Arms        []Arm          `json:"arms"`
	Disruptions []string       `json:"disruptions,omitempty"`
	// Previous is the experiment this one's record chains to (the definition key previous,
	// docs/records.md).
	Previous string `json:"previous,omitempty"`
	// Source is the experiment ConfigMap the definition was read from (LoadManifests); the
	// runner then creates that one instead of writing its own.
	Source *corev1.ConfigMap `json:"-"`
}

// Workload is what every arm runs, unchanged: the definition's `fixed` as schedlens types it
// (image, model, input, pods per arm and run, the representative request the prober sends).
type Workload = events.Workload

// Arm is one placement strategy.
type Arm struct {
	Name          string              `json:"name"`
	Description   string              `json:"description,omitempty"`
	Required      map[string]string   `json:"required,omitempty"` // one required term: key In (value) for each
	Preferred     []Preference        `json:"preferred,omitempty"`
	NodeSelector  map[string]string   `json:"nodeSelector,omitempty"`
	PriorityClass string              `json:"priorityClass,omitempty"`
	Tolerations   []corev1.Toleration `json:"tolerations,omitempty"`
	Background    *Background         `json:"background,omitempty"`
	// Claim and Gate (dra.go): the pods' GPU through a DRA claim; a scheduling gate first.
	Claim *Claim `json:"claim,omitempty"`
	Gate  *Gate  `json:"gate,omitempty"`
	// Template, when set (LoadManifests: the arm's Deployment), is the pod the arm runs; the
	// placement fields above are then unused.
	Template *corev1.PodTemplateSpec `json:"-"`
}

// Preference is a preferred node affinity term.
type Preference struct {
	Weight int32  `json:"weight"`
	Key    string `json:"key"`
	Value  string `json:"value"`
}

// Background is low-priority load started before the arm's pods (so that preemption happens).
type Background struct {
	Pods          int    `json:"pods"`
	PriorityClass string `json:"priorityClass"`
	// Template, when set (LoadManifests), is the background pod.
	Template *corev1.PodTemplateSpec `json:"-"`
}

// Day20 is the default experiment (day20.yaml).
func Day20() *Definition { return specfile.Embedded("day20.yaml", day20YAML, Parse) }

// Load reads a definition from a YAML file.
func Load(path string) (*Definition, error) {
	return specfile.Load("experiment definition", path, Parse)
}

// Parse reads and validates a definition.
func Parse(b []byte) (*Definition, error) {
	var d Definition
	if err := specfile.Strict(b, &d); err != nil {
		return nil, err
	}
	switch {
	case d.Name == "":
		return nil, errors.New("name missing")
	case d.Repeats < 1:
		return nil, errors.New("repeats must be ≥ 1")
	case d.Fixed == nil || d.Fixed.Image == "" || d.Fixed.Pods < 1:
		return nil, errors.New("fixed needs an image and pods ≥ 1")
	case len(d.Arms) == 0:
		return nil, errors.New("no arms")
	}
	names := map[string]bool{}
	for _, a := range d.Arms {
		if a.Name == "" || names[a.Name] {
			return nil, fmt.Errorf("arm name %q missing or repeated", a.Name)
		}
		names[a.Name] = true
		if a.Claim != nil {
			if err := a.Claim.validate(a.Name); err != nil {
				return nil, err
			}
		}
		if a.Gate != nil {
			if err := a.Gate.validate(a.Name); err != nil {
				return nil, err
			}
		}
	}
	if d.Baseline == "" {
		d.Baseline = d.Arms[0].Name
	}
	if !names[d.Baseline] {
		return nil, fmt.Errorf("baseline %q is not an arm", d.Baseline)
	}
	for _, s := range d.Disruptions {
		if s != RollingUpdate && s != Drain && s != NodeRejoin {
			return nil, fmt.Errorf("disruption %q: want %s, %s or %s", s, RollingUpdate, Drain, NodeRejoin)
		}
	}
	if d.Fixed.Model == "" {
		d.Fixed.Model = "model"
	}
	return &d, nil
}

// ConfigMap is the experiment ConfigMap the collector turns into an experiment envelope: the
// team's keys change, fixed, metrics, repeats, plus baseline, arms and thresholds, each as YAML.
func (d *Definition) ConfigMap(namespace string) (*corev1.ConfigMap, error) {
	data := map[string]string{"change": d.Change, "repeats": strconv.Itoa(d.Repeats), "baseline": d.Baseline}
	for key, v := range map[string]any{"fixed": d.Fixed, "metrics": d.Metrics, "arms": d.Arms, "thresholds": d.Thresholds} {
		b, err := yaml.Marshal(v)
		if err != nil {
			return nil, err
		}
		data[key] = string(b)
	}
	if d.Previous != "" {
		data["previous"] = d.Previous
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-experiment", Namespace: namespace, Labels: map[string]string{events.LabelExperiment: d.Name}},
		Data:       data,
	}, nil
}

// Progress says where a run is.
type Progress struct {
	Run, Runs  int
	Arm        string // an arm, or a disruption scenario
	Ready, Of  int    // pods Ready of those expected
	Phase      string // starting, waiting, holding, disrupting, cleaning, done
	Elapsed    time.Duration
	Unready    []string // pods not Ready when the wait timed out
	Background int      // background pods of the arm
}

// Runner runs definitions on a lab cluster.
type Runner struct {
	Client kubernetes.Interface
	// Nodes fails and rejoins nodes for the node-rejoin scenario (the simulated kubelet).
	Nodes     disrupt.Nodes
	Namespace string
	Progress  func(Progress)
	// Timeout bounds the wait for an arm's pods to be Ready (pods still Pending then stay so, as
	// censored observations); Hold is how long Ready pods serve before the arm ends; Speed
	// scales the scenario pauses like the kubelet's delays.
	Timeout time.Duration
	Hold    time.Duration
}

// Run runs every arm of d for every repeat, then the disruption scenarios of each repeat.
func (r *Runner) Run(ctx context.Context, d *Definition) error {
	if r.Timeout == 0 {
		r.Timeout = 45 * time.Second
	}
	if r.Hold == 0 {
		r.Hold = 2 * time.Second
	}
	if r.Progress == nil {
		r.Progress = func(Progress) {}
	}
	cm, err := d.ConfigMap(r.Namespace)
	if err != nil {
		return err
	}
	if d.Source != nil {
		// The manifests' ConfigMap, under the definition's name and chain (the demo may have
		// renamed it to chain it to an earlier run).
		cm = d.Source.DeepCopy()
		cm.Namespace, cm.ResourceVersion = r.Namespace, ""
		cm.Labels[events.LabelExperiment] = d.Name
		if d.Previous != "" {
			cm.Data["previous"] = d.Previous
		}
	}
	if _, err := r.Client.CoreV1().ConfigMaps(r.Namespace).Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = r.Client.CoreV1().ConfigMaps(r.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("experiment configmap: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("experiment configmap: %w", err)
	}
	for run := 1; run <= d.Repeats; run++ {
		for _, arm := range d.Arms {
			if err := r.arm(ctx, d, arm, run); err != nil {
				return fmt.Errorf("run %d arm %s: %w", run, arm.Name, err)
			}
		}
		for _, s := range d.Disruptions {
			if err := r.disruption(ctx, d, s, run); err != nil {
				return fmt.Errorf("run %d %s: %w", run, s, err)
			}
		}
	}
	return nil
}

// pod builds one pod of the fixed workload under arm's rules (or from the arm's template).
func (r *Runner) pod(d *Definition, arm Arm, armLabel string, run int, name string) *corev1.Pod {
	return d.pod(arm, armLabel, r.Namespace, run, name)
}

// Pods are the pods the runner creates for an arm in a run, as it names and labels them: the
// arm's background load (arm label "background") first, then the fixed workload under the
// arm's rules.
func (d *Definition) Pods(arm Arm, namespace string, run int) (background, pods []*corev1.Pod) {
	if bg := arm.Background; bg != nil {
		for i := 1; i <= bg.Pods; i++ {
			bgArm := Arm{NodeSelector: arm.NodeSelector, Tolerations: arm.Tolerations, PriorityClass: bg.PriorityClass, Template: bg.Template}
			background = append(background, d.pod(bgArm, "background", namespace, run, fmt.Sprintf("%s-%s-bg-r%d-%d", d.Name, arm.Name, run, i)))
		}
	}
	for i := 1; i <= d.Fixed.Pods; i++ {
		pods = append(pods, d.pod(arm, arm.Name, namespace, run, fmt.Sprintf("%s-%s-r%d-%d", d.Name, arm.Name, run, i)))
	}
	return background, pods
}

func (d *Definition) pod(arm Arm, armLabel, namespace string, run int, name string) *corev1.Pod {
	if arm.Template != nil {
		return d.podFromTemplate(arm.Template, armLabel, namespace, run, name)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels: map[string]string{
				"app": d.Name, events.LabelExperiment: d.Name, events.LabelArm: armLabel, events.LabelRun: strconv.Itoa(run),
			},
			Annotations: map[string]string{kubelet.AnnotationModel: d.Fixed.Model},
		},
		Spec: corev1.PodSpec{
			PriorityClassName: arm.PriorityClass,
			NodeSelector:      arm.NodeSelector,
			Tolerations:       arm.Tolerations,
			Containers: []corev1.Container{{
				Name: "model", Image: d.Fixed.Image,
				Ports: []corev1.ContainerPort{{ContainerPort: int32(max(d.requestPort(), 1))}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
				},
			}},
		},
	}
	var na corev1.NodeAffinity
	if len(arm.Required) > 0 {
		var term corev1.NodeSelectorTerm
		for _, k := range slices.Sorted(maps.Keys(arm.Required)) {
			term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{arm.Required[k]}})
		}
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}
	}
	for _, pref := range arm.Preferred {
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, corev1.PreferredSchedulingTerm{
			Weight: pref.Weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: pref.Key, Operator: corev1.NodeSelectorOpIn, Values: []string{pref.Value}}}},
		})
	}
	if na.RequiredDuringSchedulingIgnoredDuringExecution != nil || len(na.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &na}
	}
	if arm.Claim != nil {
		d.useClaim(p, arm, run)
	}
	if arm.Gate != nil {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: arm.Gate.Name}}
	}
	return p
}

func (r *Runner) arm(ctx context.Context, d *Definition, arm Arm, run int) error {
	start := time.Now()
	report := func(phase string, ready, of int, unready []string) {
		r.Progress(Progress{Run: run, Runs: d.Repeats, Arm: arm.Name, Phase: phase, Ready: ready, Of: of, Elapsed: time.Since(start), Unready: unready})
	}
	report("starting", 0, d.Fixed.Pods, nil)
	var all []string
	background, pods := d.Pods(arm, r.Namespace, run)
	if len(background) > 0 {
		names, err := r.createAll(ctx, background)
		if err != nil {
			return err
		}
		all = append(all, names...)
		if _, err := r.waitReady(ctx, names, r.Timeout, nil); err != nil {
			return err
		}
	}
	if arm.Claim != nil {
		if err := r.ensureClaim(ctx, d, arm, run); err != nil {
			return err
		}
	}
	names, err := r.createAll(ctx, pods)
	if err != nil {
		return err
	}
	all = append(all, names...)
	if arm.Gate != nil {
		report("gated", 0, len(names), nil)
		if !wait.Sleep(ctx, arm.Gate.Hold.Duration) {
			return ctx.Err()
		}
		if err := r.openGates(ctx, names); err != nil {
			return err
		}
	}
	unready, err := r.waitReady(ctx, names, r.Timeout, func(n int) { report("waiting", n, len(names), nil) })
	if err != nil {
		return err
	}
	report("holding", len(names)-len(unready), len(names), unready)
	if !wait.Sleep(ctx, r.Hold) {
		return ctx.Err()
	}
	report("cleaning", len(names)-len(unready), len(names), unready)
	if err := r.deleteAll(ctx, all); err != nil {
		return err
	}
	if err := r.releaseClaim(ctx, d, arm, run); err != nil {
		return err
	}
	report("done", len(names)-len(unready), len(names), unready)
	return nil
}

// createAll creates pods in order and returns their names.
func (r *Runner) createAll(ctx context.Context, pods []*corev1.Pod) ([]string, error) {
	var names []string
	for _, p := range pods {
		if err := r.create(ctx, p); err != nil {
			return nil, err
		}
		names = append(names, p.Name)
	}
	return names, nil
}

func (r *Runner) create(ctx context.Context, p *corev1.Pod) error {
	if _, err := r.Client.CoreV1().Pods(r.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod %s: %w", p.Name, err)
	}
	return nil
}

// waitReady waits until every named pod is Ready or timeout passes; it returns those not Ready.
// A pod that disappears (preempted) counts as not Ready.
func (r *Runner) waitReady(ctx context.Context, names []string, timeout time.Duration, tick func(ready int)) ([]string, error) {
	deadline := time.Now().Add(timeout)
	for {
		var unready []string
		for _, n := range names {
			p, err := r.Client.CoreV1().Pods(r.Namespace).Get(ctx, n, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, err
			}
			if err != nil || !isReady(p) {
				unready = append(unready, n)
			}
		}
		if tick != nil {
			tick(len(names) - len(unready))
		}
		if len(unready) == 0 || time.Now().After(deadline) {
			return unready, nil
		}
		if !wait.Sleep(ctx, 100*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

// deleteAll deletes pods gracefully (the simulated kubelet finishes the deletions) and waits.
func (r *Runner) deleteAll(ctx context.Context, names []string) error {
	for _, n := range names {
		if err := r.Client.CoreV1().Pods(r.Namespace).Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s: %w", n, err)
		}
	}
	for _, n := range names {
		if err := r.waitGone(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// requestPort is the port of the fixed request (0 when none).
func (d *Definition) requestPort() int {
	if d.Fixed == nil || d.Fixed.Request == nil {
		return 0
	}
	return d.Fixed.Request.Port
}

// String renders a definition as JSON, for logs.
func (d *Definition) String() string {
	b, _ := json.Marshal(d)
	return string(b)
}
