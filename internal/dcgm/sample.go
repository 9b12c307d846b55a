// Package dcgm turns NVIDIA dcgm-exporter output into gpu_sample envelopes: it parses one scrape
// (or the same series read back from a Prometheus server), groups the series by GPU, MIG
// instance and pod, and attributes each group to a pod UID through the collector's pod cache.
package dcgm

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/schedlens/schedlens/internal/events"
)

// Sample is one GPU (or MIG instance) in one scrape, with the pod it is attributed to.
type Sample struct {
	Node       string // the Hostname label (dcgm-exporter since #655 writes `hostname`)
	GPU        string // the gpu label: the device index on its node
	UUID       string
	Model      string // modelName
	MIGProfile string // GPU_I_PROFILE, e.g. 3g.20gb; "" for a whole GPU
	MIGID      string // GPU_I_ID; "" for a whole GPU
	// Pod is the pod the series names (namespace and name; UID unknown here, resolved by
	// Envelopes), or nil when the GPU is idle: pod label absent or empty.
	Pod       *events.PodRef
	Container string
	Metrics   map[string]float64 // DCGM field name (the metric name) → value
	// SharedBy is how many samples of this scrape name a pod on the same device (GPU, or MIG
	// instance): dcgm-exporter copies a shared device's series once per consuming pod. 0 for
	// an idle device.
	SharedBy int
	// DRA is what the exporter's DRA labels say (KUBERNETES_ENABLE_DRA), nil without them.
	DRA *events.DRADevice
}

// Label names dcgm-exporter writes, and the older or relabelled spellings of each. The first
// non-empty one wins: `hostname` is the current spelling of `Hostname`; pod_name, pod_namespace
// and container_name are what `--kubernetes-use-old-namespace` writes; exported_* is what a
// Prometheus scrape without honor_labels makes of the exporter's pod labels when the scrape
// target has labels of the same names (the target's then hold the exporter's own pod).
var (
	nodeLabels      = []string{"hostname", "Hostname"}
	podLabels       = []string{"exported_pod", "pod", "pod_name"}
	namespaceLabels = []string{"exported_namespace", "namespace", "pod_namespace"}
	containerLabels = []string{"exported_container", "container", "container_name"}
)

const (
	gpuLabel        = "gpu"
	uuidLabel       = "UUID"
	modelLabel      = "modelName"
	migProfileLabel = "GPU_I_PROFILE"
	migIDLabel      = "GPU_I_ID"

	// dcgm-exporter's DRA labels (internal/pkg/transformation/const.go), on the copy of a
	// device's series made for each pod that consumes it through a ResourceClaim.
	draClaimNameLabel      = "dra_claim_name"
	draClaimNamespaceLabel = "dra_claim_namespace"
	draDriverLabel         = "dra_driver_name"
	draPoolLabel           = "dra_pool_name"
	draDeviceLabel         = "dra_device_name"
	draMIGProfileLabel     = "dra_mig_profile"
	draMIGUUIDLabel        = "dra_mig_device_uuid"
)

// draOf reads a series' DRA labels; nil when it carries none.
func draOf(labels map[string]string) *events.DRADevice {
	d := events.DRADevice{
		ClaimNamespace: labels[draClaimNamespaceLabel], ClaimName: labels[draClaimNameLabel], Driver: labels[draDriverLabel],
		Pool: labels[draPoolLabel], Device: labels[draDeviceLabel], MIGProfile: labels[draMIGProfileLabel], MIGDeviceUUID: labels[draMIGUUIDLabel],
	}
	if d == (events.DRADevice{}) {
		return nil
	}
	return &d
}

// Parse reads one dcgm-exporter scrape in the Prometheus text format and groups its series into
// Samples by (host, gpu, UUID, GPU_I_ID, pod, namespace, container), each with how many pods
// the scrape names on its device (SharedBy) and the exporter's DRA labels (DRA, the first
// series' that has them). Series that carry neither a
// gpu nor a UUID label (NVSwitch, CPU or exporter series) are ignored, as are values that are
// not finite (JSON cannot carry them). Samples are sorted by node, GPU index, UUID, MIG
// instance, namespace, pod and container.
func Parse(r io.Reader) ([]Sample, error) {
	// dcgm-exporter names are all legacy-valid; the UTF-8 scheme only accepts more.
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse dcgm-exporter metrics: %w", err)
	}
	var all []series
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			v, ok := metricValue(mf.GetType(), m)
			if !ok {
				continue
			}
			labels := make(map[string]string, len(m.GetLabel()))
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			all = append(all, series{name: name, labels: labels, value: v})
		}
	}
	return group(all), nil
}

// metricValue returns the value of a gauge, counter or untyped metric (dcgm-exporter writes
// nothing else; without TYPE lines everything is untyped).
func metricValue(t dto.MetricType, m *dto.Metric) (float64, bool) {
	switch t {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue(), m.GetGauge() != nil
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue(), m.GetCounter() != nil
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue(), m.GetUntyped() != nil
	}
	return 0, false
}

// series is one metric name, label set and value, from a scrape or a Prometheus query.
type series struct {
	name   string
	labels map[string]string
	value  float64
	sig    string // canonical label set, for an order-independent sort
}

// groupKey is what makes two series belong to the same Sample.
type groupKey struct {
	node, gpu, uuid, migID, namespace, pod, container string
}

// group turns series into Samples. Series are first sorted by name, label set and value so that
// when one Sample gets the same metric twice (e.g. two Prometheus jobs scraping one exporter, or
// one series written twice in a scrape) the kept value does not depend on input order: the
// series whose label set sorts first wins, and of identical label sets the smallest value.
func group(all []series) []Sample {
	for i := range all {
		all[i].sig = signature(all[i].labels)
	}
	slices.SortFunc(all, func(a, b series) int {
		return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.sig, b.sig), cmp.Compare(a.value, b.value))
	})
	byKey := make(map[groupKey]*Sample)
	for _, s := range all {
		if math.IsNaN(s.value) || math.IsInf(s.value, 0) {
			continue
		}
		k := groupKey{
			node:      first(s.labels, nodeLabels),
			gpu:       s.labels[gpuLabel],
			uuid:      s.labels[uuidLabel],
			migID:     s.labels[migIDLabel],
			namespace: first(s.labels, namespaceLabels),
			pod:       first(s.labels, podLabels),
			container: first(s.labels, containerLabels),
		}
		if k.gpu == "" && k.uuid == "" {
			continue
		}
		if k.pod == "" {
			// No pod: a namespace or container label alone names nothing (the GPU is idle),
			// and would split one GPU into samples that sort and are identified alike.
			k.namespace, k.container = "", ""
		}
		smp := byKey[k]
		if smp == nil {
			smp = &Sample{
				Node:       k.node,
				GPU:        k.gpu,
				UUID:       k.uuid,
				MIGID:      k.migID,
				Container:  k.container,
				Model:      s.labels[modelLabel],
				MIGProfile: s.labels[migProfileLabel],
				Metrics:    make(map[string]float64),
			}
			if k.pod != "" {
				smp.Pod = &events.PodRef{Namespace: k.namespace, Name: k.pod}
			}
			byKey[k] = smp
		}
		if smp.DRA == nil {
			smp.DRA = draOf(s.labels)
		}
		if smp.Model == "" {
			smp.Model = s.labels[modelLabel]
		}
		if smp.MIGProfile == "" {
			smp.MIGProfile = cmp.Or(s.labels[migProfileLabel], s.labels[draMIGProfileLabel])
		}
		if _, dup := smp.Metrics[s.name]; !dup {
			smp.Metrics[s.name] = s.value
		}
	}
	// The pods (not containers: a pod's containers share its attribution) on each device.
	type device struct{ node, gpu, uuid, migID string }
	consumers := map[device]map[[2]string]bool{}
	for k := range byKey {
		if k.pod != "" {
			d := device{k.node, k.gpu, k.uuid, k.migID}
			if consumers[d] == nil {
				consumers[d] = map[[2]string]bool{}
			}
			consumers[d][[2]string{k.namespace, k.pod}] = true
		}
	}
	out := make([]Sample, 0, len(byKey))
	for k, smp := range byKey {
		if k.pod != "" {
			smp.SharedBy = len(consumers[device{k.node, k.gpu, k.uuid, k.migID}])
		}
		out = append(out, *smp)
	}
	slices.SortFunc(out, compareSamples)
	return out
}

func compareSamples(a, b Sample) int {
	ans, apod := podName(a)
	bns, bpod := podName(b)
	return cmp.Or(
		strings.Compare(a.Node, b.Node),
		compareIndex(a.GPU, b.GPU),
		strings.Compare(a.UUID, b.UUID),
		compareIndex(a.MIGID, b.MIGID),
		strings.Compare(ans, bns),
		strings.Compare(apod, bpod),
		strings.Compare(a.Container, b.Container),
	)
}

func podName(s Sample) (namespace, name string) {
	if s.Pod == nil {
		return "", ""
	}
	return s.Pod.Namespace, s.Pod.Name
}

// compareIndex orders device and instance indexes numerically ("2" before "10"; "0" before
// "00", which is the same number spelled differently), and anything that is not a number after
// the numbers, as text.
func compareIndex(a, b string) int {
	ai, aerr := strconv.Atoi(a)
	bi, berr := strconv.Atoi(b)
	switch {
	case aerr == nil && berr == nil:
		return cmp.Or(cmp.Compare(ai, bi), strings.Compare(a, b))
	case aerr == nil:
		return -1
	case berr == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// first returns the value of the first of names that is set and not empty.
func first(labels map[string]string, names []string) string {
	for _, n := range names {
		if v := labels[n]; v != "" {
			return v
		}
	}
	return ""
}

// signature renders a label set canonically: names sorted, NUL-separated.
func signature(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(0)
		b.WriteString(labels[n])
		b.WriteByte(0)
	}
	return b.String()
}
