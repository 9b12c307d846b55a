package scope_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/scope"
)

// checker allows the namespaces of its set ("" for every namespace) and fails for "down".
type checker map[string]bool

func (c checker) Allows(_ context.Context, ns string) (bool, error) {
	if ns == "down" {
		return false, errors.New("connection refused")
	}
	return c[ns], nil
}

func known(nss ...string) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) { return nss, nil }
}

// A caller is scoped to what its Checker allows among the namespaces the store holds, and the
// others are counted, not named; without a Checker, or allowed "", it reads everything.
func TestResolve(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		c           scope.Checker
		known       []string
		want        []string // nil: every namespace
		wantHidden  int
		wantAllowsB bool
	}{
		{name: "no checker", known: []string{"a", "b"}, want: nil, wantAllowsB: true},
		{name: "cluster-wide", c: checker{"": true}, known: []string{"a", "b"}, want: nil, wantAllowsB: true},
		{name: "one namespace", c: checker{"a": true}, known: []string{"a", "b", "c"}, want: []string{"a"}, wantHidden: 2},
		{name: "none", c: checker{}, known: []string{"a", "b"}, want: []string{}, wantHidden: 2},
		{name: "none held", c: checker{"a": true}, want: []string{}},
	} {
		in := ctx
		if tc.c != nil {
			in = scope.NewContext(ctx, tc.c)
		}
		s, err := scope.Resolve(in, known(tc.known...))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, s.Namespaces()); diff != "" {
			t.Errorf("%s: namespaces (-want +got):\n%s", tc.name, diff)
		}
		if s.Limited() != (tc.want != nil) || s.Hidden() != tc.wantHidden || s.Allows("b") != tc.wantAllowsB {
			t.Errorf("%s: %v: limited %v, hidden %d, allows b %v", tc.name, s, s.Limited(), s.Hidden(), s.Allows("b"))
		}
	}
}

// A Checker that cannot answer makes the read fail (ErrUnavailable), never read everything.
func TestResolveUnavailable(t *testing.T) {
	ctx := scope.NewContext(context.Background(), checker{"a": true})
	if _, err := scope.Resolve(ctx, known("a", "down")); !errors.Is(err, scope.ErrUnavailable) {
		t.Errorf("resolve with a failing check: %v, want ErrUnavailable", err)
	}
	if _, err := scope.Check(ctx, "down"); !errors.Is(err, scope.ErrUnavailable) {
		t.Errorf("check with a failing check: %v, want ErrUnavailable", err)
	}
}

// What lives in no namespace, or in several, is allowed only when every one of them is.
func TestAllowsEvery(t *testing.T) {
	a := scope.Only("a", "b")
	for _, tc := range []struct {
		nss  []string
		want bool
	}{
		{[]string{"a"}, true}, {[]string{"a", "b"}, true}, {[]string{"a", "c"}, false}, {nil, false}, {[]string{""}, false},
	} {
		if got := a.AllowsEvery(tc.nss); got != tc.want {
			t.Errorf("%v.AllowsEvery(%q) = %v, want %v", a, tc.nss, got, tc.want)
		}
		if !scope.All.AllowsEvery(tc.nss) {
			t.Errorf("All.AllowsEvery(%q) = false", tc.nss)
		}
	}
}
