// Package sim holds what the lab's simulated kubelet knows about pods and nodes, for the parts
// that play a node's other roles: the inference endpoints every pod serves and the
// dcgm-exporter every GPU node runs. The kubelet implements Source.
package sim

// Pod is one pod as the simulated kubelet runs it.
type Pod struct {
	Namespace, Name, UID string
	Node                 string
	IP                   string // a distinct 127.x.y.z address, set once the pod is Running
	Container            string
	Running              bool // containers started (the endpoint listens from then on)
	Ready                bool // model loaded: the endpoint answers 200 only then
	Loading              bool // between Running and Ready: the model is being loaded onto the GPU

	GPUModel   string // e.g. NVIDIA-H100-80GB-HBM3 (without -SHARED / -MIG-… suffixes); empty without a GPU
	GPUIndex   int    // the physical GPU (0-based) on the node the pod runs on
	GPUUUID    string // that GPU's UUID, GPU-… as nvidia-smi prints it
	Sharing    string // exclusive, time-slicing, mps or mig
	MIGProfile string // e.g. 1g.10gb when Sharing is mig
	MIGIndex   int    // the MIG instance (GPU_I_ID) when Sharing is mig
	Sharers    int    // pods running on the same physical GPU, this one included (≥ 1)
}

// Node is one simulated GPU node.
type Node struct {
	Name     string
	IP       string // a distinct 127.x.y.z address: its dcgm-exporter listens there
	Ready    bool
	GPUModel string
	GPUs     []GPU
}

// GPU is one physical GPU of a node.
type GPU struct {
	Index       int
	UUID        string
	MemoryMiB   int      // framebuffer size
	MIGProfiles []string // MIG instances when the GPU is partitioned, in GPU_I_ID order
}

// Source is a consistent snapshot of the simulated cluster.
type Source interface {
	Pods() []Pod
	Nodes() []Node
}
