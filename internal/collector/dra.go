package collector

import (
	"context"
	"fmt"
	"sync"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/schedlens/schedlens/internal/kube"
)

// draCache is kube.DRA over the collector's informers: the ResourceClaims of every scope's
// namespace, the cluster's ResourceSlices (indexed by driver and pool) and DeviceClasses, and
// when each claim was first seen allocated.
type draCache struct {
	claims  []cache.SharedIndexInformer // one per scope
	slices  cache.SharedIndexInformer
	classes cache.SharedIndexInformer

	mu        sync.Mutex
	allocated map[types.UID]time.Time
}

const poolIndex = "pool"

func poolKey(driver, pool string) string { return driver + "/" + pool }

func (d *draCache) Claim(namespace, name string) *resourcev1.ResourceClaim {
	for _, inf := range d.claims {
		if obj, ok, err := inf.GetStore().GetByKey(namespace + "/" + name); err == nil && ok {
			if c, ok := obj.(*resourcev1.ResourceClaim); ok {
				return c
			}
		}
	}
	return nil
}

// Device looks the device up in the newest generation of its pool's slices.
func (d *draCache) Device(driver, pool, device string) (*resourcev1.Device, string) {
	objs, err := d.slices.GetIndexer().ByIndex(poolIndex, poolKey(driver, pool))
	if err != nil {
		return nil, ""
	}
	var newest int64 = -1
	for _, o := range objs {
		if s, ok := o.(*resourcev1.ResourceSlice); ok && s.Spec.Pool.Generation > newest {
			newest = s.Spec.Pool.Generation
		}
	}
	for _, o := range objs {
		s, ok := o.(*resourcev1.ResourceSlice)
		if !ok || s.Spec.Pool.Generation != newest {
			continue
		}
		if d, node := kube.SliceDevice(s, device); d != nil {
			return d, node
		}
	}
	return nil, ""
}

func (d *draCache) AllocationObserved(uid types.UID) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.allocated[uid]
}

// startDRA watches resource.k8s.io/v1 before the pods, so that a pod's first snapshot already
// resolves its claims. A cluster that does not serve the API (before Kubernetes 1.34, or with
// it turned off) or a collector not allowed to list it is logged once and carries on: pods
// then show their claims by name only, and device-plugin GPUs as before.
func (c *Collector) startDRA(ctx context.Context) error {
	if _, err := c.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			c.logger.Warn("Dynamic Resource Allocation not watched: claims are listed by name only",
				"resource", "resourceslices.resource.k8s.io", "error", err)
			return nil
		}
		return fmt.Errorf("list resourceslices: %w", err)
	}
	d := &draCache{allocated: map[types.UID]time.Time{}}
	cf := c.factory()
	d.slices = cf.Resource().V1().ResourceSlices().Informer()
	if err := d.slices.AddIndexers(cache.Indexers{poolIndex: func(obj any) ([]string, error) {
		s, ok := obj.(*resourcev1.ResourceSlice)
		if !ok {
			return nil, nil
		}
		return []string{poolKey(s.Spec.Driver, s.Spec.Pool.Name)}, nil
	}}); err != nil {
		return fmt.Errorf("resourceslice index: %w", err)
	}
	d.classes = cf.Resource().V1().DeviceClasses().Informer()
	fs := []informers.SharedInformerFactory{cf}
	var regs []cache.ResourceEventHandlerRegistration
	for _, inf := range []cache.SharedIndexInformer{d.slices, d.classes} {
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{})
		if err != nil {
			return fmt.Errorf("dra handler: %w", err)
		}
		regs = append(regs, reg)
	}
	for _, sw := range c.scopes {
		nf := c.factory(informers.WithNamespace(scopeNamespace(sw)))
		inf := nf.Resource().V1().ResourceClaims().Informer()
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.onClaim(nil, obj) },
			UpdateFunc: func(old, obj any) { c.onClaim(old, obj) },
			DeleteFunc: func(obj any) { c.onClaimDeleted(obj) },
		})
		if err != nil {
			return fmt.Errorf("resourceclaim handler: %w", err)
		}
		d.claims = append(d.claims, inf)
		fs, regs = append(fs, nf), append(regs, reg)
	}
	c.dra = d
	return start(ctx, fs, regs...)
}

// onClaim notes when a claim is first seen allocated and, when its allocation or its consumers
// changed, publishes again the pods it is reserved for: their snapshots carry what the claim
// got (a new id, kube.PodEnvelope), which their own resourceVersion may not move for.
func (c *Collector) onClaim(old, obj any) {
	claim, ok := obj.(*resourcev1.ResourceClaim)
	if !ok || c.dra == nil {
		return
	}
	if claim.Status.Allocation != nil {
		c.dra.mu.Lock()
		if _, seen := c.dra.allocated[claim.UID]; !seen {
			c.dra.allocated[claim.UID] = c.cfg.Clock().UTC()
		}
		c.dra.mu.Unlock()
	}
	if prev, ok := old.(*resourcev1.ResourceClaim); ok &&
		(prev.Status.Allocation == nil) == (claim.Status.Allocation == nil) && len(prev.Status.ReservedFor) == len(claim.Status.ReservedFor) {
		return
	}
	if !c.ready.Load() {
		// The pod informers are still starting (their first list resolves the claims as they
		// are): nothing to publish again, and the scopes' informers are not set yet.
		return
	}
	for _, ref := range claim.Status.ReservedFor {
		if ref.Resource != "pods" || ref.APIGroup != "" {
			continue
		}
		for _, sw := range c.scopes {
			obj, ok, err := sw.pods.GetStore().GetByKey(claim.Namespace + "/" + ref.Name)
			if err != nil || !ok {
				continue
			}
			if uid, ok := kube.PodUID(obj); ok && uid == ref.UID {
				if _, env, ok := c.podEnvelope(sw, obj, false); ok {
					c.pub.Offer(env)
				}
			}
		}
	}
}

func (c *Collector) onClaimDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if claim, ok := obj.(*resourcev1.ResourceClaim); ok && c.dra != nil {
		c.dra.mu.Lock()
		delete(c.dra.allocated, claim.UID)
		c.dra.mu.Unlock()
	}
}
