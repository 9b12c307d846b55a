// Package kube converts Kubernetes API objects (Pods, events.k8s.io/v1 Events, Nodes, experiment
// ConfigMaps, full pod lists) into schedlens envelopes. Every function is pure: the collector's
// informers hand it objects and a Meta, it returns envelopes; it never talks to an API server.
//
// # Envelope ids
//
// Ids are deterministic so that restarts, relists and two collectors produce the same ones:
//
//	pod_status/<pod uid>/<resourceVersion>[/deleted]
//	k8s_event/<event uid>/<series count>
//	node_status/<node name>/<resourceVersion>[/deleted]
//	experiment/<namespace>/<name>/<resourceVersion>
//	inventory/<cluster>/<first 32 hex of sha256(scope key, sorted uids)>/<listedAt RFC 3339 nano>
//
// An id longer than events.MaxIDLen (a 253-character node name can do that) is replaced by
// "<kind>/sha256/<hex of the full id>", which is just as deterministic.
//
// Every envelope is built by encoding its payload and decoding the result with events.Decode, so
// what this package returns is exactly what a consumer will decode (times to the microsecond in
// UTC, Payload the typed pointer, Raw the encoded message) and an invalid object (a pod without a
// valid UID, say) is reported as an error matching events.ErrInvalid instead of being published
// as a poison message.
//
// # GPU sharing (GPUOf)
//
// The pod spec alone cannot tell an exclusive GPU from a time-sliced or MPS replica, so the mode
// comes from the resource the pod requests plus, once it is bound, the labels that NVIDIA GPU
// feature discovery puts on its node:
//
//   - A pod uses GPUs when its effective request (or, failing that, limit) names a resource under
//     nvidia.com/ with a positive quantity. When there are several, nvidia.com/gpu wins, then
//     nvidia.com/gpu.shared, then nvidia.com/mig-* (sorted), then anything else (sorted).
//   - nvidia.com/mig-<profile> (and nvidia.com/mig-<profile>.shared): the mixed MIG strategy.
//     Sharing is "mig" and the profile comes from the resource name, bound or not. The model is
//     the node's nvidia.com/mig-<profile>.product label (falling back to nvidia.com/gpu.product)
//     without its suffixes, and Replicas its nvidia.com/mig-<profile>.replicas label.
//   - nvidia.com/gpu and nvidia.com/gpu.shared on a known node, in this order:
//     a product label nvidia.com/gpu.product ending in "-MIG-<profile>" (optionally followed by
//     "-SHARED") is the single MIG strategy: sharing "mig" with that profile;
//     nvidia.com/gpu.sharing-strategy=mps is "mps"; =time-slicing is "time-slicing";
//     otherwise a "-SHARED" product suffix, nvidia.com/gpu.replicas > 1 or the resource
//     nvidia.com/gpu.shared mean "time-slicing" (they win over a contradictory strategy "none",
//     because the device plugin really advertises replicas);
//     a node with none of the feature-discovery labels (product, sharing-strategy, replicas,
//     mig.strategy) is "unknown": nothing says how its device plugin is configured;
//     anything else is "exclusive".
//   - Model is the product label without the "-SHARED" and "-MIG-<profile>" suffixes, and Replicas
//     the nvidia.com/gpu.replicas label when it is a positive integer.
//   - Without a node (the pod is not bound, the node is not in the cache, or the node passed is not
//     the pod's spec.nodeName) sharing is "unknown", except for mig-* resources ("mig").
//
// # Placement (PlacementOf)
//
// Node selector as is; one "Required" string per required node selector term (terms are ORed),
// its matchExpressions then matchFields rendered "key Op (v1,v2)", "key Exists", "key Gt 5" and
// joined with " && "; one "Preferred" string per preferred term, "<weight>: <term>"; terms and
// values keep their spec order. Pod affinity and anti-affinity are counted (required + preferred
// terms). The priority class, the priority (when a class is named or it is not 0) and the
// preemption policy when it is not the default PreemptLowerPriority. Tolerations are rendered
// "key Op value:effect" ("*" for an empty key, " for Ns" when tolerationSeconds is set), sorted,
// leaving out the two that the DefaultTolerationSeconds admission plugin adds to every pod.
//
// # FailedScheduling notes (ParseFailedScheduling)
//
// The scheduler writes "0/N nodes are available: <reasons>. <postfilter>", where reasons are
// "<count> <reason>" sorted as strings and joined with ", ", or a PreFilter message without
// counts, which applies to every node. The postfilter part is the preemption clause "preemption:
// …" ("pod group preemption: …" for pod groups): "found a potential placement for pod on node X,
// preempting N victims" (victims_found), a nested "0/N nodes are available: …" whose every reason
// is "Preemption is not helpful for scheduling" (not_helpful), or anything else (no_placement:
// other nested reasons, "not eligible due to preemptionPolicy=Never.", errors). The attempt's Note
// is the whole clause, "preemption: " included. Reasons keep the note's order; ", " inside
// braces, brackets or parentheses never splits a reason, and a fragment without a count is the
// tail of the reason before it (old schedulers wrote "node(s) had taint {k: v}, that the pod
// didn't tolerate"). "no nodes available to schedule pods" is 0/0 with that one reason, 0 nodes.
// Any other note (bind errors, plugin errors) is not a scheduling failure of this shape: nil.
// Volcano's "0/N nodes are unavailable: …" reads the same, also inside its gang message
// ("pod group is not ready, …. Origin reason is <task>: …"); KAI-Scheduler's Unschedulable
// notes have their own reader (ParseKAIUnschedulable).
//
// # GPUs through Dynamic Resource Allocation (PodClaims, GPUOfClaims)
//
// A pod's claims are resolved through the collector's caches (the DRA interface) to the devices
// allocated for them and what their ResourceSlice says (NVIDIA's driver's attributes type,
// productName, uuid, profile, parentUUID); when any is a GPU or MIG device, the pod's GPU comes
// from them: sharing MIG, else the claim config's strategy, else shared-claim (reserved for
// several pods), else consumable-share (shareID), else exclusive. docs/dra.md has the whole
// reading.
package kube
