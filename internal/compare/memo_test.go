package compare_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/schedlens/schedlens/internal/compare"
)

// TestMemoGivesWhatComputingGives compares with the bootstrap memo and without it, bit for bit
// (as JSON): cold, warm (every run from the memo), after one pod of the last run changed (one
// run recomputed, the rest from the memo) and after an early run lost a pod (the generator's
// state differs for every later run, so they are recomputed).
func TestMemoGivesWhatComputingGives(t *testing.T) {
	arms := experiment(rand.New(rand.NewPCG(7, 7)), design{repeats: 6, pods: 5, requests: 40}, labWorkload, labNoise, noEffect)
	fresh := func() string {
		defer compare.DisableMemo()()
		return compareJSON(t, arms)
	}
	check := func(stage string) {
		t.Helper()
		want := fresh()
		if got := compareJSON(t, arms); got != want {
			t.Fatalf("%s: with the memo\n%s\nwithout\n%s", stage, got, want)
		}
	}
	check("cold")
	check("warm")
	last := arms[1].Runs["6"]
	last.Pods = append([]compare.PodData(nil), last.Pods...)
	p := last.Pods[2]
	p.Summary.Counts.Restarts++
	last.Pods[2] = p
	arms[1].Runs["6"] = last
	check("last run changed")
	first := arms[0].Runs["1"]
	first.Pods = first.Pods[1:]
	arms[0].Runs["1"] = first
	check("first run lost a pod")
}

func compareJSON(t *testing.T, arms []compare.ArmInput) string {
	t.Helper()
	b, err := json.Marshal(compare.Compare("control", arms, nil, compare.Options{Primary: day20Primary}))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
