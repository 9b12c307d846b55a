package compare

import (
	"reflect"
	"slices"
	"testing"
)

// TestRunKeyCoversPodValues fails when podValues gains a field runKey does not write: the memo
// would then hand out a run's results for pods that differ in it.
func TestRunKeyCoversPodValues(t *testing.T) {
	if n := reflect.TypeFor[podValues]().NumField(); n != 21 {
		t.Errorf("podValues has %d fields; runKey writes 21: add the new one to runKey, then update this count", n)
	}
	if n := reflect.TypeFor[runFrame]().NumField(); n != 3 {
		t.Errorf("runFrame has %d fields; runKey writes 3: add the new one to runKey, then update this count", n)
	}
}

// TestUnionBuckets checks both ways of joining a run's buckets (marked over a small range,
// sorted over a large one) against sorting, and the positions they give.
func TestUnionBuckets(t *testing.T) {
	for _, pods := range [][]PodData{
		nil,
		{{Latency: map[int32]int64{5: 1, 3: 2}}, {Latency: map[int32]int64{3: 1, -2: 4}}, {}},
		{{Latency: map[int32]int64{-100000: 1, 7: 2}}, {Latency: map[int32]int64{7: 1, 90000: 4}}},
	} {
		var want []int32
		seen := map[int32]bool{}
		for _, p := range pods {
			for b := range p.Latency {
				if !seen[b] {
					seen[b] = true
					want = append(want, b)
				}
			}
		}
		slices.Sort(want)
		got, u := unionBuckets(pods)
		if !slices.Equal(got, want) {
			t.Errorf("unionBuckets = %v, want %v", got, want)
		}
		for i, b := range want {
			if j := u.of(got, b); j != i {
				t.Errorf("position of %d = %d, want %d", b, j, i)
			}
		}
	}
}
