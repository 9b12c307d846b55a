package kube

import (
	"fmt"
	"maps"
	"reflect"
	"testing"
)

// shared holds at most maxShared values of a kind: full, it starts again, so the values of the
// pods that come next are shared still; every value comes back equal to what was given.
func TestSharedIsBounded(t *testing.T) {
	s := newShared[map[string]string]()
	first := s.get(map[string]string{"i": "0"}, internMap)
	for i := range maxShared + 5 {
		v := map[string]string{"i": fmt.Sprint(i)}
		if got := s.get(v, internMap); !maps.Equal(got, v) {
			t.Fatalf("value %d came back as %v", i, got)
		}
	}
	if len(s.values) != 5 {
		t.Errorf("%d values held, want the 5 put after the bound of %d was reached", len(s.values), maxShared)
	}
	late := map[string]string{"i": fmt.Sprint(maxShared + 4)}
	if a, b := s.get(late, internMap), s.get(maps.Clone(late), internMap); reflect.ValueOf(a).Pointer() != reflect.ValueOf(b).Pointer() {
		t.Error("a value put after the bound was reached is not shared")
	}
	if got := s.get(map[string]string{"i": "0"}, internMap); got["i"] != "0" || reflect.ValueOf(got).Pointer() == reflect.ValueOf(first).Pointer() {
		t.Errorf("a value let go came back as %v, the old copy", got)
	}
	if got := s.get(nil, internMap); got != nil {
		t.Errorf("nil came back as %v", got)
	}
}
