package endpoints

import (
	"strings"
	"time"
)

// gpuModel is what the simulation assumes about one GPU product.
type gpuModel struct {
	match        string        // upper-case substring of the product name
	latency      time.Duration // uncontended inference time on the whole GPU
	idleWatts    float64
	maxWatts     float64 // board power limit
	maxSMClock   int     // MHz under load; every model idles at idleSMClock
	memClock     int     // MHz under load
	idleMemClock int     // MHz when idle (HBM parts do not clock down)
}

const idleSMClock = 210

// gpuModels is matched in order: the first whose match is in the product name wins.
var gpuModels = []gpuModel{
	{match: "H100", latency: 20 * time.Millisecond, idleWatts: 70, maxWatts: 700, maxSMClock: 1980, memClock: 2619, idleMemClock: 2619},
	{match: "A100", latency: 30 * time.Millisecond, idleWatts: 55, maxWatts: 400, maxSMClock: 1410, memClock: 1593, idleMemClock: 1593},
	{match: "L40S", latency: 40 * time.Millisecond, idleWatts: 35, maxWatts: 350, maxSMClock: 2520, memClock: 9001, idleMemClock: 405},
	{match: "T4", latency: 80 * time.Millisecond, idleWatts: 10, maxWatts: 70, maxSMClock: 1590, memClock: 5000, idleMemClock: 405},
}

var unknownModel = gpuModel{latency: 50 * time.Millisecond, idleWatts: 50, maxWatts: 300, maxSMClock: 1500, memClock: 1500, idleMemClock: 1500}

func lookupModel(product string) gpuModel {
	up := strings.ToUpper(product)
	for _, m := range gpuModels {
		if strings.Contains(up, m.match) {
			return m
		}
	}
	return unknownModel
}

// productName strips what GPU feature discovery appends to nvidia.com/gpu.product for shared
// and MIG GPUs ("-SHARED", "-MIG-1g.10gb").
func productName(label string) string {
	if i := strings.Index(label, "-MIG-"); i >= 0 {
		label = label[:i]
	}
	return strings.TrimSuffix(label, "-SHARED")
}

// displayName turns a GPU feature discovery product label back into the name NVML reports and
// dcgm-exporter puts in modelName: GFD replaced the spaces by dashes, so they come back as spaces
// ("NVIDIA-H100-80GB-HBM3" → "NVIDIA H100 80GB HBM3"), except around SXM form factors, which NVML
// spells with dashes ("NVIDIA-A100-SXM4-80GB" → "NVIDIA A100-SXM4-80GB").
func displayName(label string) string {
	parts := strings.Split(productName(label), "-")
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			sxm := strings.HasPrefix(strings.ToUpper(p), "SXM") || strings.HasPrefix(strings.ToUpper(parts[i-1]), "SXM")
			if sxm {
				b.WriteByte('-')
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(p)
	}
	return b.String()
}
