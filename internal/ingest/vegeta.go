package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/schedlens/schedlens/internal/events"
)

const vegetaIDPrefix = "request/vegeta/"

// ParseVegeta converts vegeta results encoded as JSON (`vegeta encode -to json`, one result per
// line) into request envelopes. Each line is decoded by vegeta's own JSON decoder; lines it
// cannot decode, and results that cannot be attributed to a pod, become LineErrors.
//
// The serving pod is the host of the result's URL when that host is an IP address (data.pod_ip,
// attributed by the correlator), or the pod Options.HostPods maps the host name to.
func ParseVegeta(r io.Reader, o Options) ([]*events.Envelope, []LineError, error) {
	results, rejected, err := Parse(FormatVegeta, r, o)
	return envelopes(results), rejected, err
}

func parseVegeta(r io.Reader, o *Options) ([]Result, []LineError, error) {
	// vegeta.NewJSONDecoder reads one line per result but cannot say which line failed, and it
	// answers io.EOF (the end of input, to its callers) for a blank line, a cut-off object and
	// a last line without a newline; so lines are split here and each gets a decoder of its own.
	return parseLines(r, o, func(line []byte, observed time.Time) (Result, error) {
		var res vegeta.Result
		in := append(bytes.TrimSpace(line), '\n')
		if err := vegeta.NewJSONDecoder(bytes.NewReader(in)).Decode(&res); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				// easyjson reports a cut-off object as a bare EOF, which vegeta's own
				// readers would take for the end of the input.
				return Result{}, errors.New("not a vegeta JSON result: the line ends inside the object (truncated?)")
			}
			return Result{}, fmt.Errorf("not a vegeta JSON result: %w", err)
		}
		env, err := vegetaEnvelope(&res, o, observed)
		if err != nil {
			return Result{}, err
		}
		return Result{Envelope: env, LegacyID: vegetaIDPrefix + vegetaHash(&res, nil)}, nil
	})
}

// vegetaEnvelope validates one decoded result and builds its envelope.
func vegetaEnvelope(res *vegeta.Result, o *Options, observed time.Time) (*events.Envelope, error) {
	switch {
	case res.Timestamp.IsZero():
		return nil, errors.New("timestamp: missing")
	case res.Latency < 0:
		return nil, fmt.Errorf("latency: negative (%d ns)", res.Latency)
	case res.BytesIn > math.MaxInt64:
		return nil, fmt.Errorf("bytes_in: too large (%d)", res.BytesIn)
	case res.BytesOut > math.MaxInt64:
		return nil, fmt.Errorf("bytes_out: too large (%d)", res.BytesOut)
	case res.URL == "":
		return nil, errors.New("url: missing")
	}
	u, err := url.Parse(res.URL)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("cannot attribute: url %q has no host", res.URL)
	}
	req := &events.Request{
		Target:    res.URL,
		Status:    int(res.Code),
		OK:        200 <= res.Code && res.Code < 400 && res.Error == "",
		LatencyMS: float64(res.Latency) / float64(time.Millisecond),
		Error:     res.Error,
		BytesOut:  int64(res.BytesOut),
		BytesIn:   int64(res.BytesIn),
		Method:    res.Method,
	}
	var pod *events.PodRef
	if p, ok := o.HostPods[strings.ToLower(host)]; ok {
		pod = &p
	} else if ip, err := netip.ParseAddr(host); err == nil {
		req.PodIP = ip.Unmap().WithZone("").String()
	} else {
		return nil, fmt.Errorf("cannot attribute: host %q is not a pod IP (map it to a pod)", host)
	}
	return o.envelope(idPrefix(vegetaIDPrefix, o.Cluster)+vegetaHash(res, pod), res.Timestamp, observed, pod, req)
}

// vegetaHash is the last part of a vegeta result's id, "request/vegeta/<cluster>/<hash>": the
// first 32 hex digits of the SHA-256 of the result's attack name, sequence number, timestamp
// (UTC, nanoseconds), URL and method, and, when a -host-pod mapping named the serving pod, its
// namespace, name and UID, each written as a netstring ("<len>:<bytes>,") so no two field lists
// run together into the same bytes. Before ids included the cluster the id was
// "request/vegeta/" and the hash without a pod.
func vegetaHash(res *vegeta.Result, pod *events.PodRef) string {
	h := sha256.New()
	fields := []string{
		res.Attack,
		strconv.FormatUint(res.Seq, 10),
		res.Timestamp.UTC().Format(time.RFC3339Nano),
		res.URL,
		res.Method,
	}
	if pod != nil {
		fields = append(fields, pod.Namespace, pod.Name, pod.UID)
	}
	for _, f := range fields {
		fmt.Fprintf(h, "%d:%s,", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
