package preflight

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

// Claim is a ResourceClaim or ResourceClaimTemplate of the manifests: the claim spec its pods
// get (a template's spec.spec, a claim's spec) and the field path of that spec.
type Claim struct {
	*Object
	Spec resourcev1.ResourceClaimSpec
	// SpecPath is "spec" for a ResourceClaim, "spec.spec" for a template.
	SpecPath string
}

// Template reports whether the claim is a ResourceClaimTemplate (each pod gets its own claim).
func (c *Claim) Template() bool { return c.Kind == "ResourceClaimTemplate" }

// Sharing is how the claim's opaque configuration for NVIDIA's driver shares its devices
// (events.SharingTimeSlicing, events.SharingMPS), "" when it says nothing.
func (c *Claim) Sharing() string {
	return kube.ClaimSharing(&resourcev1.ResourceClaim{Spec: c.Spec})
}

// DeviceClass is a DeviceClass of the manifests.
type DeviceClass struct {
	*Object
	Class resourcev1.DeviceClass
}

// claim finds the manifests' claim (or template) of a kind in a namespace.
func (in *Input) claim(kind, namespace, name string) *Claim {
	for _, c := range in.Claims {
		if c.Kind == kind && c.Namespace == namespace && c.Name == name {
			return c
		}
	}
	return nil
}

// deviceClass is the DeviceClass name as the manifests or the cluster define it, nil if neither.
func (ch *checker) deviceClass(name string) *resourcev1.DeviceClass {
	for _, dc := range ch.in.DeviceClasses {
		if dc.Name == name {
			return &dc.Class
		}
	}
	return ch.c.deviceClass(name)
}

func (c *Cluster) deviceClass(name string) *resourcev1.DeviceClass {
	for i := range c.DeviceClasses {
		if c.DeviceClasses[i].Name == name {
			return &c.DeviceClasses[i]
		}
	}
	return nil
}

// celCache compiles device selectors as kube-scheduler's allocator does (its cache type, its
// compiler): an expression the scheduler rejects is rejected here with the same error.
var celCache = cel.NewCache(64, cel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})

// selectorMatches evaluates one CEL device selector against a device of a slice.
func selectorMatches(expr string, driver string, d *resourcev1.Device) (bool, error) {
	c := celCache.GetOrCompile(expr)
	if c.Error != nil {
		return false, c.Error
	}
	ok, _, err := c.DeviceMatches(context.Background(), cel.Device{Driver: driver, Attributes: d.Attributes,
		Capacity: d.Capacity, AllowMultipleAllocations: d.AllowMultipleAllocations})
	return ok, err
}

// sliceDevice is one device a ResourceSlice publishes.
type sliceDevice struct {
	slice  *resourcev1.ResourceSlice
	device *resourcev1.Device
}

// node is the node the device is local to, "" for a device any node can reach.
func (d sliceDevice) node() string { return ptr.Deref(d.slice.Spec.NodeName, "") }

// devices lists every device of the cluster's slices.
func (c *Cluster) devices() []sliceDevice {
	var out []sliceDevice
	for i := range c.ResourceSlices {
		s := &c.ResourceSlices[i]
		for j := range s.Spec.Devices {
			out = append(out, sliceDevice{slice: s, device: &s.Spec.Devices[j]})
		}
	}
	return out
}

// selectors are a request's selectors in the order the scheduler applies them: its class's,
// then its own, each with the field path it is read from.
type selector struct {
	expr, field string
}

// matching keeps the devices every selector matches; failed is the first selector that leaves
// none, with the devices it was tried on, and err an expression the scheduler cannot evaluate.
func matching(devices []sliceDevice, sels []selector) (kept []sliceDevice, failed *selector, tried []sliceDevice, err error) {
	kept = devices
	for i := range sels {
		var next []sliceDevice
		for _, d := range kept {
			ok, e := selectorMatches(sels[i].expr, d.slice.Spec.Driver, d.device)
			if e != nil {
				return nil, &sels[i], kept, e
			}
			if ok {
				next = append(next, d)
			}
		}
		if len(next) == 0 {
			return nil, &sels[i], kept, nil
		}
		kept = next
	}
	return kept, nil, nil, nil
}

// classSelectors are a DeviceClass's CEL selectors.
func classSelectors(dc *resourcev1.DeviceClass, field string) []selector {
	var out []selector
	for i, s := range dc.Spec.Selectors {
		if s.CEL != nil {
			out = append(out, selector{expr: s.CEL.Expression, field: fmt.Sprintf("%s.selectors[%d].cel.expression", field, i)})
		}
	}
	return out
}

// request is one device request of a claim, or one subrequest of a firstAvailable list.
type request struct {
	name, field string
	class       string
	selectors   []resourcev1.DeviceSelector
	count       int64 // devices wanted on one node; 0 for All
}

func requestsOf(spec *resourcev1.ResourceClaimSpec, specPath string) []request {
	var out []request
	for i, r := range spec.Devices.Requests {
		field := fmt.Sprintf("%s.devices.requests[%d]", specPath, i)
		if e := r.Exactly; e != nil {
			out = append(out, request{name: r.Name, field: field + ".exactly", class: e.DeviceClassName, selectors: e.Selectors, count: countOf(e.AllocationMode, e.Count)})
		}
		for j, s := range r.FirstAvailable {
			out = append(out, request{name: r.Name + "/" + s.Name, field: fmt.Sprintf("%s.firstAvailable[%d]", field, j), class: s.DeviceClassName,
				selectors: s.Selectors, count: countOf(s.AllocationMode, s.Count)})
		}
	}
	return out
}

func countOf(mode resourcev1.DeviceAllocationMode, count int64) int64 {
	switch {
	case mode == resourcev1.DeviceAllocationModeAll:
		return 0
	case count > 0:
		return count
	}
	return 1
}

// claims: DRA rules on the manifests' ResourceClaims and ResourceClaimTemplates — classes that
// do not exist, and requests no device of the cluster's ResourceSlices can serve.
func (ch *checker) claims() {
	devices := ch.c.devices()
	for _, c := range ch.in.Claims {
		for _, r := range requestsOf(&c.Spec, c.SpecPath) {
			dc := ch.deviceClass(r.class)
			if dc == nil {
				ch.f.add(RuleDRAClassMissing, "", c.Object, r.field+".deviceClassName",
					fmt.Sprintf("request %s names DeviceClass %s, which neither the cluster nor the manifests define; %s", r.name, r.class, ch.describeClasses()), "", "")
				continue
			}
			if !ch.c.DRAListed {
				continue // the slices are unknown: nothing to match against
			}
			sels := classSelectors(dc, "DeviceClass "+dc.Name+" spec")
			for i, s := range r.selectors {
				if s.CEL != nil {
					sels = append(sels, selector{expr: s.CEL.Expression, field: fmt.Sprintf("%s.selectors[%d].cel.expression", r.field, i)})
				}
			}
			kept, failed, tried, err := matching(devices, sels)
			field := r.field
			if failed != nil && strings.HasPrefix(failed.field, r.field) {
				field = failed.field
			}
			switch {
			case err != nil:
				ch.f.add(RuleDRANoDevice, "", c.Object, field,
					fmt.Sprintf("request %s: the scheduler cannot evaluate selector %q: %v", r.name, failed.expr, err), "", "")
			case len(devices) == 0:
				ch.f.add(RuleDRANoDevice, "", c.Object, r.field,
					fmt.Sprintf("request %s (DeviceClass %s): the cluster publishes no ResourceSlice, so no device can be allocated", r.name, r.class), "", "")
			case failed != nil:
				ch.f.add(RuleDRANoDevice, "", c.Object, field,
					fmt.Sprintf("request %s (DeviceClass %s): selector %q (%s) matches none of the %s left in %s%s",
						r.name, r.class, failed.expr, failed.field, plural(len(tried), "device"), sliceNames(tried, 4), attributeValues(failed.expr, tried)), "", "")
			case r.count > 1:
				if best, node := mostOnOneNode(kept); best < r.count {
					ch.f.add(RuleDRANoDevice, "", c.Object, r.field+".count",
						fmt.Sprintf("request %s (DeviceClass %s) asks for %d devices on one node; its selectors match %s, at most %d on one node (%s)",
							r.name, r.class, r.count, plural(len(kept), "device"), best, node), "", "")
				}
			}
		}
	}
}

// mostOnOneNode is the most devices one node offers (devices of network slices count for every
// node) and that node.
func mostOnOneNode(devs []sliceDevice) (int64, string) {
	per := map[string]int64{}
	var shared int64
	for _, d := range devs {
		if n := d.node(); n != "" {
			per[n]++
		} else {
			shared++
		}
	}
	best, node := shared, "network-attached"
	for _, n := range slices.Sorted(maps.Keys(per)) {
		if per[n]+shared > best {
			best, node = per[n]+shared, n
		}
	}
	return best, node
}

func sliceNames(devs []sliceDevice, max int) string {
	var names []string
	seen := map[string]bool{}
	for _, d := range devs {
		if !seen[d.slice.Name] {
			seen[d.slice.Name] = true
			names = append(names, d.slice.Name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "no ResourceSlice"
	}
	out := "ResourceSlice"
	if len(names) > 1 {
		out += "s"
	}
	out += " " + strings.Join(names[:min(len(names), max)], ", ")
	if len(names) > max {
		out += fmt.Sprintf(" and %d more", len(names)-max)
	}
	return out
}

// attributeValues names the attributes the failed selector reads (events.DeviceAttributeRefs,
// as /v1/labels reads them) and the values the devices it was tried on carry: what the
// expression should have asked for.
func attributeValues(expr string, devs []sliceDevice) string {
	var parts []string
	for _, ref := range events.DeviceAttributeRefs(expr) {
		domain, name, _ := strings.Cut(ref, "/")
		vals := map[string]bool{}
		for _, d := range devs {
			for qn, a := range d.device.Attributes {
				dom, id, ok := strings.Cut(string(qn), "/")
				if !ok {
					dom, id = d.slice.Spec.Driver, string(qn)
				}
				if dom == domain && id == name {
					vals[attrString(a)] = true
				}
			}
		}
		desc := fmt.Sprintf("no device has attribute %s/%s", domain, name)
		if len(vals) > 0 {
			vs := slices.Sorted(maps.Keys(vals))
			desc = fmt.Sprintf("attribute %s/%s is %s", domain, name, strings.Join(vs[:min(len(vs), 6)], ", "))
			if len(vs) > 6 {
				desc += fmt.Sprintf(" (and %d more values)", len(vs)-6)
			}
		}
		if !slices.Contains(parts, desc) {
			parts = append(parts, desc)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

func attrString(a resourcev1.DeviceAttribute) string {
	switch {
	case a.StringValue != nil:
		return fmt.Sprintf("%q", *a.StringValue)
	case a.IntValue != nil:
		return fmt.Sprint(*a.IntValue)
	case a.BoolValue != nil:
		return fmt.Sprint(*a.BoolValue)
	case a.VersionValue != nil:
		return *a.VersionValue
	}
	return "?"
}

func (ch *checker) describeClasses() string {
	names := map[string]bool{}
	for _, dc := range ch.in.DeviceClasses {
		names[dc.Name] = true
	}
	for _, dc := range ch.c.DeviceClasses {
		names[dc.Name] = true
	}
	switch {
	case len(names) == 0 && !ch.c.DRAListed:
		return "the cluster's DeviceClasses were not read"
	case len(names) == 0:
		return "the cluster defines no DeviceClass"
	}
	return "defined: " + strings.Join(slices.Sorted(maps.Keys(names)), ", ")
}

// extendedClass is a DeviceClass that serves an extended resource through DRA, and the nodes
// whose slices hold a device its selectors match.
type extendedClass struct {
	class *resourcev1.DeviceClass
	nodes []string
}

// extendedResourceClasses maps each extended resource name a DeviceClass serves through DRA
// (spec.extendedResourceName, KEP-5004) to the class and its nodes: worked out once per check
// (the selectors run over every device), then read for every workload.
func (ch *checker) extendedResourceClasses() map[corev1.ResourceName]extendedClass {
	if ch.extended != nil {
		return ch.extended
	}
	ch.extended = map[corev1.ResourceName]extendedClass{}
	add := func(dc *resourcev1.DeviceClass) {
		if r := ptr.Deref(dc.Spec.ExtendedResourceName, ""); r != "" {
			if _, ok := ch.extended[corev1.ResourceName(r)]; !ok {
				ch.extended[corev1.ResourceName(r)] = extendedClass{class: dc, nodes: ch.classNodes(dc)}
			}
		}
	}
	for _, dc := range ch.in.DeviceClasses {
		add(&dc.Class)
	}
	for i := range ch.c.DeviceClasses {
		add(&ch.c.DeviceClasses[i])
	}
	return ch.extended
}

// classNodes are the nodes whose slices hold a device the class's selectors match.
func (ch *checker) classNodes(dc *resourcev1.DeviceClass) []string {
	kept, _, _, err := matching(ch.c.devices(), classSelectors(dc, ""))
	if err != nil {
		return nil
	}
	nodes := map[string]bool{}
	for _, d := range kept {
		nodes[cmp.Or(d.node(), "network-attached devices")] = true
	}
	return slices.Sorted(maps.Keys(nodes))
}

// extendedResources: a container asks for an extended resource (nvidia.com/gpu) that a
// DeviceClass maps through DRA — which nodes serve it through the device plugin, which through
// a claim the scheduler creates.
func (ch *checker) extendedResources(w *Workload) {
	mapped := ch.extendedResourceClasses()
	if len(mapped) == 0 {
		return
	}
	for i, c := range w.Template.Spec.Containers {
		for _, r := range slices.Sorted(maps.Keys(c.Resources.Limits)) {
			ec, ok := mapped[r]
			if !ok {
				continue
			}
			dc, dra := ec.class, ec.nodes
			var plugin []*corev1.Node
			for _, n := range ch.c.Nodes {
				if allocatable(n, r) > 0 {
					plugin = append(plugin, n)
				}
			}
			var paths []string
			if len(plugin) > 0 {
				paths = append(paths, fmt.Sprintf("the device plugin on %s", nodeNames(plugin, 4)))
			}
			if len(dra) > 0 {
				paths = append(paths, fmt.Sprintf("a claim the scheduler creates from DeviceClass %s on %s", dc.Name, listSome(dra, 4)))
			}
			if len(paths) == 0 {
				paths = append(paths, fmt.Sprintf("neither: no node advertises it and DeviceClass %s matches no device", dc.Name))
			}
			sev := Info
			if len(plugin) > 0 && len(dra) > 0 {
				sev = Warning // either path may serve a replica: model and sharing depend on which
			}
			ch.f.add(RuleDRAExtendedResource, sev, w.Object, w.SpecPath(fmt.Sprintf("containers[%d].resources.limits", i)),
				fmt.Sprintf("container %s asks for %s, which DeviceClass %s maps through DRA: served by %s", c.Name, r, dc.Name, strings.Join(paths, "; and by ")), "", "")
		}
	}
}

// draAdvertised adds to the advertised GPU resources those a DeviceClass serves through DRA on
// some node (its slices hold a matching device).
func (ch *checker) draAdvertised(adv map[corev1.ResourceName]int) {
	for r, ec := range ch.extendedResourceClasses() {
		if n := len(ec.nodes); n > 0 {
			adv[r] += n
		}
	}
}

// armSharing is how an arm's pods share their claims' GPUs, as the manifests say: the claims'
// sharing configuration, and "shared-claim" for one ResourceClaim named by every replica.
// known is false when a claim of the pod is not in the manifests.
func (ch *checker) armSharing(w *Workload) (sharing []string, known bool) {
	known = true
	for _, rc := range w.Template.Spec.ResourceClaims {
		var c *Claim
		switch {
		case rc.ResourceClaimTemplateName != nil:
			c = ch.in.claim("ResourceClaimTemplate", w.Namespace, *rc.ResourceClaimTemplateName)
		case rc.ResourceClaimName != nil:
			c = ch.in.claim("ResourceClaim", w.Namespace, *rc.ResourceClaimName)
		}
		if c == nil {
			known = false
			continue
		}
		s := c.Sharing()
		if !c.Template() && w.Replicas > 1 {
			s = strings.TrimPrefix(s+"+"+events.SharingSharedClaim, "+")
		}
		sharing = append(sharing, rc.Name+"="+cmp.Or(s, events.SharingExclusive))
	}
	return sharing, known
}

// claimSharing: an arm whose claims share GPUs unlike the baseline's, while the experiment's
// change does not declare sharing (declared: the change names sharing, and the strategies it
// names, if any, include the arm's).
func (ch *checker) claimSharing(exp events.Experiment, arm, baseline string, w, base *Workload, declared bool) {
	got, ok1 := ch.armSharing(w)
	want, ok2 := ch.armSharing(base)
	if !ok1 || !ok2 || slices.Equal(got, want) {
		return
	}
	change := strings.ToLower(exp.Change)
	var named, missing []string
	for word, strategy := range map[string]string{"time-slic": events.SharingTimeSlicing, "timeslic": events.SharingTimeSlicing, "mps": events.SharingMPS} {
		if strings.Contains(change, word) {
			named = append(named, strategy)
		}
	}
	for _, s := range got {
		for _, strategy := range []string{events.SharingTimeSlicing, events.SharingMPS} {
			if strings.Contains(s, strategy) && len(named) > 0 && !slices.Contains(named, strategy) && !slices.Contains(missing, strategy) {
				missing = append(missing, strategy)
			}
		}
	}
	field := w.SpecPath("resourceClaims")
	switch {
	case !declared:
		ch.f.add(RuleDRASharingUndeclared, "", w.Object, field,
			fmt.Sprintf("experiment %s arm %s shares its claims' GPUs as [%s], baseline %s as [%s], but the change %q declares no GPU sharing",
				exp.Name, arm, strings.Join(got, ", "), baseline, strings.Join(want, ", "), exp.Change), "", "")
	case len(missing) > 0:
		ch.f.add(RuleDRASharingUndeclared, "", w.Object, field,
			fmt.Sprintf("experiment %s arm %s shares its claims' GPUs as [%s], but the change %q names %s",
				exp.Name, arm, strings.Join(got, ", "), exp.Change, strings.Join(named, ", ")), "", "")
	}
}

// draPool is what a pool's ResourceSlices publish.
type draPool struct {
	devices   map[string]int // DeviceClass → devices its selectors match
	allocated int
	model     string // the first GPU's productName, spelled as GPU feature discovery does
}

// draPools summarises the slices of each node pool: devices per DeviceClass, how many are
// allocated to claims now, and the GPU model the NVIDIA driver names.
func (c *Cluster) draPools() map[string]*draPool {
	if len(c.ResourceSlices) == 0 {
		return nil
	}
	poolOf := map[string]string{}
	for _, n := range c.Nodes {
		poolOf[n.Name] = c.PoolOf(n)
	}
	allocated := map[string]bool{} // driver/pool/device
	for _, rc := range c.Claims {
		for _, r := range rc.Status.Allocation.Devices.Results {
			allocated[r.Driver+"/"+r.Pool+"/"+r.Device] = true
		}
	}
	out := map[string]*draPool{}
	for _, d := range c.devices() {
		name, ok := poolOf[d.node()]
		if !ok {
			continue // network-attached or a node not listed
		}
		p := out[name]
		if p == nil {
			p = &draPool{devices: map[string]int{}}
			out[name] = p
		}
		for i := range c.DeviceClasses {
			dc := &c.DeviceClasses[i]
			if kept, _, _, err := matching([]sliceDevice{d}, classSelectors(dc, "")); err == nil && len(kept) == 1 {
				p.devices[dc.Name]++
			}
		}
		if allocated[d.slice.Spec.Driver+"/"+d.slice.Spec.Pool.Name+"/"+d.device.Name] {
			p.allocated++
		}
		if p.model == "" && d.slice.Spec.Driver == kube.DriverNVIDIAGPU {
			if a, ok := d.device.Attributes["productName"]; ok && a.StringValue != nil {
				p.model = kube.GFDModel(*a.StringValue)
			}
		}
	}
	return out
}
