package auth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schedlens/schedlens/internal/scope"
)

// MinTokenLen is the shortest token a token file may hold: 16 characters (a guessable token is
// no authentication). `openssl rand -hex 32` makes a good one.
const MinTokenLen = 16

// maxTokenFile bounds a token file.
const maxTokenFile = 1 << 20

// TokenFile authenticates static bearer tokens from a file, one
// `TOKEN ROLE [NAME] [namespaces=NS,NS…]` per line (ROLE read or write; NAME, for the logs,
// defaults to "token-LINE"; namespaces= limits what the token reads to those namespaces, every
// namespace without it; '#' starts a comment, blank lines are skipped). The file is read again when it changes (its modification time, size or
// inode — a Kubernetes Secret volume swaps a symlink), at most once per second; a change that does
// not parse is logged and the tokens read before are kept. Tokens are kept and compared as
// SHA-256 digests, every entry in constant time, and never logged.
type TokenFile struct {
	path   string
	logger *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	stamp   fileStamp
	checked time.Time
	entries []tokenEntry
}

type tokenEntry struct {
	digest [32]byte
	role   Role
	name   string
	// namespaces are the namespaces the token may read; nil: every namespace.
	namespaces namespaceSet
}

// namespaceSet is a token's scope.Checker: the namespaces it may read, nil for every one.
type namespaceSet []string

// Allows implements scope.Checker.
func (s namespaceSet) Allows(_ context.Context, ns string) (bool, error) {
	if s == nil {
		return true, nil
	}
	return ns != "" && slices.Contains(s, ns), nil
}

type fileStamp struct {
	mod   time.Time
	size  int64
	inode uint64
}

// NewTokenFile reads path; an error names the file and the line, never a token.
func NewTokenFile(path string, logger *slog.Logger) (*TokenFile, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := &TokenFile{path: path, logger: logger, now: time.Now}
	st, entries, err := t.read()
	if err != nil {
		return nil, err
	}
	t.stamp, t.entries, t.checked = st, entries, t.now()
	return t, nil
}

// Len is the number of tokens held.
func (t *TokenFile) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// Authorize implements Authenticator.
func (t *TokenFile) Authorize(_ context.Context, token string, need Role) (string, error) {
	e, ok := t.lookup(token)
	if !ok {
		return "", ErrUnauthenticated
	}
	if e.role < need {
		return e.name, ErrForbidden
	}
	return e.name, nil
}

// Namespaces implements Scoper: the namespaces of the token's line, every one without
// namespaces=.
func (t *TokenFile) Namespaces(_ context.Context, token string) (scope.Checker, error) {
	e, ok := t.lookup(token)
	if !ok {
		return nil, ErrUnauthenticated
	}
	return e.namespaces, nil
}

// lookup finds token's entry.
func (t *TokenFile) lookup(token string) (tokenEntry, bool) {
	entries := t.current()
	d := digest(token)
	found := -1
	for i := range entries { // every entry, whatever matched: the time says nothing of which
		if subtle.ConstantTimeCompare(d[:], entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return tokenEntry{}, false
	}
	return entries[found], true
}

// current returns the entries, reading the file again first when it changed.
func (t *TokenFile) current() []tokenEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if now.Sub(t.checked) < time.Second {
		return t.entries
	}
	t.checked = now
	st, err := stat(t.path)
	if err != nil {
		t.logger.Error("token file: keeping the tokens read before", "file", t.path, "error", err)
		return t.entries
	}
	if st == t.stamp {
		return t.entries
	}
	st, entries, err := t.read()
	if err != nil {
		t.logger.Error("token file changed but does not parse: keeping the tokens read before", "file", t.path, "error", err)
		t.stamp = st // not again until it changes again
		return t.entries
	}
	t.stamp, t.entries = st, entries
	t.logger.Info("token file read again", "file", t.path, "tokens", len(entries))
	return t.entries
}

func stat(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	st := fileStamp{mod: fi.ModTime(), size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.inode = uint64(sys.Ino)
	}
	return st, nil
}

func (t *TokenFile) read() (fileStamp, []tokenEntry, error) {
	st, err := stat(t.path)
	if err != nil {
		return st, nil, fmt.Errorf("token file: %w", err)
	}
	f, err := os.Open(t.path)
	if err != nil {
		return st, nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return st, nil, fmt.Errorf("token file %s: %w", t.path, err)
	}
	if len(b) > maxTokenFile {
		return st, nil, fmt.Errorf("token file %s: larger than %d bytes", t.path, maxTokenFile)
	}
	entries, err := ParseTokens(b)
	if err != nil {
		return st, nil, fmt.Errorf("token file %s: %w", t.path, err)
	}
	return st, entries, nil
}

// ParseTokens reads a token file's content: `TOKEN ROLE [NAME] [namespaces=NS,NS…]` per line.
// Errors give the line number and what is wrong with it, never the token.
func ParseTokens(b []byte) ([]tokenEntry, error) {
	var (
		entries []tokenEntry
		errs    []error
		seen    = map[[32]byte]int{}
	)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), maxTokenFile)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		e, err := parseLine(f, n)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			continue
		}
		if prev, dup := seen[e.digest]; dup {
			errs = append(errs, fmt.Errorf("line %d: the same token as line %d", n, prev))
			continue
		}
		seen[e.digest] = n
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(entries) == 0 {
		return nil, errors.New("no tokens")
	}
	return entries, nil
}

// namespacesField starts the field of a token line that names the namespaces it may read.
const namespacesField = "namespaces="

// parseLine reads the fields of line n. Its errors never quote the token (the first field).
func parseLine(f []string, n int) (tokenEntry, error) {
	const want = "want TOKEN ROLE [NAME] [namespaces=NS,NS…]"
	if len(f) < 2 {
		return tokenEntry{}, fmt.Errorf("%s, got %d fields", want, len(f))
	}
	role, err := ParseRole(f[1])
	if err != nil {
		return tokenEntry{}, err
	}
	if len(f[0]) < MinTokenLen {
		return tokenEntry{}, fmt.Errorf("the token is shorter than %d characters", MinTokenLen)
	}
	e := tokenEntry{digest: digest(f[0]), role: role, name: fmt.Sprintf("token-%d", n)}
	named, scoped := false, false
	for _, x := range f[2:] {
		switch {
		case strings.HasPrefix(x, namespacesField):
			if scoped {
				return tokenEntry{}, errors.New("namespaces= given twice")
			}
			scoped = true
			if e.namespaces, err = parseNamespaces(strings.TrimPrefix(x, namespacesField)); err != nil {
				return tokenEntry{}, err
			}
		case named:
			return tokenEntry{}, fmt.Errorf("%s, got %d fields", want, len(f))
		default:
			named, e.name = true, x
		}
	}
	return e, nil
}

// parseNamespaces reads NS,NS…: Kubernetes namespace names (RFC 1123 labels), at least one.
func parseNamespaces(v string) (namespaceSet, error) {
	out := namespaceSet{}
	for _, ns := range strings.Split(v, ",") {
		if !namespaceName(ns) {
			return nil, fmt.Errorf("namespaces=: %q is not a namespace name (lower-case letters, digits and '-', at most 63)", ns)
		}
		if !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out, nil
}

// namespaceName reports whether s is an RFC 1123 label, what Kubernetes names namespaces with.
func namespaceName(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
