package cluster

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/schedlens/schedlens/lab/specfile"
)

// The simulated DRA driver plays NVIDIA's (kubernetes-sigs/dra-driver-nvidia-gpu): driver
// gpu.nvidia.com, one pool per node named after it, full GPUs "gpu-<index>" and MIG instances
// "gpu-<index>-mig-<profile without dots>-<profile id>-<placement>", with the attributes the
// real driver publishes (type, uuid, productName, brand, architecture; MIG: profile,
// parentUUID) and the DeviceClasses of its Helm chart.
const (
	DRADriver   = "gpu.nvidia.com"
	ClassGPU    = "gpu.nvidia.com"
	ClassMIG    = "mig.nvidia.com"
	driverAttrs = "device.attributes['" + DRADriver + "']"
)

//go:embed dra.yaml
var draYAML []byte

// WithDRA returns s with the DRA pools of dra.yaml added (an H200 node whose two GPUs the
// driver publishes whole, an A100 node split into seven 1g.10gb MIG instances): what `lab demo
// -dra` and the end-to-end tests run on. s is not changed.
func WithDRA(s *Spec) *Spec {
	dra := specfile.Embedded("dra.yaml", draYAML, Parse)
	out := *s
	out.Pools = append(append([]Pool(nil), s.Pools...), dra.Pools...)
	return &out
}

// DeviceClasses are the driver's classes: whole GPUs and MIG instances, selected by CEL as its
// chart does. No extendedResourceName (KEP-5004): pods asking for nvidia.com/gpu keep landing
// on the device-plugin pools only, so a DRA pool added to a cluster changes no other arm.
func DeviceClasses() []*resourcev1.DeviceClass {
	class := func(name, typ string) *resourcev1.DeviceClass {
		return &resourcev1.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
				Expression: fmt.Sprintf("device.driver == '%s' && %s.type == '%s'", DRADriver, driverAttrs, typ)}}}},
		}
	}
	return []*resourcev1.DeviceClass{class(ClassGPU, "gpu"), class(ClassMIG, "mig")}
}

// GPUUUID is the stable GPU-… UUID of a node's GPU index (the kubelet's dcgm-exporter and the
// DRA driver report the same one).
func GPUUUID(nodeName string, index int) string {
	return "GPU-" + hashUUID(nodeName+"/"+strconv.Itoa(index))
}

// MIGUUID is the stable MIG-… UUID of a node's GPU index and instance.
func MIGUUID(nodeName string, index, instance int) string {
	return "MIG-" + hashUUID(nodeName+"/"+strconv.Itoa(index)+"/mig/"+strconv.Itoa(instance))
}

func hashUUID(s string) string {
	h := uint64(14695981039346656037)
	for _, c := range s {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", uint32(h>>32), uint16(h>>16), uint16(h), uint16(h>>48), h&0xffffffffffff)
}

// migProfileIDs are the A100/H100 GPU instance profile ids NVIDIA's driver puts in MIG device
// names.
var migProfileIDs = map[string]int{"1g": 19, "2g": 14, "3g": 9, "4g": 5, "7g": 0}

// DRADevice names a pool's device: gpu-<index> for a whole GPU, the MIG instance's name on a MIG
// pool.
func (p Pool) DRADevice(gpu, instance int) string {
	if p.Sharing.Mode != MIG {
		return "gpu-" + strconv.Itoa(gpu)
	}
	compute, _, _ := strings.Cut(p.Sharing.Profile, ".")
	return fmt.Sprintf("gpu-%d-mig-%s-%d-%d", gpu, strings.ReplaceAll(p.Sharing.Profile, ".", ""), migProfileIDs[compute], instance)
}

// ParseDRADevice reads a device name of DRADevice back into its GPU index and MIG instance (0
// for a whole GPU); false for a name it did not make.
func ParseDRADevice(name string) (gpu, instance int, ok bool) {
	rest, found := strings.CutPrefix(name, "gpu-")
	if !found {
		return 0, 0, false
	}
	idx, mig, isMIG := strings.Cut(rest, "-mig-")
	g, err := strconv.Atoi(idx)
	if err != nil {
		return 0, 0, false
	}
	if !isMIG {
		return g, 0, true
	}
	i := strings.LastIndexByte(mig, '-')
	n, err := strconv.Atoi(mig[i+1:])
	if i < 0 || err != nil {
		return 0, 0, false
	}
	return g, n, true
}

// productName is the driver's spelling of a GPU feature discovery product label: spaces where
// the label has dashes ("NVIDIA-H200" → "NVIDIA H200").
func productName(product string) string { return strings.ReplaceAll(product, "-", " ") }

// ResourceSlice is the slice the driver publishes for the pool's i-th node (1-based); nil for
// a pool without DRA.
func (p Pool) ResourceSlice(i int) *resourcev1.ResourceSlice {
	if !p.DRA || p.GPU.Count == 0 {
		return nil
	}
	node := p.NodeName(i)
	str := func(s string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{StringValue: ptr.To(s)} }
	var devices []resourcev1.Device
	for g := range p.GPU.Count {
		common := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"productName": str(productName(p.GPU.Product)), "brand": str("Nvidia"),
			"driverVersion": {VersionValue: ptr.To("580.82.7")}, "cudaDriverVersion": {VersionValue: ptr.To("13.0.0")},
		}
		if p.Sharing.Mode != MIG {
			attrs := common
			attrs["type"], attrs["uuid"] = str("gpu"), str(GPUUUID(node, g))
			devices = append(devices, resourcev1.Device{Name: p.DRADevice(g, 0), Attributes: attrs,
				Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse(strconv.Itoa(p.GPU.MemoryMiB) + "Mi")}}})
			continue
		}
		for k := range p.Sharing.Slices {
			attrs := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{}
			for n, a := range common {
				attrs[n] = a
			}
			attrs["type"], attrs["uuid"] = str("mig"), str(MIGUUID(node, g, k))
			attrs["profile"], attrs["parentUUID"] = str(p.Sharing.Profile), str(GPUUUID(node, g))
			devices = append(devices, resourcev1.Device{Name: p.DRADevice(g, k), Attributes: attrs})
		}
	}
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + DRADriver},
		Spec: resourcev1.ResourceSliceSpec{Driver: DRADriver, NodeName: ptr.To(node),
			Pool:    resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			Devices: devices},
	}
}

// HasDRA reports whether any pool publishes its GPUs through DRA.
func (s *Spec) HasDRA() bool {
	for _, p := range s.Pools {
		if p.DRA {
			return true
		}
	}
	return false
}

// createDRA publishes the driver's DeviceClasses and every DRA node's ResourceSlice.
func createDRA(ctx context.Context, client kubernetes.Interface, s *Spec) error {
	if !s.HasDRA() {
		return nil
	}
	for _, dc := range DeviceClasses() {
		if _, err := client.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create device class %s: %w", dc.Name, err)
		}
	}
	for _, p := range s.Pools {
		for i := 1; i <= p.Nodes; i++ {
			sl := p.ResourceSlice(i)
			if sl == nil {
				continue
			}
			if _, err := client.ResourceV1().ResourceSlices().Create(ctx, sl, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create resource slice %s: %w", sl.Name, err)
			}
		}
	}
	return nil
}
