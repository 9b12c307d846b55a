package events

import "testing"

// TestHandReadDeclinesAFieldItDoesNotRead: a member named as a field of the payload type — in
// any case or spelling — that reached other was not read by handRead's switch (a field added to
// the type and not to the switch), so handRead declines the message rather than skip the value;
// a name no field has is skipped.
func TestHandReadDeclinesAFieldItDoesNotRead(t *testing.T) {
	for _, c := range []struct {
		name    string
		decline bool
	}{
		{"claims", true}, {"Claims", true}, {"CLAIMS", true}, {"node-name", true}, {"nodename", true},
		{"\u212aind", true}, // the Kelvin sign folds to k: declined for any byte beyond ASCII
		{"later", false}, {"claim", false},
	} {
		r := handReader{b: []byte(`{"x":[1,"y"]}`)}
		r.other([]byte(c.name), podStatusNames)
		if r.bad != c.decline {
			t.Errorf("%q: declined %v, want %v", c.name, r.bad, c.decline)
		}
		if !c.decline && r.i != len(r.b) {
			t.Errorf("%q: the value was not skipped (at %d of %d)", c.name, r.i, len(r.b))
		}
	}
}
