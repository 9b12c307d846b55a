package preflight_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/experiment"
	"github.com/schedlens/schedlens/lab/preflight"
)

// checkDRA runs every rule on manifests against the lab's cluster with its DRA pools (an H200
// node whose two GPUs the simulated gpu.nvidia.com driver publishes, an A100 split into seven
// MIG devices; DeviceClasses gpu.nvidia.com and mig.nvidia.com).
func checkDRA(t *testing.T, manifests string) *preflight.Report {
	t.Helper()
	in := preflight.Load([]string{preflight.Stdin}, strings.NewReader(manifests), "default")
	if len(in.Errors) > 0 {
		t.Fatalf("input errors: %v\n%s", in.Errors, manifests)
	}
	return preflight.Check(in, preflight.FromSpec(cluster.WithDRA(cluster.Default()), "test"), preflight.Options{})
}

// template renders a ResourceClaimTemplate with one request of class and optional selectors
// and count.
func template(name, class, extra string) string {
	return fmt.Sprintf(`---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: %s, namespace: ai-lab}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: %s
%s`, name, class, indent(extra, 10))
}

// claimed is the inference container taking its GPU from the pod's claim "gpu" of template.
func claimed(template string) string {
	return fmt.Sprintf(`resourceClaims: [{name: gpu, resourceClaimTemplateName: %s}]
tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
`, template) + strings.Replace(container, "    limits: {nvidia.com/gpu: 1}\n", "    claims: [{name: gpu}]\n", 1)
}

const deviceClassMapped = `---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu-extended}
spec:
  selectors: [{cel: {expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]
  extendedResourceName: nvidia.com/gpu
`

func TestDRARules(t *testing.T) {
	sharedClaim := func(name, config string) string {
		s := fmt.Sprintf("---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: %s, namespace: ai-lab}\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly: {deviceClassName: gpu.nvidia.com}\n", name)
		if config != "" {
			s += "    config:\n    - requests: [gpu]\n      opaque:\n        driver: gpu.nvidia.com\n        parameters: {apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig, sharing: {strategy: " + config + "}}\n"
		}
		return s
	}
	experiment := func(change string) string {
		return "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: day20-experiment\n  namespace: ai-lab\n  labels: {schedlens.io/experiment: day20}\ndata:\n" +
			indent("change: '"+change+"'\nfixed: image, model, input\nbaseline: control\nthresholds: '{\"p95_latency_ms\": 800}'\n", 2)
	}
	arm := func(name, spec string) string {
		d := deployment(name, 3, spec, "")
		return "---\n" + strings.Replace(d, "labels: {app: "+name+"}", "labels: {app: "+name+", schedlens.io/experiment: day20, schedlens.io/arm: "+name+"}", 1)
	}
	withClaim := func(claim string) string {
		return strings.Replace(claimed("x"), "resourceClaimTemplateName: x", "resourceClaimName: "+claim, 1)
	}

	for _, tc := range []struct {
		name, rule, manifests string
		want                  []string // "severity object field"
		msg                   []string // in the first finding's message
	}{
		{"class nobody defines", preflight.RuleDRAClassMissing,
			template("h200", "gpu.nvidia.co", ""),
			[]string{"error ResourceClaimTemplate ai-lab/h200 spec.spec.devices.requests[0].exactly.deviceClassName"},
			[]string{"DeviceClass gpu.nvidia.co", "defined: gpu.nvidia.com, mig.nvidia.com"}},
		{"class of the manifests", preflight.RuleDRAClassMissing,
			deviceClassMapped + template("h200", "gpu-extended", ""), nil, nil},
		{"class of the cluster", preflight.RuleDRAClassMissing, template("h200", "gpu.nvidia.com", ""), nil, nil},

		{"selector matches no device", preflight.RuleDRANoDevice,
			template("b200", "gpu.nvidia.com", "selectors:\n- cel: {expression: \"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA B200'\"}\n"),
			[]string{"error ResourceClaimTemplate ai-lab/b200 spec.spec.devices.requests[0].exactly.selectors[0].cel.expression"},
			[]string{"matches none of the 2 devices left in ResourceSlice gpu-h200-dra-1-gpu.nvidia.com", `attribute gpu.nvidia.com/productName is "NVIDIA H200"`}},
		{"selector on an attribute no device has", preflight.RuleDRANoDevice,
			template("arch", "mig.nvidia.com", "selectors:\n- cel: {expression: \"device.attributes['gpu.nvidia.com'].profile == '3g.40gb'\"}\n"),
			[]string{"error ResourceClaimTemplate ai-lab/arch spec.spec.devices.requests[0].exactly.selectors[0].cel.expression"},
			[]string{"matches none of the 7 devices", `attribute gpu.nvidia.com/profile is "1g.10gb"`}},
		{"class whose own selector matches nothing", preflight.RuleDRANoDevice,
			"---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: tpu}\nspec:\n  selectors: [{cel: {expression: \"device.driver == 'tpu.google.com'\"}}]\n" + template("tpu", "tpu", ""),
			[]string{"error ResourceClaimTemplate ai-lab/tpu spec.spec.devices.requests[0].exactly"},
			[]string{`selector "device.driver == 'tpu.google.com'" (DeviceClass tpu spec.selectors[0].cel.expression) matches none of the 9 devices`}},
		{"selector the scheduler cannot compile", preflight.RuleDRANoDevice,
			template("bad", "gpu.nvidia.com", "selectors:\n- cel: {expression: \"device.attributes['gpu.nvidia.com'].productName ==\"}\n"),
			[]string{"error ResourceClaimTemplate ai-lab/bad spec.spec.devices.requests[0].exactly.selectors[0].cel.expression"},
			[]string{"the scheduler cannot evaluate selector"}},
		{"more devices than one node has", preflight.RuleDRANoDevice,
			template("three", "gpu.nvidia.com", "count: 3\n"),
			[]string{"error ResourceClaimTemplate ai-lab/three spec.spec.devices.requests[0].exactly.count"},
			[]string{"asks for 3 devices on one node; its selectors match 2 devices, at most 2 on one node (gpu-h200-dra-1)"}},
		{"selector some device matches", preflight.RuleDRANoDevice,
			template("h200", "gpu.nvidia.com", "count: 2\nselectors:\n- cel: {expression: \"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'\"}\n"), nil, nil},
		{"first available falls back", preflight.RuleDRANoDevice,
			"---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: any, namespace: ai-lab}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        firstAvailable:\n        - {name: big, deviceClassName: gpu.nvidia.com}\n        - {name: mig, deviceClassName: mig.nvidia.com}\n",
			nil, nil},

		{"nvidia.com/gpu served by both paths", preflight.RuleDRAExtendedResource,
			deviceClassMapped + "---\n" + deployment("llm", 1, container, ""),
			[]string{"warning Deployment ai-lab/llm spec.template.spec.containers[0].resources.limits"},
			[]string{"DeviceClass gpu-extended maps through DRA", "the device plugin on gpu-h100-1", "a claim the scheduler creates from DeviceClass gpu-extended on gpu-h200-dra-1"}},
		{"nvidia.com/gpu without a mapping class", preflight.RuleDRAExtendedResource, deployment("llm", 1, container, ""), nil, nil},

		{"arm shares a claim the change does not declare", preflight.RuleDRASharingUndeclared,
			experiment("node affinity") + sharedClaim("one", "TimeSlicing") + template("own", "gpu.nvidia.com", "") + arm("control", claimed("own")) + arm("shared", withClaim("one")),
			[]string{"warning Deployment ai-lab/shared spec.template.spec.resourceClaims"},
			[]string{"arm shared shares its claims' GPUs as [gpu=time-slicing+shared-claim], baseline control as [gpu=exclusive]"}},
		{"change names another strategy", preflight.RuleDRASharingUndeclared,
			experiment("GPU sharing: MPS") + sharedClaim("one", "TimeSlicing") + template("own", "gpu.nvidia.com", "") + arm("control", claimed("own")) + arm("shared", withClaim("one")),
			[]string{"warning Deployment ai-lab/shared spec.template.spec.resourceClaims"}, []string{"names mps"}},
		{"change declares the sharing", preflight.RuleDRASharingUndeclared,
			experiment("GPU sharing: time-slicing through one claim") + sharedClaim("one", "TimeSlicing") + template("own", "gpu.nvidia.com", "") + arm("control", claimed("own")) + arm("shared", withClaim("one")),
			nil, nil},
		{"arms share alike", preflight.RuleDRASharingUndeclared,
			experiment("node affinity") + template("own", "gpu.nvidia.com", "") + arm("control", claimed("own")) + arm("affinity", seedAffinity+claimed("own")),
			nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkDRA(t, tc.manifests)
			got, first := ruleFindings(r, tc.rule, true)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s findings (-want +got):\n%s\nall: %+v", tc.rule, diff, r.Findings)
			}
			for _, m := range tc.msg {
				if !strings.Contains(first, m) {
					t.Errorf("message %q lacks %q", first, m)
				}
			}
		})
	}
}

// A container asking for nvidia.com/gpu on a cluster where only DRA serves it (no node
// advertises it; a DeviceClass maps it) is not told that nothing advertises it, and is told
// which path serves it (info: one path).
func TestExtendedResourceOnlyThroughDRA(t *testing.T) {
	s := cluster.WithDRA(cluster.Default())
	s.Pools = s.Pools[len(s.Pools)-2:] // the DRA pools only
	in := preflight.Load([]string{preflight.Stdin}, strings.NewReader(deviceClassMapped+"---\n"+deployment("llm", 1, container, "")), "default")
	r := preflight.Check(in, preflight.FromSpec(s, "test"), preflight.Options{})
	var got []string
	for _, f := range r.Findings {
		if f.Rule == preflight.RuleGPURequestLimit || f.Rule == preflight.RuleDRAExtendedResource {
			got = append(got, fmt.Sprintf("%s %s: %s", f.Severity, f.Rule, f.Message))
		}
	}
	want := []string{"info dra-extended-resource: container model asks for nvidia.com/gpu, which DeviceClass gpu-extended maps through DRA: served by a claim the scheduler creates from DeviceClass gpu-extended on gpu-h200-dra-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// The cluster summary counts DRA devices per pool and class, names the GPU model the driver
// publishes, and the table says what DRA the cluster has.
func TestClusterSummaryDRA(t *testing.T) {
	r := checkDRA(t, template("h200", "gpu.nvidia.com", ""))
	got := map[string]preflight.PoolSummary{}
	for _, p := range r.Cluster.Pools {
		got[p.Name] = p
	}
	if p := got["h200-dra"]; p.DRADevices["gpu.nvidia.com"] != 2 || p.DRADevices["mig.nvidia.com"] != 0 || p.GPUModel != "NVIDIA-H200" {
		t.Errorf("h200-dra pool: %+v", p)
	}
	if p := got["a100-mig-dra"]; p.DRADevices["mig.nvidia.com"] != 7 || p.DRADevices["gpu.nvidia.com"] != 0 {
		t.Errorf("a100-mig-dra pool: %+v", p)
	}
	if p := got["h100"]; p.DRADevices != nil {
		t.Errorf("h100 pool has DRA devices: %+v", p)
	}
	if r.Cluster.DeviceClasses != 2 || r.Cluster.ResourceSlices != 2 {
		t.Errorf("cluster summary: %+v", r.Cluster)
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if want := "DRA: 2 DeviceClasses, 2 ResourceSlices, 0 allocated claims; devices: h200-dra 2 gpu.nvidia.com, a100-mig-dra 7 mig.nvidia.com"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}

// day20-dra's arms, as its runner creates them, pass the DRA rules on the cluster they run on.
func TestDay20DRAManifestsPass(t *testing.T) {
	b, err := preflight.ExperimentManifests(experiment.Day20DRA(), "ai-lab", 1)
	if err != nil {
		t.Fatal(err)
	}
	r := checkDRA(t, string(b))
	for _, f := range r.Findings {
		if f.Severity == preflight.Error || strings.HasPrefix(f.Rule, "dra-") || f.Rule == preflight.RuleExperimentNoRollback {
			t.Errorf("finding: %s %s %s: %s", f.Severity, f.Rule, f.Object, f.Message)
		}
	}
	kinds := map[string]int{}
	for _, c := range preflight.Load([]string{preflight.Stdin}, strings.NewReader(string(b)), "ai-lab").Claims {
		kinds[c.Kind]++
	}
	if kinds["ResourceClaim"] != 1 || kinds["ResourceClaimTemplate"] != 1 {
		t.Errorf("claims in the manifests: %v, want the sharing-dra arm's claim and the dra-mig arm's template", kinds)
	}
}
