package manifest_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/schedlens/schedlens/lab/cluster"
	"github.com/schedlens/schedlens/lab/manifest"
	"github.com/schedlens/schedlens/lab/preflight"
)

// The day20 example's label registry documents every node label its arms place on, each used
// as the registry says (hard limits in required rules): preflight finds no label-* problem on
// the rendered manifests — and, without the registry's entry for one label, names that label.
func TestDay20LabelRegistry(t *testing.T) {
	var b bytes.Buffer
	for _, dir := range append([]string{"experiment"}, prefixed("arms/", day20Arms)...) {
		objs, err := manifest.Kustomize(filepath.Join(day20Dir, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			y, err := yaml.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString("---\n")
			b.Write(y)
		}
	}
	check := func(manifests string) []string {
		in := preflight.Load([]string{preflight.Stdin}, strings.NewReader(manifests), "ai-lab")
		if len(in.Errors) > 0 {
			t.Fatal(in.Errors)
		}
		if len(in.LabelRegistries) != 1 {
			t.Fatalf("label registries in the example: %d, want 1", len(in.LabelRegistries))
		}
		var out []string
		for _, f := range preflight.Check(in, preflight.FromSpec(cluster.Default(), "test"), preflight.Options{}).Findings {
			if strings.HasPrefix(f.Rule, "label-") {
				out = append(out, f.Rule+" "+f.Object.String()+": "+f.Message)
			}
		}
		return out
	}
	if got := check(b.String()); len(got) > 0 {
		t.Errorf("label findings on the example:\n%s", strings.Join(got, "\n"))
	}
	without := strings.Replace(b.String(), "nvidia.com/mig.strategy:", "removed.example.com/mig:", 1)
	got := check(without)
	if len(got) != 1 || !strings.Contains(got[0], "label-undocumented Deployment ai-lab/day20-inference-mig") || !strings.Contains(got[0], "nvidia.com/mig.strategy") {
		t.Errorf("without the MIG label's entry: %v, want the mig arm's rule on nvidia.com/mig.strategy undocumented", got)
	}
}

func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + n
	}
	return out
}
