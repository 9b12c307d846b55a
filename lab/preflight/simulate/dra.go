package simulate

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/internal/wait"
)

// DRA in the dry run: the cluster's DeviceClasses and ResourceSlices are published as they
// are, its allocated claims re-created with their allocations (their devices stay in use), the
// manifests' DeviceClasses and ResourceClaimTemplates created once, and the manifests'
// ResourceClaims created fresh for every group (a shared claim is allocated by the group that
// uses it, then deleted). The kube-controller-manager's resourceclaim controller makes each
// pod's claims from its templates; the scheduler allocates them.

// setupDRA publishes the cluster's and the manifests' DRA objects.
func (r *run) setupDRA(ctx context.Context) error {
	res := r.s.client.ResourceV1()
	for _, dc := range r.in.DeviceClasses {
		obj := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: dc.Name, Labels: dc.Labels}, Spec: dc.Spec}
		if _, err := res.DeviceClasses().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create device class %s: %w", dc.Name, err)
		}
	}
	for _, sl := range r.in.ResourceSlices {
		obj := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: sl.Name, Labels: sl.Labels}, Spec: sl.Spec}
		if _, err := res.ResourceSlices().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create resource slice %s: %w", sl.Name, err)
		}
		r.slices = append(r.slices, obj)
	}
	for _, rc := range r.in.Claims {
		if err := ensureNamespace(ctx, r.s.client, rc.Namespace); err != nil {
			return err
		}
		obj := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: rc.Name, Namespace: rc.Namespace}, Spec: rc.Spec}
		created, err := res.ResourceClaims(rc.Namespace).Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create allocated claim %s/%s: %w", rc.Namespace, rc.Name, err)
		}
		created.Status.Allocation = rc.Status.Allocation
		if _, err := res.ResourceClaims(rc.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("allocate claim %s/%s: %w", rc.Namespace, rc.Name, err)
		}
		r.kept[rc.Namespace+"/"+rc.Name] = true
	}
	for _, c := range r.in.ManifestClaims {
		if err := ensureNamespace(ctx, r.s.client, c.Namespace); err != nil {
			return err
		}
		if !c.Template() {
			continue
		}
		obj := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace},
			Spec: resourcev1.ResourceClaimTemplateSpec{Spec: c.Spec}}
		if _, err := res.ResourceClaimTemplates(c.Namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create resource claim template %s/%s: %w", c.Namespace, c.Name, err)
		}
	}
	return nil
}

// groupClaims creates the manifests' ResourceClaims for a group.
func (r *run) groupClaims(ctx context.Context) error {
	for _, c := range r.in.ManifestClaims {
		if c.Template() {
			continue
		}
		obj := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace}, Spec: c.Spec}
		if _, err := r.s.client.ResourceV1().ResourceClaims(c.Namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create resource claim %s/%s: %w", c.Namespace, c.Name, err)
		}
	}
	return nil
}

// removeClaims deletes the group's claims — the manifests' and those made from templates —
// once its pods are gone, and waits until they are (the resourceclaim controller lifts their
// finalizers), so the next group finds their devices free. The cluster's claims stay.
func (r *run) removeClaims(ctx context.Context) error {
	res := r.s.client.ResourceV1()
	deadline := time.Now().Add(r.timeout)
	for {
		var left []string
		for _, o := range r.claims.List() {
			rc := o.(*resourcev1.ResourceClaim)
			key := rc.Namespace + "/" + rc.Name
			if r.kept[key] {
				continue
			}
			left = append(left, key)
			if rc.DeletionTimestamp == nil {
				if err := res.ResourceClaims(rc.Namespace).Delete(ctx, rc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("delete resource claim %s: %w", key, err)
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("resource claims %v still there after %s", left, r.timeout)
		}
		if !wait.Sleep(ctx, poll) {
			return ctx.Err()
		}
	}
}

// draView resolves a bound pod's claims through the run's claims and slices, as the collector
// does (kube.PodClaims): the GPU model and sharing its claims got.
type draView struct{ r *run }

func (v draView) Claim(namespace, name string) *resourcev1.ResourceClaim {
	o, ok, _ := v.r.claims.GetByKey(namespace + "/" + name)
	if !ok {
		return nil
	}
	return o.(*resourcev1.ResourceClaim)
}

func (v draView) Device(driver, pool, device string) (*resourcev1.Device, string) {
	for _, sl := range v.r.slices {
		if sl.Spec.Driver != driver || sl.Spec.Pool.Name != pool {
			continue
		}
		if d, node := kube.SliceDevice(sl, device); d != nil {
			return d, node
		}
	}
	return nil, ""
}

func (draView) AllocationObserved(types.UID) time.Time { return time.Time{} }

// claimsGPU is the GPU model and sharing a bound pod's claims got, "" when it has none.
func (r *run) claimsGPU(p *corev1.Pod) (model, sharing string) {
	if g := kube.GPUOfClaims(kube.PodClaims(p, draView{r})); g != nil {
		return g.Model, g.Sharing
	}
	return "", ""
}

var _ kube.DRA = draView{}
