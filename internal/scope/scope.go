// Package scope says which namespaces a caller may read. Authentication (internal/auth) puts a
// Checker in each request's context; the api and the web UI resolve it against the namespaces
// the store holds (Resolve) into a Scope, pass that Scope down to the store's queries, and refuse
// a read by name outside it. A request without a Checker (no authentication) reads everything.
package scope

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// ErrUnavailable wraps what a Checker failed with: the authority (the Kubernetes API) did not
// answer, so the read cannot be scoped now (a 503, never a read of everything).
var ErrUnavailable = errors.New("namespace access could not be checked")

// Checker decides which namespaces one caller may read.
type Checker interface {
	// Allows reports whether the caller may read namespace ns; "" asks whether it may read
	// every namespace (a cluster-wide allowance).
	Allows(ctx context.Context, ns string) (bool, error)
}

type ctxKey struct{}

// NewContext returns ctx carrying c, the Checker of the request's caller.
func NewContext(ctx context.Context, c Checker) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// FromContext returns the Checker NewContext put in ctx; nil when there is none (the request
// was not authenticated: it may read every namespace).
func FromContext(ctx context.Context) Checker {
	c, _ := ctx.Value(ctxKey{}).(Checker)
	return c
}

// Scope is the namespaces one read covers. The zero Scope is every namespace: what a caller
// without a Checker, or one allowed every namespace, reads; a filter that does not set one reads
// everything, like its other empty fields.
type Scope struct {
	limited bool
	allowed []string // sorted, unique; non-nil when limited
	hidden  int
}

// All is every namespace (the zero Scope).
var All = Scope{}

// Only is a Scope of the namespaces given and no other.
func Only(namespaces ...string) Scope {
	s := Scope{limited: true, allowed: []string{}}
	for _, ns := range namespaces {
		if ns != "" {
			s.allowed = append(s.allowed, ns)
		}
	}
	slices.Sort(s.allowed)
	s.allowed = slices.Compact(s.allowed)
	return s
}

// Limited reports whether the Scope leaves some namespaces out.
func (s Scope) Limited() bool { return s.limited }

// Namespaces are the namespaces a limited Scope allows, sorted and never nil (possibly empty);
// nil for every namespace. A query passes it as a text[] parameter: NULL reads every namespace,
// otherwise `namespace = ANY($n)`.
func (s Scope) Namespaces() []string {
	if !s.limited {
		return nil
	}
	return slices.Clone(s.allowed)
}

// Allows reports whether ns is in the Scope. A limited Scope never allows "" (what belongs to no
// namespace, or to one not known).
func (s Scope) Allows(ns string) bool {
	if !s.limited {
		return true
	}
	_, found := slices.BinarySearch(s.allowed, ns)
	return found && ns != ""
}

// AllowsEvery reports whether the Scope allows each of namespaces; a limited Scope allows no
// empty list (something that lives in no namespace is for callers of every namespace only).
func (s Scope) AllowsEvery(namespaces []string) bool {
	if !s.limited {
		return true
	}
	if len(namespaces) == 0 {
		return false
	}
	for _, ns := range namespaces {
		if !s.Allows(ns) {
			return false
		}
	}
	return true
}

// Hidden is how many namespaces the store holds that the caller may not read (Resolve counts
// them): what lists report as namespaces_hidden. Never a name.
func (s Scope) Hidden() int { return s.hidden }

// String is for logs and test failures.
func (s Scope) String() string {
	if !s.limited {
		return "every namespace"
	}
	return fmt.Sprintf("namespaces %v (%d hidden)", s.allowed, s.hidden)
}

// parallel bounds the checks Resolve runs at once (each may be a SubjectAccessReview).
const parallel = 8

// Resolve is the Scope of the caller of ctx: All without a Checker or when it allows every
// namespace; otherwise the namespaces known lists that it allows, counting the others as hidden.
// A Checker's failure is ErrUnavailable; known's is returned as it is.
func Resolve(ctx context.Context, known func(context.Context) ([]string, error)) (Scope, error) {
	c := FromContext(ctx)
	if c == nil {
		return All, nil
	}
	all, err := c.Allows(ctx, "")
	if err != nil {
		return Scope{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if all {
		return All, nil
	}
	names, err := known(ctx)
	if err != nil {
		return Scope{}, err
	}
	allowed := make([]bool, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	slots := make(chan struct{}, parallel)
	for i, ns := range names {
		if ns == "" {
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			allowed[i], errs[i] = c.Allows(ctx, ns)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Scope{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	var in []string
	hidden := 0
	for i, ns := range names {
		switch {
		case allowed[i]:
			in = append(in, ns)
		case ns != "":
			hidden++
		}
	}
	s := Only(in...)
	s.hidden = hidden
	return s, nil
}

// Check reports whether the caller of ctx may read namespace ns (every caller without a Checker
// may). It asks the Checker alone, without listing the namespaces: a read by name.
func Check(ctx context.Context, ns string) (bool, error) {
	c := FromContext(ctx)
	if c == nil {
		return true, nil
	}
	ok, err := c.Allows(ctx, ns)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return ok, nil
}

// CheckEvery reports whether the caller of ctx may read each of namespaces ("" asks for every
// namespace); an empty list needs every namespace, as Scope.AllowsEvery has it. A read by name
// of what lives in several namespaces (an experiment).
func CheckEvery(ctx context.Context, namespaces []string) (bool, error) {
	if len(namespaces) == 0 {
		return Check(ctx, "")
	}
	for _, ns := range namespaces {
		if ok, err := Check(ctx, ns); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}
