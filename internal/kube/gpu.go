package kube

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/schedlens/schedlens/internal/events"
)

// NVIDIA device plugin resources and GPU feature discovery labels (see the package doc).
const (
	resourcePrefix    = "nvidia.com/"
	resourceGPU       = "nvidia.com/gpu"
	resourceGPUShared = "nvidia.com/gpu.shared"
	resourceMIGPrefix = "nvidia.com/mig-"

	labelProduct         = "nvidia.com/gpu.product"
	labelReplicas        = "nvidia.com/gpu.replicas"
	labelSharingStrategy = "nvidia.com/gpu.sharing-strategy"
	labelMIGStrategy     = "nvidia.com/mig.strategy"

	suffixShared = "-SHARED"
	infixMIG     = "-MIG-"
	sharedSuffix = ".shared" // renameByDefault resources: nvidia.com/gpu.shared, nvidia.com/mig-1g.10gb.shared
)

// IsGPUResource reports whether a resource name is one of the NVIDIA device plugin's
// (nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-<profile>, …): the names GPUOf reads.
func IsGPUResource(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), resourcePrefix)
}

// GPUOf derives how a pod uses GPUs: nil when the pod requests no nvidia.com/* resource. The
// node is used only when it is the one the pod is bound to; the rules are in the package doc.
func GPUOf(pod *corev1.Pod, node *corev1.Node) *events.GPU {
	name, count, ok := gpuResource(pod)
	if !ok {
		return nil
	}
	if node != nil && (pod.Spec.NodeName == "" || node.Name != pod.Spec.NodeName) {
		node = nil
	}
	var labels map[string]string
	if node != nil {
		labels = node.Labels
	}
	gpu := &events.GPU{Resource: name, Count: count, Sharing: events.SharingUnknown}

	if profile, ok := strings.CutPrefix(name, resourceMIGPrefix); ok {
		// Mixed MIG strategy: the resource names the slice, bound or not.
		profile = strings.TrimSuffix(profile, sharedSuffix)
		gpu.Sharing = events.SharingMIG
		gpu.MIGProfile = profile
		if node != nil {
			product := labels["nvidia.com/mig-"+profile+".product"]
			if product == "" {
				product = labels[labelProduct]
			}
			gpu.Model, _, _ = splitProduct(product)
			gpu.Replicas = positiveInt(labels["nvidia.com/mig-"+profile+".replicas"])
		}
		return gpu
	}
	if node == nil {
		return gpu
	}

	model, profile, shared := splitProduct(labels[labelProduct])
	gpu.Model = model
	gpu.Replicas = positiveInt(labels[labelReplicas])
	if name != resourceGPU && name != resourceGPUShared {
		return gpu // some other nvidia.com/ resource: its sharing is not ours to guess
	}
	_, hasReplicas := labels[labelReplicas]
	_, hasMIGStrategy := labels[labelMIGStrategy]
	strategy := labels[labelSharingStrategy]
	switch {
	case profile != "":
		gpu.Sharing = events.SharingMIG
		gpu.MIGProfile = profile
	case strategy == "mps":
		gpu.Sharing = events.SharingMPS
	case strategy == "time-slicing":
		gpu.Sharing = events.SharingTimeSlicing
	case shared || gpu.Replicas > 1 || name == resourceGPUShared:
		gpu.Sharing = events.SharingTimeSlicing
	case labels[labelProduct] == "" && strategy == "" && !hasReplicas && !hasMIGStrategy:
		// No GPU feature discovery labels: nothing says how the device plugin is configured.
		gpu.Sharing = events.SharingUnknown
	default:
		gpu.Sharing = events.SharingExclusive
	}
	return gpu
}

// gpuResource picks the nvidia.com/ resource a pod uses and how many it asks for, from its
// effective requests, falling back to limits (extended resources default their request to it).
func gpuResource(pod *corev1.Pod) (string, int64, bool) {
	req := effective(pod, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Requests })
	lim := effective(pod, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits })
	counts := map[string]int64{}
	for _, list := range []corev1.ResourceList{lim, req} { // requests win
		for rn, q := range list {
			if strings.HasPrefix(string(rn), resourcePrefix) {
				counts[string(rn)] = q.Value()
			}
		}
	}
	var names []string
	for n, c := range counts {
		if c > 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "", 0, false
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := resourceRank(a), resourceRank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return names[0], counts[names[0]], true
}

func resourceRank(name string) int {
	switch {
	case name == resourceGPU:
		return 0
	case name == resourceGPUShared:
		return 1
	case strings.HasPrefix(name, resourceMIGPrefix):
		return 2
	default:
		return 3
	}
}

// splitProduct takes the device plugin's suffixes off a product label:
// "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED" is model "NVIDIA-A100-SXM4-40GB", profile "1g.5gb", shared.
func splitProduct(product string) (model, migProfile string, shared bool) {
	model, shared = strings.CutSuffix(product, suffixShared)
	if i := strings.LastIndex(model, infixMIG); i >= 0 {
		migProfile = model[i+len(infixMIG):]
		model = model[:i]
	}
	return model, migProfile, shared
}

func positiveInt(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0
	}
	return n
}
