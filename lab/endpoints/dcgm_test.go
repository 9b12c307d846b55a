package endpoints_test

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/schedlens/schedlens/lab/sim"
)

// parse reads the Prometheus text format as Prometheus does.
func parse(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return fams
}

// scrape fetches and parses a dcgm-exporter's /metrics.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("scrape: status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return parse(t, resp.Body)
}

// value of the first series of a family (0 when absent).
func value(fams map[string]*dto.MetricFamily, name string) float64 {
	f := fams[name]
	if f == nil || len(f.Metric) == 0 {
		return 0
	}
	m := f.Metric[0]
	if m.Gauge != nil {
		return m.Gauge.GetValue()
	}
	return m.Counter.GetValue()
}

func gpuUtil(t *testing.T, addr string) float64 {
	return value(scrape(t, addr), "DCGM_FI_DEV_GPU_UTIL")
}

// labelNames in the order the exporter printed them.
func labelNames(m *dto.Metric) []string {
	var names []string
	for _, l := range m.Label {
		names = append(names, l.GetName())
	}
	return names
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// describe summarises each series of a family as one readable line.
func describe(f *dto.MetricFamily, format string, labels ...string) []string {
	var out []string
	for _, m := range f.Metric {
		args := []any{}
		for _, l := range labels {
			args = append(args, labelValue(m, l))
		}
		v := m.GetGauge().GetValue()
		if m.Counter != nil {
			v = m.Counter.GetValue()
		}
		out = append(out, fmt.Sprintf(format, append(args, v)...))
	}
	return out
}

var metricNames = []string{
	"DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL",
	"DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK",
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
	"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
}

// startNode serves one node (and its pods) and returns its dcgm-exporter address.
func startNode(t *testing.T, node sim.Node, pods ...sim.Pod) (string, *fakeSource) {
	t.Helper()
	src := &fakeSource{}
	cfg := testConfig(t)
	node.IP, node.Ready = loopbackIP(), true
	src.setNode(node)
	for _, p := range pods {
		p.Node = node.Name
		src.setPod(p)
	}
	start(t, src, cfg)
	a := addr(node.IP, cfg.DCGMPort)
	eventually(t, "the dcgm-exporter listener", func() bool { return !refused(a) })
	return a, src
}

func TestDCGMFormatMatchesFixture(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/l40s-idle-node.prom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fixture := parse(t, f)

	nodeAddr, _ := startNode(t,
		sim.Node{Name: "node-h100", GPUModel: h100, GPUs: []sim.GPU{
			{Index: 0, UUID: "GPU-aaaa", MemoryMiB: 81559},
			{Index: 1, UUID: "GPU-bbbb", MemoryMiB: 81559},
		}},
		sim.Pod{Namespace: "team", Name: "infer-0", UID: "u0", Container: "server", Running: true, Ready: true,
			GPUModel: h100, GPUIndex: 0, Sharing: "exclusive", Sharers: 1},
	)
	got := scrape(t, nodeAddr)

	var names []string
	for name, fam := range got {
		names = append(names, name)
		if fam.Help == nil || fam.Type == nil {
			t.Errorf("%s: no HELP or TYPE line", name)
		}
		if want, ok := fixture[name]; ok {
			if fam.GetHelp() != want.GetHelp() || fam.GetType() != want.GetType() {
				t.Errorf("%s: HELP %q TYPE %v, fixture has HELP %q TYPE %v", name, fam.GetHelp(), fam.GetType(), want.GetHelp(), want.GetType())
			}
		}
		if len(fam.Metric) != 2 {
			t.Errorf("%s: %d series, want one per GPU", name, len(fam.Metric))
		}
	}
	slices.Sort(names)
	if diff := cmp.Diff(metricNames, names); diff != "" {
		t.Errorf("metric names (-want +got):\n%s", diff)
	}

	// an idle GPU carries exactly the fixture's labels, in its order; a GPU with a pod adds the pod's
	fixtureLabels := labelNames(fixture["DCGM_FI_DEV_SM_CLOCK"].Metric[0])
	for _, name := range metricNames {
		fam := got[name]
		byGPU := map[string]*dto.Metric{}
		for _, m := range fam.Metric {
			byGPU[labelValue(m, "gpu")] = m
		}
		if diff := cmp.Diff(fixtureLabels, labelNames(byGPU["1"])); diff != "" {
			t.Errorf("%s idle GPU label names (-fixture +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(append(slices.Clone(fixtureLabels), "container", "namespace", "pod"), labelNames(byGPU["0"])); diff != "" {
			t.Errorf("%s GPU with a pod label names (-want +got):\n%s", name, diff)
		}
	}

	want := []string{
		`gpu=0 UUID=GPU-aaaa pci=00000000:18:00.0 device=nvidia0 model="NVIDIA H100 80GB HBM3" host=node-h100 driver=590.48.01 pod=team/infer-0/server fb_used=16384`,
		`gpu=1 UUID=GPU-bbbb pci=00000000:2A:00.0 device=nvidia1 model="NVIDIA H100 80GB HBM3" host=node-h100 driver=590.48.01 pod=// fb_used=0`,
	}
	if diff := cmp.Diff(want, describe(got["DCGM_FI_DEV_FB_USED"],
		"gpu=%s UUID=%s pci=%s device=%s model=%q host=%s driver=%s pod=%s/%s/%s fb_used=%v",
		"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION", "namespace", "pod", "container")); diff != "" {
		t.Errorf("FB_USED series (-want +got):\n%s", diff)
	}
	for _, name := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_XID_ERRORS"} {
		if diff := cmp.Diff([]string{"0", "0"}, describe(got[name], "%v")); diff != "" {
			t.Errorf("%s of idle GPUs (-want +got):\n%s", name, diff)
		}
	}
}

func TestDCGMFixturesParse(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"l40s-idle-node.prom", "t4-busy-no-help.prom"} {
		f, err := os.Open("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(parse(t, f)); n < 15 {
			t.Errorf("%s: %d families", name, n)
		}
		f.Close()
	}
}

func TestDCGMMIGInstances(t *testing.T) {
	t.Parallel()
	mig := func(name string, id int, profile string, ready bool) sim.Pod {
		return sim.Pod{Namespace: "ns", Name: name, UID: name, Container: "c", Running: true, Ready: ready, Loading: !ready,
			GPUModel: a100, GPUIndex: 0, Sharing: "mig", MIGProfile: profile, MIGIndex: id, Sharers: 2}
	}
	nodeAddr, _ := startNode(t,
		sim.Node{Name: "node-mig", GPUModel: a100 + "-MIG-1g.10gb", GPUs: []sim.GPU{
			{Index: 0, UUID: "GPU-mig", MemoryMiB: 81920, MIGProfiles: []string{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}},
		}},
		mig("loading", 0, "3g.40gb", false),
		mig("small", 2, "1g.10gb", true),
	)
	got := scrape(t, nodeAddr)
	if _, ok := got["DCGM_FI_DEV_GPU_UTIL"]; ok {
		t.Error("DCGM_FI_DEV_GPU_UTIL reported for MIG instances")
	}
	for _, name := range metricNames {
		if name != "DCGM_FI_DEV_GPU_UTIL" && len(got[name].GetMetric()) != 4 {
			t.Errorf("%s: %d series, want one per instance", name, len(got[name].GetMetric()))
		}
	}
	wantNames := []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE", "GPU_I_ID", "Hostname", "DCGM_FI_DRIVER_VERSION"}
	if diff := cmp.Diff(wantNames, labelNames(got["DCGM_FI_DEV_SM_CLOCK"].Metric[1])); diff != "" {
		t.Errorf("idle instance label names (-want +got):\n%s", diff)
	}
	want := []string{
		`id=0 profile=3g.40gb model="NVIDIA A100-SXM4-80GB" pod=ns/loading fb_used=16384`,
		`id=1 profile=2g.20gb model="NVIDIA A100-SXM4-80GB" pod=/ fb_used=0`,
		`id=2 profile=1g.10gb model="NVIDIA A100-SXM4-80GB" pod=ns/small fb_used=10240`,
		`id=3 profile=1g.10gb model="NVIDIA A100-SXM4-80GB" pod=/ fb_used=0`,
	}
	if diff := cmp.Diff(want, describe(got["DCGM_FI_DEV_FB_USED"], "id=%s profile=%s model=%q pod=%s/%s fb_used=%v",
		"GPU_I_ID", "GPU_I_PROFILE", "modelName", "namespace", "pod")); diff != "" {
		t.Errorf("FB_USED per instance (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"24576", "20480", "0", "10240"}, describe(got["DCGM_FI_DEV_FB_FREE"], "%v")); diff != "" {
		t.Errorf("FB_FREE per instance (-want +got):\n%s", diff)
	}
}

func TestDCGMSharedGPUOneSeriesPerPod(t *testing.T) {
	t.Parallel()
	shared := func(name string) sim.Pod {
		return sim.Pod{Namespace: "ns", Name: name, UID: name, Container: "c", Running: true, Ready: true,
			GPUModel: l40s, GPUIndex: 0, Sharing: "time-slicing", Sharers: 3}
	}
	nodeAddr, _ := startNode(t,
		sim.Node{Name: "node-l40s", GPUModel: l40s + "-SHARED", GPUs: []sim.GPU{
			{Index: 0, UUID: "GPU-l0", MemoryMiB: 46068},
			{Index: 1, UUID: "GPU-l1", MemoryMiB: 46068},
		}},
		shared("c"), shared("a"), shared("b"),
	)
	got := scrape(t, nodeAddr)
	want := []string{
		`gpu=0 model="NVIDIA L40S" pod=ns/a fb_used=45454`,
		`gpu=0 model="NVIDIA L40S" pod=ns/b fb_used=45454`,
		`gpu=0 model="NVIDIA L40S" pod=ns/c fb_used=45454`,
		`gpu=1 model="NVIDIA L40S" pod=/ fb_used=0`,
	}
	if diff := cmp.Diff(want, describe(got["DCGM_FI_DEV_FB_USED"], "gpu=%s model=%q pod=%s/%s fb_used=%v",
		"gpu", "modelName", "namespace", "pod")); diff != "" {
		t.Errorf("FB_USED series (-want +got):\n%s", diff)
	}
	for _, name := range metricNames {
		if n := len(got[name].GetMetric()); n != 4 {
			t.Errorf("%s: %d series, want 4 (3 pods on GPU 0, GPU 1 idle)", name, n)
		}
	}
}

func TestDCGMFollowsLoad(t *testing.T) {
	t.Parallel()
	// four time-sliced sharers on a T4: a request takes about 320 ms
	pod := sim.Pod{Namespace: "ns", Name: "busy", UID: "busy", Container: "c", Running: true, Ready: true,
		GPUModel: t4, GPUIndex: 0, Sharing: "time-slicing", Sharers: 4}
	src := &fakeSource{}
	cfg := testConfig(t)
	node := sim.Node{Name: "node-t4", IP: loopbackIP(), Ready: true, GPUModel: t4,
		GPUs: []sim.GPU{{Index: 0, UUID: "GPU-t4", MemoryMiB: 15360}}}
	pod.Node, pod.IP = node.Name, loopbackIP()
	src.setNode(node)
	src.setPod(pod)
	start(t, src, cfg)
	nodeAddr, podAddr := addr(node.IP, cfg.DCGMPort), addr(pod.IP, cfg.Port)
	eventually(t, "both listeners", func() bool { return !refused(nodeAddr) && !refused(podAddr) })

	idle := scrape(t, nodeAddr)
	for name, want := range map[string]float64{"DCGM_FI_DEV_GPU_UTIL": 0, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0, "DCGM_FI_DEV_SM_CLOCK": 210} {
		if got := value(idle, name); got != want {
			t.Errorf("idle %s = %v, want %v", name, got, want)
		}
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if got := post(t, "http://"+podAddr+"/v2/models/model/infer"); got.status != 200 {
				t.Errorf("status %d", got.status)
			}
		})
	}
	var busy map[string]*dto.MetricFamily
	eventually(t, "GPU_UTIL to reach 10% with requests in flight", func() bool {
		busy = scrape(t, nodeAddr)
		return value(busy, "DCGM_FI_DEV_GPU_UTIL") >= 10
	})
	for _, name := range []string{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_SM_CLOCK",
		"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"} {
		if value(busy, name) <= value(idle, name) {
			t.Errorf("%s busy %v, idle %v: want higher under load", name, value(busy, name), value(idle, name))
		}
	}
	if r := value(busy, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"); r > 1 {
		t.Errorf("GR_ENGINE_ACTIVE %v is not a ratio", r)
	}
	wg.Wait()
	eventually(t, "GPU_UTIL to fall back to 0 a second after the requests", func() bool {
		return gpuUtil(t, nodeAddr) == 0
	})
}

func TestDCGMFollowsNodeReadiness(t *testing.T) {
	t.Parallel()
	node := sim.Node{Name: "node-x", GPUModel: h100, GPUs: []sim.GPU{{Index: 0, UUID: "GPU-x", MemoryMiB: 81559}}}
	nodeAddr, src := startNode(t, node)
	node = src.Nodes()[0]
	node.Ready = false
	src.setNode(node)
	eventually(t, "a NotReady node's exporter to stop", func() bool { return refused(nodeAddr) })
	node.Ready = true
	src.setNode(node)
	eventually(t, "a Ready node's exporter to come back", func() bool { return !refused(nodeAddr) })
	resp, err := client.Get("http://" + nodeAddr + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("/other: status %d, want 404", resp.StatusCode)
	}
}
