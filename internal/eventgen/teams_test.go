package eventgen_test

import (
	"testing"

	"github.com/schedlens/schedlens/internal/eventgen"
)

// Teams' envelopes have distinct ids (none would be dropped as a copy), and its pods are in its
// two namespaces.
func TestTeams(t *testing.T) {
	ids := map[string]bool{}
	pods := map[string]int{}
	for _, env := range eventgen.Teams() {
		if ids[env.ID] {
			t.Fatalf("id %s twice", env.ID)
		}
		ids[env.ID] = true
		if env.Pod != nil {
			pods[env.Pod.Namespace]++
		}
	}
	if len(pods) != 2 || pods[eventgen.TeamA] == 0 || pods[eventgen.TeamB] == 0 {
		t.Errorf("envelopes about pods per namespace: %v, want team-a and team-b", pods)
	}
}
