// Package endpoints plays the parts of a GPU node that the lab's simulated kubelet does not: the
// inference server in every pod and the dcgm-exporter on every node. Both are real HTTP listeners
// on the 127.x.y.z addresses the kubelet gives pods and nodes, so the collector, the prober and
// external load generators talk to them exactly as they would in a cluster.
//
// # Listeners
//
// A Server follows a sim.Source every Config.Reconcile. A pod gets a listener on pod.IP:Port as
// soon as it is Running with an IP, and loses it (connection refused from then on, open
// connections reset) when it stops running or leaves the Source. A Ready node gets a
// dcgm-exporter listener on node.IP:DCGMPort; a node that is not Ready is treated as down and
// does not answer. Only loopback addresses are ever bound.
//
// # Inference
//
// Config.Path answers any method; other paths are 404. Every response carries X-Pod-Name,
// X-Pod-UID and X-Node. A pod that is not Ready answers 503 with a small JSON error after 1–3 ms;
// a Ready pod sleeps Latency and answers 200 with a small JSON body. Readiness is read from the
// latest reconcile, and from the Source itself when that says not Ready, so a pod answers 200 as
// soon as the kubelet marks it Ready; a pod losing readiness is seen within one Reconcile.
//
// # Latency model
//
// Latency = base × contention × jitter × tail, where
//   - base is the uncontended time on a whole GPU, by a substring of the product name:
//     H100 20 ms, A100 30 ms, L40S 40 ms, T4 80 ms, anything else (or no GPU) 50 ms;
//   - contention is 1 for exclusive GPUs; Sharers for time-slicing (the GPU is time-multiplexed
//     between the sharers' contexts); 1 + 0.35·(Sharers−1) for MPS (kernels run concurrently);
//     by MIG profile size 3.5 (1g), 2 (2g), 1.5 (3g), 1.2 (4g), 1 (7g);
//   - jitter is lognormal, exp(0.1·Z) with Z standard normal: median 1, about 10% spread;
//   - tail is 3 for one request in 100 and 1 otherwise.
//
// It is deterministic given the rng. Each pod draws from its own generator, seeded from
// Config.Seed and the pod's UID. Contention is a multiplier on each request, not a queue: the
// model does not slow a pod down further when its own requests pile up.
//
// # Load
//
// Every request a Ready pod serves counts towards the GPU it runs on (node, GPU index, and the
// MIG instance under MIG). Requests of pods sharing a time-sliced or MPS GPU count towards the
// same GPU. The busy fraction of a GPU is the share of the last second (DCGM's sampling period)
// during which at least one request was in flight on it.
//
// # DCGM model
//
// /metrics has dcgm-exporter's text format, HELP and TYPE lines and label set (gpu, UUID,
// pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION, then container, namespace and
// pod when a pod holds the GPU; GPU_I_PROFILE and GPU_I_ID after modelName for MIG instances).
// A partitioned GPU (sim.GPU.MIGProfiles) gets one series per instance, with GPU_I_ID the
// instance's position in MIGProfiles, and no DCGM_FI_DEV_GPU_UTIL, which dcgm-exporter does not
// report for MIG instances. A pod holds a GPU while it is Running and its model is loading or
// loaded. A GPU held by several pods (time-slicing, MPS) gets one series per pod, each with that
// pod's labels and the same device values: that is how dcgm-exporter attributes a shared device,
// so summing across pods overcounts.
//
// Values, with b the busy fraction:
//   - GPU_UTIL = 100·b (%), MEM_COPY_UTIL = 60·b (%), PROF_GR_ENGINE_ACTIVE = b (ratio),
//     PROF_PIPE_TENSOR_ACTIVE = 0.4·b;
//   - FB_USED = 16 GiB per pod holding the GPU or instance, capped at its memory; FB_FREE is the
//     rest, less 1/75 of a whole GPU's memory that the driver reserves (a MIG instance's memory
//     is its profile's, e.g. 10 GiB for 1g.10gb);
//   - SM_CLOCK and MEM_CLOCK are the model's boost clocks while b > 0, idle clocks otherwise;
//     GPU_TEMP = 30 + 45·b °C and POWER_USAGE = idle + 0.85·b·(limit − idle) W, each with a
//     fixed per-GPU offset seeded from Config.Seed (±2 °C, ±3%);
//   - TOTAL_ENERGY_CONSUMPTION integrates POWER_USAGE between scrapes from a seeded uptime;
//   - XID_ERRORS is 0.
//
// On a MIG GPU the device fields (clocks, temperature, power, energy, MEM_COPY_UTIL, XID) are
// the physical GPU's, with b the instances' busy fractions weighted by their compute slices, and
// repeat on every instance as in dcgm-exporter; FB and PROF fields are the instance's own.
// modelName is the product label with its dashes turned back into spaces, except around SXM
// form factors ("NVIDIA-A100-SXM4-80GB" → "NVIDIA A100-SXM4-80GB"); the driver is 590.48.01.
package endpoints
