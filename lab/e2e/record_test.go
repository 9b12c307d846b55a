package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/schedlens/schedlens/internal/api/apitest"
	schedrecord "github.com/schedlens/schedlens/internal/record"
	"github.com/schedlens/schedlens/lab/cluster"
)

// Two experiments on the real scheduler whose control arm ran on another node pool (day20 on
// the H100s, day21 on the A100s): each record reads the same bytes twice, and day21 against
// day20 names the change — the control arm's node pools, GPU models and pool labels — and
// nothing of the arm that ran alike.
func TestAgainstNamesAChangedNodePool(t *testing.T) {
	e := newEnv(t)
	var names []string
	for _, exp := range []struct{ name, pool string }{{"day20", "h100"}, {"day21", "a100"}} {
		for i := 1; i <= 2; i++ {
			for _, arm := range []struct{ name, pool string }{{"control", exp.pool}, {"t4", "t4"}} {
				name := fmt.Sprintf("%s-%s-%d", exp.name, arm.name, i)
				e.create(podSpec{name: name, experiment: exp.name, arm: arm.name, nodeSelector: map[string]string{cluster.LabelPool: arm.pool}})
				names = append(names, name)
			}
		}
	}
	e.waitReady(names...)
	e.settle()

	raw := func(path string) []byte {
		t.Helper()
		return apitest.Get(t, "http://"+e.s.APIAddr+path)
	}
	for _, exp := range []string{"day20", "day21"} {
		if a, b := raw("/v1/experiments/"+exp+"/record"), raw("/v1/experiments/"+exp+"/record"); !bytes.Equal(a, b) {
			t.Errorf("%s: two reads of the record differ", exp)
		}
	}
	var got schedrecord.Against
	if code := e.get("/v1/experiments/day21/against/day20", &got); code != http.StatusOK {
		t.Fatalf("against: HTTP %d", code)
	}
	byPath := map[string]schedrecord.Difference{}
	var paths []string
	for _, d := range got.Differences {
		byPath[d.Path] = d
		paths = append(paths, d.Path)
	}
	for path, want := range map[string][2]string{
		"arms.control.node_pools":                  {"[a100]", "[h100]"},
		"arms.control.gpu_models":                  {"[NVIDIA-A100-SXM4-80GB]", "[NVIDIA-H100-80GB-HBM3]"},
		"arms.control.labels." + cluster.LabelPool: {"[a100]", "[h100]"},
	} {
		d, ok := byPath[path]
		if !ok {
			t.Errorf("no difference at %s; differences: %v", path, paths)
			continue
		}
		if a, b := fmt.Sprint(d.A), fmt.Sprint(d.B); a != want[0] || b != want[1] {
			t.Errorf("%s: %s against %s, want %s against %s", path, a, b, want[0], want[1])
		}
	}
	for _, p := range paths {
		if slices.Contains([]string{"arms.t4.node_pools", "arms.t4.gpu_models", "arms.t4.labels." + cluster.LabelPool}, p) {
			t.Errorf("the t4 arm ran alike, yet %s differs", p)
		}
	}
	if len(got.Arms) != 1 || got.Arms[0].Arm != "t4" {
		t.Errorf("arms held: %+v, want t4's", got.Arms)
	}
}
