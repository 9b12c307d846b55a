package preflight_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/preflight"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from what is generated (go test -update rewrites it)", path)
	}
}

func badReport(t *testing.T) *preflight.Report {
	in := preflight.Load([]string{"testdata/bad/manifests.yaml"}, nil, "default")
	m := strings.Replace(deployment("quiet", 1, "priorityClassName: nope\n"+container, ""), "metadata: {name: quiet, namespace: ai-lab}",
		"metadata: {name: quiet, namespace: ai-lab, annotations: {schedlens.io/preflight-ignore: priority-undefined}}", 1)
	in.Parse("quiet.yaml", []byte(m), "default")
	r := preflight.Check(in, preflight.FromSpec(cluster.Default(), "test"), preflight.Options{})
	if len(r.Suppressed) == 0 || r.Summary.Errors == 0 || len(r.InputErrors) == 0 {
		t.Fatalf("want errors, suppressed findings and input errors: %+v", r.Summary)
	}
	return r
}

// The SARIF log has the 2.1.0 shape code-scanning UIs read: every result names a rule of the
// driver by id and index, has a level, a message, a file and a line; suppressed findings carry
// an inSource suppression; input errors are notifications of an unsuccessful invocation.
func TestSARIF(t *testing.T) {
	r := badReport(t)
	var b bytes.Buffer
	if err := r.WriteSARIF(&b, "test"); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name            string `json:"name"`
					FullName        string `json:"fullName"`
					SemanticVersion string `json:"semanticVersion"`
					Rules           []struct {
						ID                   string            `json:"id"`
						Name                 string            `json:"name"`
						ShortDescription     map[string]string `json:"shortDescription"`
						FullDescription      map[string]string `json:"fullDescription"`
						Help                 map[string]string `json:"help"`
						DefaultConfiguration map[string]string `json:"defaultConfiguration"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string            `json:"ruleId"`
				RuleIndex int               `json:"ruleIndex"`
				Level     string            `json:"level"`
				Message   map[string]string `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
					LogicalLocations []struct {
						Name               string `json:"name"`
						FullyQualifiedName string `json:"fullyQualifiedName"`
						Kind               string `json:"kind"`
					} `json:"logicalLocations"`
				} `json:"locations"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
				Suppressions        []struct {
					Kind          string `json:"kind"`
					Justification string `json:"justification"`
				} `json:"suppressions"`
			} `json:"results"`
			Invocations []struct {
				ExecutionSuccessful        *bool `json:"executionSuccessful"`
				ToolExecutionNotifications []struct {
					Level     string            `json:"level"`
					Message   map[string]string `json:"message"`
					Locations []any             `json:"locations"`
				} `json:"toolExecutionNotifications"`
			} `json:"invocations"`
		} `json:"runs"`
	}
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || !strings.Contains(log.Schema, "sarif-2.1.0") || len(log.Runs) != 1 {
		t.Fatalf("version %q schema %q runs %d", log.Version, log.Schema, len(log.Runs))
	}
	run := log.Runs[0]
	if run.Tool.Driver.Name == "" || len(run.Tool.Driver.Rules) != len(preflight.Rules) {
		t.Errorf("driver %q with %d rules", run.Tool.Driver.Name, len(run.Tool.Driver.Rules))
	}
	for _, rule := range run.Tool.Driver.Rules {
		if rule.ShortDescription["text"] == "" || !slices.Contains([]string{"error", "warning", "note"}, rule.DefaultConfiguration["level"]) {
			t.Errorf("rule %s: %+v", rule.ID, rule)
		}
	}
	if len(run.Results) != len(r.Findings)+len(r.Suppressed) {
		t.Errorf("%d results for %d findings + %d suppressed", len(run.Results), len(r.Findings), len(r.Suppressed))
	}
	suppressed := 0
	for _, res := range run.Results {
		if res.RuleIndex < 0 || res.RuleIndex >= len(run.Tool.Driver.Rules) || run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("result %s: rule index %d", res.RuleID, res.RuleIndex)
		}
		loc := res.Locations[0]
		if !slices.Contains([]string{"error", "warning", "note"}, res.Level) || res.Message["text"] == "" ||
			loc.PhysicalLocation.ArtifactLocation.URI == "" || loc.PhysicalLocation.Region.StartLine < 1 || loc.LogicalLocations[0].FullyQualifiedName == "" {
			t.Errorf("result %+v", res)
		}
		if len(res.Suppressions) > 0 {
			suppressed++
			if res.Suppressions[0].Kind != "inSource" {
				t.Errorf("suppression kind %q", res.Suppressions[0].Kind)
			}
		}
	}
	if suppressed != len(r.Suppressed) {
		t.Errorf("%d suppressed results, want %d", suppressed, len(r.Suppressed))
	}
	inv := run.Invocations[0]
	if inv.ExecutionSuccessful == nil || *inv.ExecutionSuccessful || len(inv.ToolExecutionNotifications) != len(r.InputErrors) {
		t.Errorf("invocation %+v for %d input errors", inv, len(r.InputErrors))
	}
}

// The JSON report keeps its documented top-level fields and counts.
func TestJSON(t *testing.T) {
	r := badReport(t)
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"cluster", "findings", "ignored_kinds", "input_errors", "objects", "schema", "simulation", "summary", "suppressed"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	var back preflight.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != preflight.Schema || back.Summary != r.Summary || back.Findings[0].Why == "" || back.Findings[0].Fix == "" {
		t.Errorf("round trip: %+v", back.Summary)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"input errors:", "testdata/bad/manifests.yaml:18: malformed YAML: did not find expected", "gpu-request-limit", "why, and the usual fix:", "1 suppressed"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

// Running pods of a live snapshot: a higher-priority workload that needs their GPUs would
// preempt the experiment's control arm.
func TestPriorityPreemptsRunningControlArm(t *testing.T) {
	c := preflight.FromSpec(cluster.Default(), "snapshot")
	for i, node := range []string{"gpu-h100-1", "gpu-h100-1", "gpu-h100-2", "gpu-h100-2"} {
		c.Pods = append(c.Pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "day20-control-" + string(rune('a'+i)), Namespace: "ai-lab",
				Labels: map[string]string{"schedlens.io/experiment": "day20", "schedlens.io/arm": "control"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "model", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
		})
	}
	for _, tc := range []struct {
		pool, class string
		want        bool
	}{{"h100", "lab-high", true}, {"a100", "lab-high", false}, {"h100", "", false}} {
		spec := "nodeSelector: {lab.schedlens.io/pool: " + tc.pool + "}\n" + container
		if tc.class != "" {
			spec = "priorityClassName: " + tc.class + "\n" + spec
		}
		in := preflight.Load([]string{preflight.Stdin}, strings.NewReader(deployment("urgent", 1, spec, "")), "default")
		r := preflight.Check(in, c, preflight.Options{})
		got := false
		for _, f := range r.Findings {
			if f.Rule == preflight.RulePriorityPreempts {
				got = true
				if !strings.Contains(f.Message, "ai-lab/day20-control-a on gpu-h100-1 (experiment day20's control arm control)") {
					t.Errorf("message %q", f.Message)
				}
			}
		}
		if got != tc.want {
			t.Errorf("pool %s class %q: finding %t, want %t", tc.pool, tc.class, got, tc.want)
		}
	}
}
