package endpoints

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schedlens/schedlens/lab/sim"
)

// driverVersion is the DCGM_FI_DRIVER_VERSION label of every simulated GPU.
const driverVersion = "590.48.01"

const (
	modelFootprintMiB = 16 * 1024 // framebuffer a loading or loaded model holds
	reservedShare     = 75        // the driver reserves 1/reservedShare of a whole GPU's framebuffer
	tensorShare       = 0.4       // PIPE_TENSOR_ACTIVE as a share of GR_ENGINE_ACTIVE
	memCopyShare      = 0.6       // MEM_COPY_UTIL as a share of GPU_UTIL
	powerShare        = 0.85      // share of the idle-to-limit power range drawn at full utilisation
	idleTempC         = 30
	busyTempRiseC     = 45
)

// metric is one dcgm-exporter field: its HELP and TYPE lines are those of real dcgm-exporter.
type metric struct {
	name, help, typ string
	onMIG           bool // whether dcgm-exporter reports it for MIG instances
	value           func(s *series) string
}

// dcgmMetrics is in the order dcgm-exporter's default counters print them.
var dcgmMetrics = []metric{
	{"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", "gauge", true, func(s *series) string { return strconv.Itoa(s.smClock) }},
	{"DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", "gauge", true, func(s *series) string { return strconv.Itoa(s.memClock) }},
	{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "gauge", true, func(s *series) string { return strconv.Itoa(s.temp) }},
	{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge", true, func(s *series) string { return fmt.Sprintf("%f", s.watts) }},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", "counter", true, func(s *series) string { return strconv.FormatInt(s.energyMJ, 10) }},
	{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge", false, func(s *series) string { return strconv.Itoa(s.util) }},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", "gauge", true, func(s *series) string { return strconv.Itoa(s.memCopy) }},
	{"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", "gauge", true, func(s *series) string { return "0" }},
	{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "gauge", true, func(s *series) string { return strconv.Itoa(s.fbFree) }},
	{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge", true, func(s *series) string { return strconv.Itoa(s.fbUsed) }},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", "gauge", true, func(s *series) string { return fmt.Sprintf("%f", s.grActive) }},
	{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", "gauge", true, func(s *series) string { return fmt.Sprintf("%f", s.tensorActive) }},
}

// series is one label set of a node's output with the values of every metric for it.
type series struct {
	labels string // rendered label pairs, without braces
	mig    bool

	// device fields: the physical GPU's, repeated on each of its MIG instances
	smClock, memClock, temp, util, memCopy int
	watts                                  float64
	energyMJ                               int64

	// fields of the GPU, or of the MIG instance
	fbFree, fbUsed         int
	grActive, tensorActive float64
}

// deviceState is what a GPU remembers between scrapes: the energy it has used.
type deviceState struct {
	energyMJ float64
	watts    float64
	at       time.Time
}

// exporter renders the dcgm-exporter output of the simulated nodes.
type exporter struct {
	seed uint64
	load *loadTracker
	now  func() time.Time

	mu      sync.Mutex
	devices map[string]*deviceState // by node and GPU index
}

func newExporter(seed uint64, load *loadTracker, now func() time.Time) *exporter {
	return &exporter{seed: seed, load: load, now: now, devices: make(map[string]*deviceState)}
}

// render writes node's metrics in the Prometheus text format, as dcgm-exporter does.
func (e *exporter) render(node sim.Node, pods []sim.Pod) []byte {
	var all []series
	for _, g := range node.GPUs {
		all = append(all, e.gpuSeries(node, g, pods)...)
	}
	var b bytes.Buffer
	for _, m := range dcgmMetrics {
		header := false
		for i := range all {
			s := &all[i]
			if s.mig && !m.onMIG {
				continue
			}
			if !header {
				fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", m.name, m.help, m.name, m.typ)
				header = true
			}
			fmt.Fprintf(&b, "%s{%s} %s\n", m.name, s.labels, m.value(s))
		}
	}
	return b.Bytes()
}

// gpuSeries is the series of one physical GPU: one per MIG instance when it is partitioned,
// and within that one per pod using it (or one without pod labels when none does).
func (e *exporter) gpuSeries(node sim.Node, g sim.GPU, pods []sim.Pod) []series {
	model := lookupModel(node.GPUModel)
	total := g.MemoryMiB
	noise := e.noise(node.Name, g)

	type part struct {
		mig     int // -1: the whole GPU
		profile string
		busy    float64
		memMiB  int
		pods    []sim.Pod
	}
	var parts []part
	if len(g.MIGProfiles) == 0 {
		parts = append(parts, part{mig: -1, memMiB: total - total/reservedShare})
	}
	for id, prof := range g.MIGProfiles {
		mem := migMemoryMiB(prof)
		if total > 0 {
			mem = min(mem, total)
		}
		parts = append(parts, part{mig: id, profile: prof, memMiB: mem})
	}
	// device utilisation: the whole GPU's, or the instances' weighted by their compute slices
	var deviceBusy float64
	for i := range parts {
		p := &parts[i]
		p.busy = e.load.stats(gpuKey{node: node.Name, gpu: g.Index, mig: p.mig}).busy
		p.pods = podsOn(pods, node.Name, g.Index, p.mig)
		if p.mig < 0 {
			deviceBusy = p.busy
		} else {
			deviceBusy += p.busy * float64(migSlices(p.profile)) / 7
		}
	}
	deviceBusy = min(deviceBusy, 1)

	dev := series{
		smClock:  idleSMClock,
		memClock: model.idleMemClock,
		util:     int(math.Round(100 * deviceBusy)),
		memCopy:  int(math.Round(100 * memCopyShare * deviceBusy)),
		temp:     int(math.Round(idleTempC + busyTempRiseC*deviceBusy + noise.tempC)),
		watts:    round3((model.idleWatts + powerShare*deviceBusy*(model.maxWatts-model.idleWatts)) * noise.powerFactor),
	}
	if deviceBusy > 0 {
		dev.smClock, dev.memClock = model.maxSMClock, model.memClock
	}
	dev.energyMJ = e.energy(node.Name, g, dev.watts, noise.uptime)

	base := []string{
		label("gpu", strconv.Itoa(g.Index)),
		label("UUID", g.UUID),
		label("pci_bus_id", pciBusID(g.Index)),
		label("device", "nvidia"+strconv.Itoa(g.Index)),
		label("modelName", displayName(node.GPUModel)),
	}
	host := []string{label("Hostname", node.Name), label("DCGM_FI_DRIVER_VERSION", driverVersion)}

	var out []series
	for _, p := range parts {
		s := dev
		used := modelFootprintMiB * len(p.pods)
		if p.memMiB > 0 {
			used = min(used, p.memMiB)
		}
		s.fbUsed, s.fbFree = used, max(p.memMiB-used, 0)
		s.grActive = round6(p.busy)
		s.tensorActive = round6(tensorShare * p.busy)
		ls := slices.Clone(base)
		if p.mig >= 0 {
			s.mig = true
			ls = append(ls, label("GPU_I_PROFILE", p.profile), label("GPU_I_ID", strconv.Itoa(p.mig)))
		}
		ls = append(ls, host...)
		if len(p.pods) == 0 {
			s.labels = strings.Join(ls, ",")
			out = append(out, s)
			continue
		}
		// dcgm-exporter gives a shared device to one pod per series: one series per pod,
		// all with the device's values.
		for _, pod := range p.pods {
			s.labels = strings.Join(append(slices.Clone(ls),
				label("container", pod.Container), label("namespace", pod.Namespace), label("pod", pod.Name)), ",")
			out = append(out, s)
		}
	}
	return out
}

// podsOn returns the pods holding a model on GPU gpu of node (or on its MIG instance mig),
// ordered by namespace and name.
func podsOn(pods []sim.Pod, node string, gpu, mig int) []sim.Pod {
	var on []sim.Pod
	for _, p := range pods {
		if !p.Running || !(p.Loading || p.Ready) {
			continue
		}
		k, ok := keyOf(p)
		if ok && k == (gpuKey{node: node, gpu: gpu, mig: mig}) {
			on = append(on, p)
		}
	}
	slices.SortFunc(on, func(a, b sim.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return on
}

// energy advances the GPU's energy counter by the power it drew since the last scrape.
func (e *exporter) energy(node string, g sim.GPU, watts float64, uptime time.Duration) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := node + "/" + strconv.Itoa(g.Index)
	now := e.now()
	d := e.devices[key]
	if d == nil {
		// the GPU booted uptime ago and idled since
		d = &deviceState{energyMJ: watts * 1000 * uptime.Seconds(), watts: watts, at: now}
		e.devices[key] = d
	}
	d.energyMJ += d.watts * 1000 * now.Sub(d.at).Seconds()
	d.watts, d.at = watts, now
	return int64(d.energyMJ)
}

// gpuNoise is a fixed, seeded per-GPU offset so that identical GPUs do not read identically.
type gpuNoise struct {
	tempC       float64       // -2..+2 °C
	powerFactor float64       // 0.97..1.03
	uptime      time.Duration // time since the simulated boot at the first scrape, 1..72 h
}

func (e *exporter) noise(node string, g sim.GPU) gpuNoise {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d/%s", e.seed, node, g.Index, g.UUID)
	v := h.Sum64()
	return gpuNoise{
		tempC:       float64(v%5) - 2,
		powerFactor: 0.97 + 0.06*float64((v>>8)%1000)/999,
		uptime:      time.Duration(1+(v>>20)%72) * time.Hour,
	}
}

// pciBusID gives GPU index its PCI address, in the bus order of an 8-GPU HGX board.
func pciBusID(index int) string {
	buses := []int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}
	bus := 0x07 + index
	if index >= 0 && index < len(buses) {
		bus = buses[index]
	}
	return fmt.Sprintf("00000000:%02X:00.0", bus&0xff)
}

// labelEscaper applies the text format's escaping to label values.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// label renders one label pair.
func label(name, value string) string {
	return name + `="` + labelEscaper.Replace(value) + `"`
}

func round3(v float64) float64 { return math.Round(v*1e3) / 1e3 }
func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// serveMetrics answers dcgm-exporter's /metrics for one node, from a fresh snapshot.
func (s *Server) serveMetrics(name string, fallback sim.Node) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		node := fallback
		for _, n := range s.src.Nodes() {
			if n.Name == name {
				node = n
				break
			}
		}
		body := s.exporter.render(node, s.src.Pods())
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	}
}
