package ui

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/scope"
)

// The UI reads only the namespaces its caller may, as the api does (docs/security.md,
// "Namespaces"): its lists are read with the caller's scope.Scope and say how many namespaces
// they leave out (page.Hidden, a note under the title); a page by name outside them is a 403
// page that says no more than that.

// readScope resolves the caller's namespaces against the store's; false when it answered with
// an error page instead.
func (u *UI) readScope(w http.ResponseWriter, r *http.Request) (scope.Scope, bool) {
	sc, err := scope.Resolve(r.Context(), u.db.Namespaces)
	if err != nil {
		u.scopeFailed(w, r, err)
		return sc, false
	}
	return sc, true
}

// listScope is readScope for a list that may be narrowed to one namespace (?namespace=): a
// namespace the caller may not read is a 403 page, as by name.
func (u *UI) listScope(w http.ResponseWriter, r *http.Request) (scope.Scope, bool) {
	if ns := r.URL.Query().Get("namespace"); ns != "" && !u.mayRead(w, r, ns) {
		return scope.Scope{}, false
	}
	return u.readScope(w, r)
}

// mayRead reports whether the caller may read namespace ns, answering with a 403 page itself
// when not.
func (u *UI) mayRead(w http.ResponseWriter, r *http.Request, ns string) bool {
	ok, err := scope.Check(r.Context(), ns)
	switch {
	case err != nil:
		u.scopeFailed(w, r, err)
		return false
	case !ok:
		u.fail(w, r, http.StatusForbidden, "Forbidden", fmt.Sprintf("You may not read namespace %q.", ns))
		return false
	}
	return true
}

// mayReadExperiment reports whether the caller may read experiment name (every namespace its
// pods and definition live in); to a caller limited to some namespaces an unknown experiment is
// the same 403 page as a hidden one.
func (u *UI) mayReadExperiment(w http.ResponseWriter, r *http.Request, name string) bool {
	nss, err := u.db.ExperimentNamespaces(r.Context(), name)
	if errors.Is(err, report.ErrNotFound) {
		nss, err = nil, nil
	}
	if err != nil {
		u.internal(w, r, err)
		return false
	}
	ok, err := scope.CheckEvery(r.Context(), nss)
	switch {
	case err != nil:
		u.scopeFailed(w, r, err)
		return false
	case !ok:
		u.fail(w, r, http.StatusForbidden, "Forbidden", fmt.Sprintf("No experiment %q in the namespaces you may read.", name))
		return false
	}
	return true
}

// mayReadPod answers a pod read by UID in a namespace the caller may not read, or not found
// when the caller is limited to some namespaces, with the same 403 page; it reports whether the
// page goes on (err is then the store's, to be answered as usual).
func (u *UI) mayReadPod(w http.ResponseWriter, r *http.Request, uid, ns string, err error) bool {
	if errors.Is(err, report.ErrNotFound) {
		ns = ""
	} else if err != nil {
		return true
	}
	ok, cerr := scope.Check(r.Context(), ns)
	switch {
	case cerr != nil:
		u.scopeFailed(w, r, cerr)
		return false
	case !ok:
		u.fail(w, r, http.StatusForbidden, "Forbidden", fmt.Sprintf("No pod %s in the namespaces you may read.", uid))
		return false
	}
	return true
}

// scopeFailed answers a failure to resolve the caller's namespaces: a 503 page with Retry-After
// when they could not be checked now, a 500 otherwise.
func (u *UI) scopeFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, scope.ErrUnavailable) {
		u.logger.Warn("namespace access could not be checked", "method", r.Method, "path", r.URL.Path, "error", err)
		w.Header().Set("Retry-After", "5")
		u.fail(w, r, http.StatusServiceUnavailable, "Try again", "The namespaces you may read could not be checked now; reload in a few seconds.")
		return
	}
	u.internal(w, r, err)
}
