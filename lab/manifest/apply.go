package manifest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager is the server-side apply field manager of Apply.
const FieldManager = "schedlens-lab"

// Applier applies objects to one API server with server-side apply and strict field validation:
// an unknown or duplicated field is an error, as a typo in a manifest should be.
type Applier struct {
	client dynamic.Interface
	mapper meta.ResettableRESTMapper
}

// NewApplier returns an Applier for the API server of cfg.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return &Applier{client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// rank orders objects as kubectl and Helm install them: definitions and namespaces first.
func rank(u *unstructured.Unstructured) int {
	switch u.GetKind() {
	case "CustomResourceDefinition":
		return 0
	case "Namespace":
		return 1
	case "PriorityClass", "ServiceAccount", "Secret", "ConfigMap", "ClusterRole", "Role":
		return 2
	case "ClusterRoleBinding", "RoleBinding", "Service":
		return 3
	}
	return 4
}

// Apply applies objs (CRDs and namespaces first, waiting for each CRD to be served); objects
// without a namespace that need one go to defaultNamespace.
func (a *Applier) Apply(ctx context.Context, objs []*unstructured.Unstructured, defaultNamespace string) error {
	sorted := slices.Clone(objs)
	slices.SortStableFunc(sorted, func(x, y *unstructured.Unstructured) int { return rank(x) - rank(y) })
	var errs []error
	for _, u := range sorted {
		if err := a.apply(ctx, u, defaultNamespace); err != nil {
			errs = append(errs, fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err))
			continue
		}
		if u.GetKind() == "CustomResourceDefinition" {
			if err := a.waitEstablished(ctx, u.GetName()); err != nil {
				return err
			}
			a.mapper.Reset()
		}
	}
	return errors.Join(errs...)
}

func (a *Applier) apply(ctx context.Context, u *unstructured.Unstructured, defaultNamespace string) error {
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("map %s: %w", gvk, err)
	}
	var ri dynamic.ResourceInterface = a.client.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := u.GetNamespace()
		if ns == "" {
			ns = defaultNamespace
		}
		ri = a.client.Resource(m.Resource).Namespace(ns)
	}
	body, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	_, err = ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force, FieldValidation: "Strict"})
	return err
}

func (a *Applier) waitEstablished(ctx context.Context, name string) error {
	crds := a.client.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		u, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("crd %s: %w", name, err)
		}
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				if cm["type"] == "Established" && cm["status"] == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("crd %s not established after 30s", name)
}
