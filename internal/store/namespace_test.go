package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/scope"
	"github.com/schedlens/schedlens/internal/store"
)

// A definition's namespace is its ConfigMap's, read from the event id; one given through the
// API lives in none; an id that says neither is not known.
func TestDefinitionNamespace(t *testing.T) {
	for id, want := range map[string]struct {
		ns    string
		known bool
	}{
		"experiment/team-a/day20-experiment/4711":          {"team-a", true},
		"experiment/api/day20-experiment/4711":             {"api", true}, // a namespace named api
		"experiment/api/day20/1764554400000000000/1f":      {"", true},
		"experiment/api/a/b/1764554400000000000/1f":        {"", true},
		"experiment/sha256/" + strings.Repeat("ab", 32):    {"", false},
		"replayed/experiment/team-a/day20-experiment/4711": {"", false},
		"experiment//day20-experiment/4711":                {"", false},
	} {
		ns, known := store.DefinitionNamespace(id)
		if ns != want.ns || known != want.known {
			t.Errorf("%s: %q %v, want %q %v", id, ns, known, want.ns, want.known)
		}
	}
}

// The store lists the namespaces it holds; an experiment lives in its pods' and its
// definition's namespaces and is listed to a scope that allows every one of them; one defined
// through the API without pods lives in none, for a caller of every namespace only; pods are
// counted in a scope.
func TestNamespacesAndExperimentScopes(t *testing.T) {
	ctx := context.Background()
	db := pgtest.DB(t)
	if _, err := db.Append(ctx, eventgen.Teams(), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.DefineExperiment(ctx, events.Experiment{Name: "api-only", Baseline: "control"}, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	nss, err := db.Namespaces(ctx)
	if err != nil || !cmp.Equal(nss, []string{"team-a", "team-b"}) {
		t.Fatalf("namespaces %v %v, want team-a and team-b", nss, err)
	}
	for name, want := range map[string][]string{"exp-a": {"team-a"}, "exp-b": {"team-b"}, "shared": {"team-a", "team-b"}, "api-only": nil} {
		got, err := db.ExperimentNamespaces(ctx, name)
		if err != nil || !cmp.Equal(got, want, cmpopts.EquateEmpty()) {
			t.Errorf("%s lives in %q (%v), want %q", name, got, err, want)
		}
	}
	if _, err := db.ExperimentNamespaces(ctx, "nothing"); err != store.ErrNotFound {
		t.Errorf("an unknown experiment's namespaces: %v, want ErrNotFound", err)
	}
	for _, tc := range []struct {
		s    scope.Scope
		want []string
	}{
		{scope.All, []string{"api-only", "exp-a", "exp-b", "shared"}},
		{scope.Only("team-a"), []string{"exp-a"}},
		{scope.Only("team-a", "team-b"), []string{"exp-a", "exp-b", "shared"}},
		{scope.Only(), nil},
	} {
		list, err := db.Experiments(ctx, tc.s)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range list {
			got = append(got, e.Name)
		}
		if !cmp.Equal(got, tc.want) {
			t.Errorf("experiments of %v: %v, want %v", tc.s, got, tc.want)
		}
	}
	all, _ := db.PodCount(ctx, scope.All)
	a, _ := db.PodCount(ctx, scope.Only("team-a"))
	b, _ := db.PodCount(ctx, scope.Only("team-b"))
	none, _ := db.PodCount(ctx, scope.Only())
	if a == 0 || b == 0 || a+b != all || none != 0 {
		t.Errorf("pods: %d in all, %d in team-a, %d in team-b, %d in none", all, a, b, none)
	}
}
