// Package ingest turns request results recorded outside schedlens (a load generator's, a
// gateway's log) into request envelopes: NDJSON rows posted to /v1/ingest/requests or read from
// a file, and vegeta's JSON-encoded results. Ids are derived from the input and the cluster, so
// importing the same results twice stores nothing twice while importing them again into
// another cluster (a corrected -cluster) stores them there.
package ingest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/events"
)

// DefaultMaxBytes bounds a request body of Handler when Options.MaxBytes is not set.
const DefaultMaxBytes = 32 << 20

// DefaultMaxConcurrent bounds the posts Handler serves at once when Options.MaxConcurrent is
// not set.
const DefaultMaxConcurrent = 4

// maxLine bounds one input line (one row or one vegeta result); a longer line is rejected
// on its own instead of aborting the whole input.
const maxLine = 1 << 20

// MaxClusterInID bounds the cluster name of imported results: it is part of their ids, which
// must stay within events.MaxIDLen.
const MaxClusterInID = 100

// Format names an input format of Parse.
type Format string

// The input formats.
const (
	FormatVegeta Format = "vegeta" // `vegeta encode -to json`, one result per line
	FormatNDJSON Format = "ndjson" // Row, one per line
)

// Result is one converted input line.
type Result struct {
	Line     int              // 1-based line number in the input
	Envelope *events.Envelope // the request envelope, with its id
	// LegacyID is the id the same line got before ids included the cluster (and, for a result
	// attributed with HostPods, the pod): an importer that finds it stored in the same cluster
	// knows the result was imported before the change and need not store it again.
	LegacyID string
}

// Parse converts an input of the given format; see ParseVegeta and ParseNDJSON.
func Parse(format Format, r io.Reader, o Options) ([]Result, []LineError, error) {
	switch format {
	case FormatVegeta:
		o, err := o.resolve("vegeta")
		if err != nil {
			return nil, nil, err
		}
		return parseVegeta(r, &o)
	case FormatNDJSON:
		o, err := o.resolve("ingest")
		if err != nil {
			return nil, nil, err
		}
		return parseNDJSON(r, &o)
	}
	return nil, nil, fmt.Errorf("ingest: unknown format %q (want vegeta or ndjson)", format)
}

// envelopes drops what only importers need.
func envelopes(results []Result) []*events.Envelope {
	out := make([]*events.Envelope, len(results))
	for i, r := range results {
		out[i] = r.Envelope
	}
	return out
}

// Options say where results come from and how to attribute them.
type Options struct {
	// Cluster and Source are written into every envelope. Cluster is required; Source defaults
	// to "ingest" for NDJSON rows and "vegeta" for vegeta results.
	Cluster, Source string
	// Now is the clock for observed_at (time.Now when nil); it is read once per input.
	Now func() time.Time
	// HostPods attributes vegeta results whose URL host is a name (not a pod IP) to a pod,
	// keyed by host name without port, case-insensitively (a user's --host-pod flag).
	HostPods map[string]events.PodRef
	// MaxBytes bounds a body posted to Handler (DefaultMaxBytes when 0 or less).
	MaxBytes int64
	// MaxConcurrent bounds the posts Handler serves at once (DefaultMaxConcurrent when 0 or
	// less); one more is answered 503 with Retry-After at once, not queued: each holds a
	// parsed body of up to MaxBytes and a publish in flight.
	MaxConcurrent int
	// Logger receives the publish failures Handler answers with 503 (discarded when nil).
	Logger *slog.Logger
}

// LineError is one rejected input line; the other lines are converted all the same.
type LineError struct {
	Line int // 1-based line number in the input
	Err  error
}

// Error says "line N: why".
func (e LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the reason, so errors.Is(err, events.ErrInvalid) finds envelope failures.
func (e LineError) Unwrap() error { return e.Err }

// resolve fills defaults and checks, with the codec's own rules, that the options can produce
// valid envelopes at all: a bad cluster or host mapping would otherwise reject every line.
func (o Options) resolve(source string) (Options, error) {
	if o.Source == "" {
		o.Source = source
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := CheckCluster(o.Cluster); err != nil {
		return o, fmt.Errorf("ingest options: %w", err)
	}
	probe := func(pod *events.PodRef, ip string) error {
		_, err := o.envelope(idPrefix(vegetaIDPrefix, o.Cluster)+hashID(nil), events.MinTime, events.MinTime, pod, &events.Request{PodIP: ip})
		return err
	}
	if err := probe(nil, "127.0.0.1"); err != nil {
		return o, fmt.Errorf("ingest options: %w", err)
	}
	if len(o.HostPods) > 0 {
		hosts := make(map[string]events.PodRef, len(o.HostPods))
		for host, pod := range o.HostPods {
			if err := probe(&pod, ""); err != nil {
				return o, fmt.Errorf("ingest options: host %q: %w", host, err)
			}
			hosts[strings.ToLower(host)] = pod
		}
		o.HostPods = hosts
	}
	return o, nil
}

// envelope builds a request envelope the way every consumer will read it: encoded and decoded
// again by the codec, so whatever this returns passes validation downstream.
func (o *Options) envelope(id string, sent, observed time.Time, pod *events.PodRef, req *events.Request) (*events.Envelope, error) {
	env := &events.Envelope{
		V:          events.Version,
		ID:         id,
		Kind:       events.KindRequest,
		Cluster:    o.Cluster,
		Source:     o.Source,
		OccurredAt: sent.Truncate(time.Microsecond).UTC(),
		ObservedAt: observed.Truncate(time.Microsecond).UTC(),
		Pod:        pod,
		Payload:    req,
	}
	b, err := events.Encode(env)
	if err != nil {
		return nil, err
	}
	return events.Decode(b)
}

// CheckCluster says whether results of cluster fit in request ids: its name, escaped, is at
// most MaxClusterInID bytes. (Whether it is a valid subject token the codec checks.)
func CheckCluster(cluster string) error {
	if len(clusterSegment(cluster)) > MaxClusterInID {
		return fmt.Errorf("cluster: longer than %d bytes (request ids include it)", MaxClusterInID)
	}
	return nil
}

// clusterSegment is the cluster as it appears in an id: path-escaped, so that a '/' in a cluster
// name cannot make two (cluster, rest) pairs one id.
func clusterSegment(cluster string) string { return url.PathEscape(cluster) }

// idPrefix is "request/<format>/<cluster>/": results imported into two clusters are two
// results, so a re-import with a corrected -cluster is stored, not dropped as a copy.
func idPrefix(format, cluster string) string {
	return format + clusterSegment(cluster) + "/"
}

// hashID returns the first 32 hex digits of the SHA-256 of b.
func hashID(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:32]
}

// lineReader yields the lines of an input with their numbers. Unlike bufio.Scanner it survives
// an over-long line: the line is reported too long and skipped, the following lines still read.
type lineReader struct {
	br  *bufio.Reader
	n   int
	buf []byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its line ending (LF or CRLF) and whether it exceeded
// maxLine; io.EOF after the last line. Any other error is the reader's.
func (lr *lineReader) next() (line []byte, tooLong bool, err error) {
	lr.buf = lr.buf[:0]
	read := false
	for {
		frag, err := lr.br.ReadSlice('\n')
		read = read || len(frag) > 0
		if len(lr.buf)+len(frag) <= maxLine+2 { // room for "\r\n"
			lr.buf = append(lr.buf, frag...)
		} else {
			tooLong = true
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if !read {
				return nil, false, io.EOF
			}
		case err != nil:
			return nil, false, err
		}
		lr.n++
		line = bytes.TrimSuffix(bytes.TrimSuffix(lr.buf, []byte("\n")), []byte("\r"))
		if lr.n == 1 {
			line = bytes.TrimPrefix(line, []byte("\uFEFF")) // a byte order mark from Windows tools
		}
		return line, tooLong, nil
	}
}

// parseLines converts every non-blank line of r with convert, all observed at o.Now() (taken
// once, before reading), into Results with their 1-based line numbers; the errors convert
// returns, and lines too long to read, become LineErrors. It stops only on a read error, which
// it returns wrapped with the line number.
func parseLines(r io.Reader, o *Options, convert func(line []byte, observed time.Time) (Result, error)) ([]Result, []LineError, error) {
	observed := o.Now()
	var out []Result
	var rejected []LineError
	lr := newLineReader(r)
	for {
		line, tooLong, err := lr.next()
		if errors.Is(err, io.EOF) {
			return out, rejected, nil
		}
		if err != nil {
			return out, rejected, fmt.Errorf("read line %d: %w", lr.n+1, err)
		}
		switch {
		case tooLong:
			rejected = append(rejected, LineError{lr.n, fmt.Errorf("longer than %d bytes", maxLine)})
		case len(bytes.TrimSpace(line)) == 0:
		default:
			res, err := convert(line, observed)
			if err != nil {
				rejected = append(rejected, LineError{lr.n, err})
				continue
			}
			res.Line = lr.n
			out = append(out, res)
		}
	}
}
