package kube

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlens/schedlens/internal/events"
)

// DRA is what a collector's caches hold of Dynamic Resource Allocation (resource.k8s.io/v1):
// the claims of the namespaces it watches, the ResourceSlices of the cluster, and when it first
// saw each claim allocated. A nil DRA resolves nothing: claims are listed by name only.
type DRA interface {
	// Claim is the ResourceClaim namespace/name, nil when not in cache.
	Claim(namespace, name string) *resourcev1.ResourceClaim
	// Device is the device a ResourceSlice of driver and pool publishes under that name, and
	// the node the slice is local to ("" for network-attached devices); nil when none does.
	Device(driver, pool, device string) (*resourcev1.Device, string)
	// AllocationObserved is when the collector first saw the claim allocated; zero if not.
	AllocationObserved(uid types.UID) time.Time
}

// NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu): its name, the attributes it
// publishes for every GPU and MIG device, and its opaque claim configuration.
const (
	DriverNVIDIAGPU = "gpu.nvidia.com"

	attrType       = "type"        // "gpu" or "mig"
	attrProduct    = "productName" // "NVIDIA H100 80GB HBM3"
	attrUUID       = "uuid"
	attrProfile    = "profile"    // MIG devices: "1g.10gb"
	attrParentUUID = "parentUUID" // MIG devices: the GPU they are carved from
)

// SliceDevice is the device named device in slice s and the node the slice is local to (""
// for network-attached devices); nil when the slice has none of that name.
func SliceDevice(s *resourcev1.ResourceSlice, device string) (*resourcev1.Device, string) {
	for i := range s.Spec.Devices {
		if s.Spec.Devices[i].Name == device {
			node := ""
			if s.Spec.NodeName != nil {
				node = *s.Spec.NodeName
			}
			return &s.Spec.Devices[i], node
		}
	}
	return nil, ""
}

// PodClaims lists a pod's ResourceClaims — spec.resourceClaims in order, then the claim the
// scheduler generated for extended resources backed by DRA — each resolved through dra.
func PodClaims(pod *corev1.Pod, dra DRA) []events.PodClaim {
	if len(pod.Spec.ResourceClaims) == 0 && pod.Status.ExtendedResourceClaimStatus == nil {
		return nil
	}
	generated := map[string]string{}
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			generated[s.Name] = *s.ResourceClaimName
		}
	}
	out := make([]events.PodClaim, 0, len(pod.Spec.ResourceClaims)+1)
	for _, rc := range pod.Spec.ResourceClaims {
		pc := events.PodClaim{Name: rc.Name}
		switch {
		case rc.ResourceClaimName != nil:
			pc.Claim = *rc.ResourceClaimName
		case rc.ResourceClaimTemplateName != nil:
			pc.Template, pc.Claim = *rc.ResourceClaimTemplateName, generated[rc.Name]
		}
		resolveClaim(&pc, pod.Namespace, dra)
		out = append(out, pc)
	}
	if ext := pod.Status.ExtendedResourceClaimStatus; ext != nil && ext.ResourceClaimName != "" {
		pc := events.PodClaim{Claim: ext.ResourceClaimName, Extended: true}
		resolveClaim(&pc, pod.Namespace, dra)
		out = append(out, pc)
	}
	return out
}

// resolveClaim fills in what the claim object and the slices say: allocation time, consumers,
// sharing strategy and the allocated devices.
func resolveClaim(pc *events.PodClaim, namespace string, dra DRA) {
	if dra == nil || pc.Claim == "" {
		return
	}
	claim := dra.Claim(namespace, pc.Claim)
	if claim == nil {
		return
	}
	classes := map[string]string{} // request name → device class
	selectors := func(ss []resourcev1.DeviceSelector) {
		for _, sel := range ss {
			if sel.CEL != nil {
				pc.Selectors = append(pc.Selectors, sel.CEL.Expression)
			}
		}
	}
	for _, r := range claim.Spec.Devices.Requests {
		if r.Exactly != nil {
			classes[r.Name] = r.Exactly.DeviceClassName
			pc.DeviceClasses = append(pc.DeviceClasses, r.Exactly.DeviceClassName)
			selectors(r.Exactly.Selectors)
		}
		for _, sub := range r.FirstAvailable {
			classes[r.Name+"/"+sub.Name] = sub.DeviceClassName
		}
		if len(r.FirstAvailable) > 0 {
			pc.DeviceClasses = append(pc.DeviceClasses, r.FirstAvailable[0].DeviceClassName)
			selectors(r.FirstAvailable[0].Selectors)
		}
	}
	var refs []string // the device attributes the selectors read
	for _, sel := range pc.Selectors {
		refs = append(refs, events.DeviceAttributeRefs(sel)...)
	}
	slices.Sort(refs)
	refs = slices.Compact(refs)
	pc.ReservedFor = len(claim.Status.ReservedFor)
	pc.Sharing = ClaimSharing(claim)
	alloc := claim.Status.Allocation
	if alloc == nil {
		return
	}
	pc.AllocatedAt = microPtr(alloc.AllocationTimestamp)
	if t := dra.AllocationObserved(claim.UID); !t.IsZero() {
		t = micro(t)
		pc.AllocationObserved = &t
	}

	for _, r := range alloc.Devices.Results {
		d := events.ClaimDevice{Request: r.Request, DeviceClass: classes[r.Request], Driver: r.Driver, Pool: r.Pool, Device: r.Device}
		if r.ShareID != nil {
			d.ShareID = string(*r.ShareID)
		}
		for name, q := range r.ConsumedCapacity {
			if d.ConsumedCapacity == nil {
				d.ConsumedCapacity = map[string]string{}
			}
			d.ConsumedCapacity[string(name)] = q.String()
		}
		if dev, node := dra.Device(r.Driver, r.Pool, r.Device); dev != nil {
			d.Node = node
			d.Type = attribute(dev, r.Driver, attrType)
			d.Model = attribute(dev, r.Driver, attrProduct)
			d.UUID = attribute(dev, r.Driver, attrUUID)
			d.MIGProfile = attribute(dev, r.Driver, attrProfile)
			d.ParentUUID = attribute(dev, r.Driver, attrParentUUID)
			for _, ref := range refs {
				if v, ok := qualifiedAttribute(dev, r.Driver, ref); ok {
					if d.Attributes == nil {
						d.Attributes = map[string]string{}
					}
					d.Attributes[ref] = v
				}
			}
		}
		pc.Devices = append(pc.Devices, d)
	}
}

// attribute is a device's attribute by its short name (of its driver's domain), as text.
func attribute(dev *resourcev1.Device, driver, name string) string {
	v, _ := qualifiedAttribute(dev, driver, driver+"/"+name)
	return v
}

// qualifiedAttribute is a device's attribute by its qualified name (domain/name) as a selector
// reads it — an attribute of the driver's own domain may be published by its short name — as
// text (string, version, integer or bool).
func qualifiedAttribute(dev *resourcev1.Device, driver, ref string) (string, bool) {
	a, ok := dev.Attributes[resourcev1.QualifiedName(ref)]
	if domain, name, _ := strings.Cut(ref, "/"); !ok && domain == driver {
		a, ok = dev.Attributes[resourcev1.QualifiedName(name)]
	}
	switch {
	case !ok:
		return "", false
	case a.StringValue != nil:
		return *a.StringValue, true
	case a.VersionValue != nil:
		return *a.VersionValue, true
	case a.IntValue != nil:
		return strconv.FormatInt(*a.IntValue, 10), true
	case a.BoolValue != nil:
		return strconv.FormatBool(*a.BoolValue), true
	}
	return "", false
}

// gpuConfig is the part of the NVIDIA driver's opaque configuration (GpuConfig,
// MigDeviceConfig) that says how a device is shared.
type gpuConfig struct {
	Sharing *struct {
		Strategy string `json:"strategy"`
	} `json:"sharing"`
}

// ClaimSharing is the sharing strategy a claim's opaque configuration for NVIDIA's driver asks
// for (events.SharingTimeSlicing or events.SharingMPS; the allocation's copy of the config
// wins over the spec's, the last entry over earlier ones), "" when none does.
func ClaimSharing(claim *resourcev1.ResourceClaim) string {
	var s string
	for _, c := range claim.Spec.Devices.Config {
		s = cmp.Or(opaqueSharing(c.Opaque), s)
	}
	if a := claim.Status.Allocation; a != nil {
		for _, c := range a.Devices.Config {
			s = cmp.Or(opaqueSharing(c.Opaque), s)
		}
	}
	return s
}

// opaqueSharing reads the sharing strategy of one opaque configuration for NVIDIA's driver:
// TimeSlicing or MPS, in the vocabulary of events.GPU.Sharing.
func opaqueSharing(o *resourcev1.OpaqueDeviceConfiguration) string {
	if o == nil || o.Driver != DriverNVIDIAGPU || len(o.Parameters.Raw) == 0 {
		return ""
	}
	var cfg gpuConfig
	if err := json.Unmarshal(o.Parameters.Raw, &cfg); err != nil || cfg.Sharing == nil {
		return ""
	}
	switch strings.ToLower(cfg.Sharing.Strategy) {
	case "timeslicing", "time-slicing":
		return events.SharingTimeSlicing
	case "mps":
		return events.SharingMPS
	}
	return ""
}

// GFDModel spells a DRA device's productName ("NVIDIA H100 80GB HBM3") as GPU feature
// discovery's nvidia.com/gpu.product label does ("NVIDIA-H100-80GB-HBM3"), so that both paths
// name one GPU alike.
func GFDModel(productName string) string { return strings.ReplaceAll(productName, " ", "-") }

// GPUOfClaims says how a pod uses GPUs allocated through its claims: nil when none of them
// holds a GPU or MIG device (nor, before allocation, requests one of the NVIDIA driver's
// classes). The model is productName as GPU feature discovery spells it in its
// nvidia.com/gpu.product label (spaces as dashes), so a cluster that mixes both paths reads one
// model under one name. Sharing, in order: MIG (a MIG device), the claim config's strategy
// (MPS, time-slicing), shared-claim (reserved for several pods), consumable-share (a share of
// a multi-allocatable device), else exclusive; unknown while no claim is allocated.
func GPUOfClaims(claims []events.PodClaim) *events.GPU {
	var (
		gpu     *events.GPU
		devices []events.ClaimDevice
		sharing string
		pods    int
		share   bool
	)
	for _, pc := range claims {
		for _, d := range pc.Devices {
			if !isGPUDevice(d) {
				continue
			}
			devices = append(devices, d)
			sharing = cmp.Or(sharing, pc.Sharing)
			pods = max(pods, pc.ReservedFor)
			share = share || d.ShareID != ""
		}
	}
	if len(devices) == 0 {
		// Not allocated yet: a GPU if a request names one of NVIDIA's device classes.
		for _, pc := range claims {
			for _, class := range pc.DeviceClasses {
				if strings.HasSuffix(class, ".nvidia.com") && len(pc.Devices) == 0 {
					if gpu == nil {
						gpu = &events.GPU{Resource: class, Sharing: events.SharingUnknown, Via: events.ViaDRA}
					}
					gpu.Count++
				}
			}
		}
		return gpu
	}
	slices.SortFunc(devices, func(a, b events.ClaimDevice) int {
		return cmp.Or(strings.Compare(a.Pool, b.Pool), strings.Compare(a.Device, b.Device))
	})
	first := devices[0]
	gpu = &events.GPU{Resource: cmp.Or(first.DeviceClass, first.Driver), Count: int64(len(devices)), Via: events.ViaDRA,
		Model: GFDModel(first.Model), ClaimPods: pods}
	for _, d := range devices {
		if d.UUID != "" {
			gpu.UUIDs = append(gpu.UUIDs, d.UUID)
		}
	}
	switch {
	case first.Type == "mig" || first.MIGProfile != "":
		gpu.Sharing, gpu.MIGProfile = events.SharingMIG, first.MIGProfile
	case sharing != "":
		gpu.Sharing = sharing
	case pods > 1:
		gpu.Sharing = events.SharingSharedClaim
	case share:
		gpu.Sharing = events.SharingConsumable
	default:
		gpu.Sharing = events.SharingExclusive
	}
	return gpu
}

// isGPUDevice reports whether an allocated device is a GPU or MIG device: its type attribute
// says so, or NVIDIA's GPU driver allocated it.
func isGPUDevice(d events.ClaimDevice) bool {
	return d.Type == "gpu" || d.Type == "mig" || d.Driver == DriverNVIDIAGPU
}

// claimsDigest names the resolved claim state in a pod_status id, so that a snapshot
// re-published when a claim changes (allocated, reserved by another pod) is a new event while
// the pod's resourceVersion is not. The collector's own observation time is left out: a
// restarted collector publishes the same state under the same id.
func claimsDigest(claims []events.PodClaim) string {
	if len(claims) == 0 {
		return ""
	}
	cs := slices.Clone(claims)
	for i := range cs {
		cs[i].AllocationObserved = nil
	}
	b, _ := json.Marshal(cs)
	sum := sha256.Sum256(b)
	return "/claims/" + hex.EncodeToString(sum[:6])
}
