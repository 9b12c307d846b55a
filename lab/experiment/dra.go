package experiment

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/specfile"
)

//go:embed day20-dra.yaml
var day20DRAYAML []byte

// Day20DRA is day20 on a cluster with DRA pools (cluster.WithDRA): device-plugin sharing beside
// DRA sharing on the same workload, and an admission gate (day20-dra.yaml).
func Day20DRA() *Definition { return specfile.Embedded("day20-dra.yaml", day20DRAYAML, Parse) }

// Claim gives an arm's pods their GPU through a DRA ResourceClaim instead of the device
// plugin's nvidia.com/gpu.
type Claim struct {
	// Class is the DeviceClass requested (cluster.ClassGPU, cluster.ClassMIG).
	Class string `json:"class"`
	// Shared makes one claim per run that every pod of the arm reserves; otherwise each pod
	// gets its own from a ResourceClaimTemplate.
	Shared bool `json:"shared,omitempty"`
	// Sharing is the strategy of the driver's GpuConfig: TimeSlicing or MPS ("" for none).
	Sharing string `json:"sharing,omitempty"`
}

// Gate holds an arm's pods behind a scheduling gate for Hold after they are created, as
// Kueue's admission does, then removes it.
type Gate struct {
	Name string          `json:"name"`
	Hold metav1.Duration `json:"hold"`
}

func (c *Claim) validate(arm string) error {
	switch {
	case c.Class == "":
		return fmt.Errorf("arm %s: claim.class missing", arm)
	case c.Sharing != "" && c.Sharing != "TimeSlicing" && c.Sharing != "MPS":
		return fmt.Errorf("arm %s: claim.sharing %q: want TimeSlicing or MPS", arm, c.Sharing)
	}
	return nil
}

func (g *Gate) validate(arm string) error {
	if g.Name == "" || g.Hold.Duration <= 0 {
		return fmt.Errorf("arm %s: gate needs a name and a positive hold", arm)
	}
	return nil
}

// claimName is the shared claim of an arm in a run, or the template of its pods' claims.
func (d *Definition) claimName(arm Arm, run int) string {
	if arm.Claim.Shared {
		return fmt.Sprintf("%s-%s-r%d", d.Name, arm.Name, run)
	}
	return fmt.Sprintf("%s-%s", d.Name, arm.Name)
}

// useClaim makes p take its GPU from the arm's claim: the claim (or template) in the pod's
// spec, the container's resources naming it, no nvidia.com/gpu.
func (d *Definition) useClaim(p *corev1.Pod, arm Arm, run int) {
	c := &p.Spec.Containers[0]
	delete(c.Resources.Limits, "nvidia.com/gpu")
	c.Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	name := d.claimName(arm, run)
	rc := corev1.PodResourceClaim{Name: "gpu"}
	if arm.Claim.Shared {
		rc.ResourceClaimName = &name
	} else {
		rc.ResourceClaimTemplateName = &name
	}
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{rc}
}

// claimSpec is what the arm's claims ask for: one device of its class, with the driver's
// sharing config when it names one.
func (c *Claim) spec() resourcev1.ResourceClaimSpec {
	s := resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
		{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: c.Class, Count: 1}}}}}
	if c.Sharing != "" {
		raw := fmt.Appendf(nil, `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":%q}}`, c.Sharing)
		s.Devices.Config = []resourcev1.DeviceClaimConfiguration{{Requests: []string{"gpu"}, DeviceConfiguration: resourcev1.DeviceConfiguration{
			Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: cluster.DRADriver, Parameters: runtime.RawExtension{Raw: raw}}}}}
	}
	return s
}

// ClaimObjects are what an arm's pods claim their GPUs from in a run: its shared
// ResourceClaim or its ResourceClaimTemplate (the other nil), in namespace; both nil for an
// arm without a claim.
func (d *Definition) ClaimObjects(arm Arm, namespace string, run int) (*resourcev1.ResourceClaim, *resourcev1.ResourceClaimTemplate) {
	if arm.Claim == nil {
		return nil, nil
	}
	meta := metav1.ObjectMeta{Name: d.claimName(arm, run), Namespace: namespace}
	if arm.Claim.Shared {
		return &resourcev1.ResourceClaim{TypeMeta: metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"}, ObjectMeta: meta, Spec: arm.Claim.spec()}, nil
	}
	return nil, &resourcev1.ResourceClaimTemplate{TypeMeta: metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaimTemplate"}, ObjectMeta: meta,
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: arm.Claim.spec()}}
}

// ensureClaim creates the arm's shared claim for the run, or its claim template, unless it
// exists.
func (r *Runner) ensureClaim(ctx context.Context, d *Definition, arm Arm, run int) error {
	name := d.claimName(arm, run)
	res := r.Client.ResourceV1()
	claim, tpl := d.ClaimObjects(arm, r.Namespace, run)
	var err error
	if claim != nil {
		_, err = res.ResourceClaims(r.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	} else {
		_, err = res.ResourceClaimTemplates(r.Namespace).Create(ctx, tpl, metav1.CreateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("claim %s: %w", name, err)
	}
	return nil
}

// releaseClaim deletes the run's shared claim once its pods are gone (templates stay: the
// next run's pods use them).
func (r *Runner) releaseClaim(ctx context.Context, d *Definition, arm Arm, run int) error {
	if arm.Claim == nil || !arm.Claim.Shared {
		return nil
	}
	err := r.Client.ResourceV1().ResourceClaims(r.Namespace).Delete(ctx, d.claimName(arm, run), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// openGates removes the pods' scheduling gates (all of them, as an admission controller that
// admits the workload does).
func (r *Runner) openGates(ctx context.Context, names []string) error {
	var errs []error
	for _, n := range names {
		_, err := r.Client.CoreV1().Pods(r.Namespace).Patch(ctx, n, types.JSONPatchType,
			[]byte(`[{"op":"remove","path":"/spec/schedulingGates"}]`), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("open the gate of %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}
