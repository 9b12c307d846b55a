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
	"strings"
	"sync"
	"syscall"
	"time"
)

// MinTokenLen is the shortest token a token file may hold: 16 characters (a guessable token is
// no authentication). `openssl rand -hex 32` makes a good one.
const MinTokenLen = 16

// maxTokenFile bounds a token file.
const maxTokenFile = 1 << 20

// TokenFile authenticates static bearer tokens from a file, one `TOKEN ROLE [NAME]` per line
// (ROLE read or write; NAME, for the logs, defaults to "token-LINE"; '#' starts a comment, blank
// lines are skipped). The file is read again when it changes (its modification time, size or
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
	entries := t.current()
	d := digest(token)
	found := -1
	for i := range entries { // every entry, whatever matched: the time says nothing of which
		if subtle.ConstantTimeCompare(d[:], entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", ErrUnauthenticated
	}
	e := entries[found]
	if e.role < need {
		return e.name, ErrForbidden
	}
	return e.name, nil
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

// ParseTokens reads a token file's content. Errors give the line number and what is wrong with
// it, never the token.
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
		if len(f) < 2 || len(f) > 3 {
			errs = append(errs, fmt.Errorf("line %d: want TOKEN ROLE [NAME], got %d fields", n, len(f)))
			continue
		}
		role, err := ParseRole(f[1])
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %v", n, err))
			continue
		}
		if len(f[0]) < MinTokenLen {
			errs = append(errs, fmt.Errorf("line %d: the token is shorter than %d characters", n, MinTokenLen))
			continue
		}
		name := fmt.Sprintf("token-%d", n)
		if len(f) == 3 {
			name = f[2]
		}
		d := digest(f[0])
		if prev, dup := seen[d]; dup {
			errs = append(errs, fmt.Errorf("line %d: the same token as line %d", n, prev))
			continue
		}
		seen[d] = n
		entries = append(entries, tokenEntry{digest: d, role: role, name: name})
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
