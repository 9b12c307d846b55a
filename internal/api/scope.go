package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/schedlens/schedlens/internal/scope"
	"github.com/schedlens/schedlens/internal/store"
)

// The api reads only the namespaces its caller may (docs/security.md, "Namespaces"): lists are
// read with the caller's scope.Scope passed down to the store and say how many namespaces they
// leave out (namespaces_hidden); a read by name outside them is a 403 that says no more than
// that — an object that does not exist and one in a namespace the caller may not read are the
// same answer to a caller limited to some namespaces.

// readScope resolves the caller's namespaces against the store's; false when it answered with
// a problem instead (503 when they could not be checked now).
func (s *Server) readScope(w http.ResponseWriter, r *http.Request) (scope.Scope, bool) {
	sc, err := scope.Resolve(r.Context(), s.db.Namespaces)
	if err != nil {
		s.scopeFailed(w, r, err)
		return sc, false
	}
	return sc, true
}

// listScope is readScope for a list that may be narrowed to one namespace (?namespace=): a
// namespace the caller may not read is a 403, as by name.
func (s *Server) listScope(w http.ResponseWriter, r *http.Request) (scope.Scope, bool) {
	if ns := r.URL.Query().Get("namespace"); ns != "" && !s.mayRead(w, r, ns) {
		return scope.Scope{}, false
	}
	return s.readScope(w, r)
}

// mayRead reports whether the caller may read namespace ns, answering 403 (or 503) itself when
// not.
func (s *Server) mayRead(w http.ResponseWriter, r *http.Request, ns string) bool {
	ok, err := scope.Check(r.Context(), ns)
	switch {
	case err != nil:
		s.scopeFailed(w, r, err)
		return false
	case !ok:
		forbidden(w, fmt.Sprintf("you may not read namespace %q", ns))
		return false
	}
	return true
}

// mayReadAll reports whether the caller may read every namespace — what the views that no
// namespace owns need (dead letters, results waiting for a pod, lookups of results by id) —,
// answering 403 (or 503) itself when not.
func (s *Server) mayReadAll(w http.ResponseWriter, r *http.Request) bool {
	ok, err := scope.Check(r.Context(), "")
	switch {
	case err != nil:
		s.scopeFailed(w, r, err)
		return false
	case !ok:
		forbidden(w, fmt.Sprintf("%s %s reads every namespace; you may read some only", r.Method, r.URL.Path))
		return false
	}
	return true
}

// mayReadExperiment reports whether the caller may read experiment name: every namespace its
// pods and definition live in (store.ExperimentNamespaces). For a caller limited to some
// namespaces an unknown experiment is the same 403 as a hidden one; for the others it passes,
// and the read answers 404.
func (s *Server) mayReadExperiment(w http.ResponseWriter, r *http.Request, name string) bool {
	nss, err := s.db.ExperimentNamespaces(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		nss, err = nil, nil // lives nowhere: readable only by a caller of every namespace
	}
	if err != nil {
		s.internal(w, r, err)
		return false
	}
	ok, err := scope.CheckEvery(r.Context(), nss)
	switch {
	case err != nil:
		s.scopeFailed(w, r, err)
		return false
	case !ok:
		forbidden(w, fmt.Sprintf("no experiment %q in the namespaces you may read", name))
		return false
	}
	return true
}

// mayReadPod answers a pod read by UID in a namespace the caller may not read, or not found
// when the caller is limited to some namespaces, with the same 403; it reports whether the read
// goes on (err is then the store's, to be answered as usual).
func (s *Server) mayReadPod(w http.ResponseWriter, r *http.Request, uid, ns string, err error) bool {
	if errors.Is(err, store.ErrNotFound) {
		ns = "" // unknown: the same answer as hidden to a caller who may not read every namespace
	} else if err != nil {
		return true
	}
	ok, cerr := scope.Check(r.Context(), ns)
	switch {
	case cerr != nil:
		s.scopeFailed(w, r, cerr)
		return false
	case !ok:
		forbidden(w, fmt.Sprintf("no pod %s in the namespaces you may read", uid))
		return false
	}
	return true
}

// scopeFailed answers a failure to resolve the caller's namespaces: 503 with Retry-After when
// they could not be checked (the Kubernetes API did not answer), 500 otherwise.
func (s *Server) scopeFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, scope.ErrUnavailable) {
		s.logger.Warn("namespace access could not be checked", "method", r.Method, "path", r.URL.Path, "error", err)
		w.Header().Set("Retry-After", "5")
		problem(w, http.StatusServiceUnavailable, "Authorization Unavailable", "the namespaces you may read could not be checked now; retry")
		return
	}
	s.internal(w, r, err)
}

// forbidden answers 403 for a read outside the caller's namespaces.
func forbidden(w http.ResponseWriter, detail string) {
	problem(w, http.StatusForbidden, "Forbidden", detail)
}
