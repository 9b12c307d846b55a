package compare

import (
	"reflect"
	"testing"
)

// TestRunKeyCoversPodValues fails when podValues gains a field runKey does not write: the memo
// would then hand out a run's results for pods that differ in it.
func TestRunKeyCoversPodValues(t *testing.T) {
	if n := reflect.TypeFor[podValues]().NumField(); n != 17 {
		t.Errorf("podValues has %d fields; runKey writes 17: add the new one to runKey, then update this count", n)
	}
	if n := reflect.TypeFor[runFrame]().NumField(); n != 3 {
		t.Errorf("runFrame has %d fields; runKey writes 3: add the new one to runKey, then update this count", n)
	}
}
