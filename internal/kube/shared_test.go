package kube

import (
	"fmt"
	"maps"
	"testing"
)

// shared holds at most maxShared values of a kind; past that a value is returned as the pod's
// own, prepared, and still equal to what was given.
func TestSharedIsBounded(t *testing.T) {
	s := newShared[map[string]string]()
	for i := range maxShared + 5 {
		v := map[string]string{"i": fmt.Sprint(i)}
		if got := s.get(v, internMap); !maps.Equal(got, v) {
			t.Fatalf("value %d came back as %v", i, got)
		}
	}
	if len(s.values) != maxShared {
		t.Errorf("%d values held, want the bound %d", len(s.values), maxShared)
	}
	if got := s.get(map[string]string{"i": "0"}, internMap); got["i"] != "0" {
		t.Errorf("a held value came back as %v", got)
	}
	if got := s.get(nil, internMap); got != nil {
		t.Errorf("nil came back as %v", got)
	}
}
