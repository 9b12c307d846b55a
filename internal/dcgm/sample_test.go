package dcgm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/dcgm"
	"github.com/schedlens/schedlens/internal/events"
)

// UUIDs and hosts of the recorded fixtures (testdata/recorded).
const (
	l40sUUID = "GPU-5b4e07f6-3a86-4340-039d-25f2a83cdc43"
	l40sHost = "gpu1-wl8sg"
	t4UUID   = "GPU-6d5c0ac5-74d7-3130-46f1-e93ed57f469a"
	t4Host   = "cp-bm14r7"
)

// summary is the readable part of a Sample a test compares.
type summary struct {
	Node, GPU, UUID, Model string
	MIGProfile, MIGID      string
	Pod                    string // namespace/name; "" when the GPU is idle
	Container              string
	Metrics                int                // how many fields
	Values                 map[string]float64 // the fields of `picked` the sample has
	SharedBy               int
	DRA                    *events.DRADevice
}

// picked are the fields whose exact values the tests check.
var picked = []string{
	"DCGM_FI_DEV_GPU_UTIL",
	"DCGM_FI_DEV_POWER_USAGE",
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE",
}

func summarize(samples []dcgm.Sample) []summary {
	out := make([]summary, 0, len(samples))
	for _, s := range samples {
		sum := summary{
			Node: s.Node, GPU: s.GPU, UUID: s.UUID, Model: s.Model,
			MIGProfile: s.MIGProfile, MIGID: s.MIGID, Container: s.Container,
			Metrics: len(s.Metrics), Values: map[string]float64{}, SharedBy: s.SharedBy, DRA: s.DRA,
		}
		if s.Pod != nil {
			sum.Pod = s.Pod.Namespace + "/" + s.Pod.Name
		}
		for _, k := range picked {
			if v, ok := s.Metrics[k]; ok {
				sum.Values[k] = v
			}
		}
		out = append(out, sum)
	}
	return out
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The recorded L40S (idle) and T4 (busy), as every derived file keeps their values.
var (
	l40sValues = map[string]float64{
		"DCGM_FI_DEV_GPU_UTIL":                 0,
		"DCGM_FI_DEV_POWER_USAGE":              35.686,
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 5551899580,
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE":        0,
	}
	t4Values = map[string]float64{
		"DCGM_FI_DEV_GPU_UTIL":                 91,
		"DCGM_FI_DEV_POWER_USAGE":              68.244,
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 15152422938,
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE":        0.156205,
	}
	l40s = summary{Node: l40sHost, GPU: "0", UUID: l40sUUID, Model: "NVIDIA L40S", Metrics: 23, Values: l40sValues}
	t4   = summary{Node: t4Host, GPU: "0", UUID: t4UUID, Model: "Tesla T4", Metrics: 20, Values: t4Values}
)

func with(s summary, f func(*summary)) summary {
	s.Values = clone(s.Values)
	f(&s)
	return s
}

func clone(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// sharedClaim is what the exporter's DRA labels say in l40s-dra-shared-claim.prom.
var sharedClaim = &events.DRADevice{ClaimNamespace: "day20", ClaimName: "shared-l40s", Driver: "gpu.nvidia.com", Pool: "gpu1-wl8sg", Device: "gpu-0"}

func TestParse(t *testing.T) {
	// MIG instances: no DCGM_FI_DEV_*_UTIL fields (23 - 4), the graphics engine of instance 1 busy.
	migValues := clone(l40sValues)
	delete(migValues, "DCGM_FI_DEV_GPU_UTIL")
	mig := summary{Node: l40sHost, GPU: "0", UUID: l40sUUID, Model: "NVIDIA A100-SXM4-40GB", Metrics: 19, Values: migValues}

	tests := []struct {
		file string
		want []summary
	}{
		{"recorded/l40s-idle-node.prom", []summary{l40s}},
		{"recorded/t4-busy-no-help.prom", []summary{t4}},
		// One device, three pods: each gets a third of its time (SharedBy).
		{"derived/l40s-time-sliced.prom", []summary{
			with(l40s, func(s *summary) { s.Pod, s.Container, s.SharedBy = "day20/chat-7d9f8b6c5-4xkqp", "server", 3 }),
			with(l40s, func(s *summary) { s.Pod, s.Container, s.SharedBy = "day20/chat-7d9f8b6c5-9vbn2", "server", 3 }),
			with(l40s, func(s *summary) { s.Pod, s.Container, s.SharedBy = "day20/embed-5c6d7f8b9-tq2lm", "embedder", 3 }),
		}},
		{"derived/l40s-dra-shared-claim.prom", []summary{
			with(l40s, func(s *summary) {
				s.Pod, s.Container, s.SharedBy, s.DRA = "day20/chat-7d9f8b6c5-4xkqp", "server", 3, sharedClaim
			}),
			with(l40s, func(s *summary) {
				s.Pod, s.Container, s.SharedBy, s.DRA = "day20/chat-7d9f8b6c5-9vbn2", "server", 3, sharedClaim
			}),
			with(l40s, func(s *summary) {
				s.Pod, s.Container, s.SharedBy, s.DRA = "day20/embed-5c6d7f8b9-tq2lm", "embedder", 3, sharedClaim
			}),
		}},
		{"derived/a100-mig.prom", []summary{
			with(mig, func(s *summary) {
				s.MIGProfile, s.MIGID = "4g.20gb", "1"
				s.Pod, s.Container, s.SharedBy = "day20/chat-mig-6b7c8d9f4-k8s7d", "server", 1
				s.Values["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] = 0.73125
			}),
			with(mig, func(s *summary) { s.MIGProfile, s.MIGID = "3g.20gb", "2" }),
		}},
		{"derived/l40s-hostname-lowercase.prom", []summary{l40s}},
		{"derived/t4-empty-pod-labels.prom", []summary{t4}},
		{"derived/t4-old-pod-labels.prom", []summary{
			with(t4, func(s *summary) { s.Pod, s.Container, s.SharedBy = "day20/chat-7d9f8b6c5-4xkqp", "server", 1 }),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			samples, err := dcgm.Parse(bytes.NewReader(fixture(t, tt.file)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, summarize(samples)); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseKeepsEveryField(t *testing.T) {
	samples, err := dcgm.Parse(bytes.NewReader(fixture(t, "recorded/t4-busy-no-help.prom")))
	if err != nil {
		t.Fatal(err)
	}
	want := []dcgm.Sample{{
		Node: t4Host, GPU: "0", UUID: t4UUID, Model: "Tesla T4",
		Metrics: map[string]float64{
			"DCGM_FI_DEV_SM_CLOCK":                 660,
			"DCGM_FI_DEV_MEM_CLOCK":                5000,
			"DCGM_FI_DEV_MEMORY_TEMP":              0,
			"DCGM_FI_DEV_GPU_TEMP":                 74,
			"DCGM_FI_DEV_POWER_USAGE":              68.244,
			"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 15152422938,
			"DCGM_FI_DEV_PCIE_REPLAY_COUNTER":      0,
			"DCGM_FI_DEV_GPU_UTIL":                 91,
			"DCGM_FI_DEV_MEM_COPY_UTIL":            73,
			"DCGM_FI_DEV_ENC_UTIL":                 0,
			"DCGM_FI_DEV_DEC_UTIL":                 0,
			"DCGM_FI_DEV_FB_FREE":                  9791,
			"DCGM_FI_DEV_FB_USED":                  5120,
			"DCGM_FI_DEV_FB_RESERVED":              447,
			"DCGM_FI_DEV_VGPU_LICENSE_STATUS":      0,
			"DCGM_FI_PROF_GR_ENGINE_ACTIVE":        0.156205,
			"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":      0.005822,
			"DCGM_FI_PROF_DRAM_ACTIVE":             0.092781,
			"DCGM_FI_PROF_PCIE_TX_BYTES":           4791810,
			"DCGM_FI_PROF_PCIE_RX_BYTES":           6935930,
		},
	}}
	if diff := cmp.Diff(want, samples); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
}

func TestParseIgnoresSeriesWithoutGPUAndNonFiniteValues(t *testing.T) {
	in := string(fixture(t, "recorded/t4-busy-no-help.prom")) +
		// an NVSwitch series names no GPU
		`DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT{nvswitch="0",Hostname="cp-bm14r7"} 41` + "\n" +
		// JSON (the envelope) cannot carry NaN
		`DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-6d5c0ac5-74d7-3130-46f1-e93ed57f469a",pci_bus_id="00000000:37:00.0",device="nvidia0",modelName="Tesla T4",Hostname="cp-bm14r7",DCGM_FI_DRIVER_VERSION="590.48.01"} NaN` + "\n"
	samples, err := dcgm.Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]summary{t4}, summarize(samples)); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
}

func TestParseSortsByNodeAndIndex(t *testing.T) {
	t4 := string(fixture(t, "recorded/t4-busy-no-help.prom"))
	gpu := func(index, uuid string) string {
		return strings.NewReplacer(`gpu="0"`, `gpu="`+index+`"`, t4UUID, uuid).Replace(t4)
	}
	// Series of one metric need not be contiguous: a concatenation of several exporters'
	// output is not (its TYPE lines must still come first).
	in := string(fixture(t, "recorded/l40s-idle-node.prom")) + gpu("10", "GPU-10") + gpu("2", "GPU-2") + t4
	samples, err := dcgm.Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range samples {
		got = append(got, s.Node+" "+s.GPU+" "+s.UUID)
	}
	want := []string{
		t4Host + " 0 " + t4UUID,
		t4Host + " 2 GPU-2",
		t4Host + " 10 GPU-10",
		l40sHost + " 0 " + l40sUUID,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestParseRejectsWhatIsNotTheTextFormat(t *testing.T) {
	t4 := fixture(t, "recorded/t4-busy-no-help.prom")
	for name, in := range map[string]string{
		"html":                   "<html><body>502 Bad Gateway</body></html>\n",
		"prose":                  "this is not prometheus\n",
		"json":                   `{"status":"success"}` + "\n",
		"cut mid-line":           string(t4[:len(t4)-40]),
		"no final newline":       strings.TrimSuffix(string(t4), "\n"),
		"second TYPE for a name": "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n",
	} {
		if samples, err := dcgm.Parse(strings.NewReader(in)); err == nil {
			t.Errorf("%s: parsed into %d samples, want an error", name, len(samples))
		}
	}
	samples, err := dcgm.Parse(strings.NewReader(""))
	if err != nil || len(samples) != 0 {
		t.Errorf("empty scrape: %d samples, %v; want none and no error", len(samples), err)
	}
}
