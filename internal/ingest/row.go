package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"
	"unicode"

	"github.com/schedlens/schedlens/internal/events"
)

// Row is one request result in the NDJSON format of POST /v1/ingest/requests and of
// ParseNDJSON: one JSON object per line. Clients may marshal it to write rows.
//
// SentAt is required, and LatencyMS unless ReceivedAt is given (LatencyMS wins when both are).
// The serving pod is named by PodUID with PodNamespace and PodName, or by PodIP alone (the
// correlator attributes it to the pod that held the IP at SentAt), or both. OK defaults to
// 200 <= Status < 400 with no Error. Fields the format does not know are rejected, so a typo
// is not silently dropped.
//
// ID is an optional client-chosen id; without it a row's id is a hash of its content, so two
// rows equal in every field are one request. Give ids when that is not true of your results.
type Row struct {
	ID           string     `json:"id,omitempty"`
	PodUID       string     `json:"pod_uid,omitempty"`
	PodNamespace string     `json:"pod_namespace,omitempty"`
	PodName      string     `json:"pod_name,omitempty"`
	PodIP        string     `json:"pod_ip,omitempty"`
	SentAt       time.Time  `json:"sent_at"`
	LatencyMS    *float64   `json:"latency_ms,omitempty"`
	ReceivedAt   *time.Time `json:"received_at,omitempty"`
	Status       int        `json:"status,omitempty"`
	OK           *bool      `json:"ok,omitempty"`
	Error        string     `json:"error,omitempty"`
	Target       string     `json:"target,omitempty"`
	Method       string     `json:"method,omitempty"`
	BytesIn      int64      `json:"bytes_in,omitempty"`
	BytesOut     int64      `json:"bytes_out,omitempty"`
}

// rowIDPrefix starts the ids of the envelopes made from NDJSON rows.
const rowIDPrefix = "request/ingest/"

// ParseNDJSON converts NDJSON rows (see Row) into request envelopes. Rows that are not valid
// become LineErrors with their 1-based line numbers and the other rows are converted all the
// same; blank lines are skipped. Only a read error (or unusable options) aborts.
func ParseNDJSON(r io.Reader, o Options) ([]*events.Envelope, []LineError, error) {
	results, rejected, err := Parse(FormatNDJSON, r, o)
	return envelopes(results), rejected, err
}

func parseNDJSON(r io.Reader, o *Options) ([]Result, []LineError, error) {
	return parseLines(r, o, func(line []byte, observed time.Time) (Result, error) {
		row, err := decodeRow(line)
		if err != nil {
			return Result{}, err
		}
		return rowEnvelope(row, o, observed)
	})
}

// decodeRow reads one line strictly: one JSON object of Row's fields and nothing else. Times
// are read as strings first so that a bad one names its field.
func decodeRow(line []byte) (Row, error) {
	var w struct {
		Row
		SentAt     *string `json:"sent_at"`
		ReceivedAt *string `json:"received_at"`
	}
	line = bytes.TrimSpace(line)
	if line[0] != '{' {
		if !json.Valid(line) {
			return Row{}, errors.New("not valid JSON")
		}
		return Row{}, fmt.Errorf("want a JSON object, got %s", jsonType(line))
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
			return Row{}, fmt.Errorf("not valid JSON: %v", err)
		case errors.As(err, &te) && te.Field != "":
			return Row{}, fmt.Errorf("%s: want %s, got %s", strings.TrimPrefix(te.Field, "Row."), te.Type, te.Value)
		default:
			return Row{}, err // "json: unknown field ..."
		}
	}
	if dec.More() {
		return Row{}, errors.New("not valid JSON: more after the object")
	}
	row := w.Row
	if w.SentAt == nil {
		return row, errors.New("sent_at: missing")
	}
	t, err := time.Parse(time.RFC3339Nano, *w.SentAt)
	if err != nil {
		return row, fmt.Errorf("sent_at: not an RFC 3339 time: %q", *w.SentAt)
	}
	row.SentAt = t
	if w.ReceivedAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *w.ReceivedAt)
		if err != nil {
			return row, fmt.Errorf("received_at: not an RFC 3339 time: %q", *w.ReceivedAt)
		}
		row.ReceivedAt = &t
	}
	return row, nil
}

// canonicalRow is what a row's content id is a hash of: the row as it is resolved (pod IP
// normalised, latency from received_at, ok defaulted, time in UTC), in this field order, so
// two spellings of the same result get the same id.
type canonicalRow struct {
	PodUID       string  `json:"pod_uid"`
	PodNamespace string  `json:"pod_namespace"`
	PodName      string  `json:"pod_name"`
	PodIP        string  `json:"pod_ip"`
	SentAt       string  `json:"sent_at"`
	LatencyMS    float64 `json:"latency_ms"`
	Status       int     `json:"status"`
	OK           bool    `json:"ok"`
	Error        string  `json:"error"`
	Target       string  `json:"target"`
	Method       string  `json:"method"`
	BytesIn      int64   `json:"bytes_in"`
	BytesOut     int64   `json:"bytes_out"`
}

// rowEnvelope validates a decoded row and builds its envelope.
func rowEnvelope(row Row, o *Options, observed time.Time) (Result, error) {
	var pod *events.PodRef
	switch {
	case row.PodUID != "":
		switch {
		case !events.ValidUID(row.PodUID):
			return Result{}, fmt.Errorf("pod_uid: %q is not a Kubernetes UID", row.PodUID)
		case row.PodNamespace == "":
			return Result{}, errors.New("pod_namespace: missing (required with pod_uid)")
		case row.PodName == "":
			return Result{}, errors.New("pod_name: missing (required with pod_uid)")
		}
		pod = &events.PodRef{Namespace: row.PodNamespace, Name: row.PodName, UID: row.PodUID}
	case row.PodNamespace != "" || row.PodName != "":
		return Result{}, errors.New("pod_uid: missing (pod_namespace and pod_name need it; without a UID name the pod by pod_ip)")
	case row.PodIP == "":
		return Result{}, errors.New("names no pod: give pod_uid (with pod_namespace and pod_name) or pod_ip")
	}
	podIP := ""
	if row.PodIP != "" {
		ip, err := netip.ParseAddr(row.PodIP)
		if err != nil {
			return Result{}, fmt.Errorf("pod_ip: %q is not an IP address", row.PodIP)
		}
		podIP = ip.Unmap().WithZone("").String()
	}

	var latency float64
	switch {
	case row.LatencyMS != nil:
		latency = *row.LatencyMS
		if latency < 0 {
			return Result{}, fmt.Errorf("latency_ms: negative (%g)", latency)
		}
	case row.ReceivedAt != nil:
		d := row.ReceivedAt.Sub(row.SentAt)
		if d < 0 {
			return Result{}, fmt.Errorf("received_at: %s is before sent_at", row.ReceivedAt.Format(time.RFC3339Nano))
		}
		latency = float64(d) / float64(time.Millisecond)
	default:
		return Result{}, errors.New("latency_ms: missing (give latency_ms or received_at)")
	}
	switch {
	case row.Status != 0 && (row.Status < 100 || row.Status > 999):
		return Result{}, fmt.Errorf("status: %d is not an HTTP status code", row.Status)
	case row.BytesIn < 0:
		return Result{}, fmt.Errorf("bytes_in: negative (%d)", row.BytesIn)
	case row.BytesOut < 0:
		return Result{}, fmt.Errorf("bytes_out: negative (%d)", row.BytesOut)
	}
	ok := 200 <= row.Status && row.Status < 400 && row.Error == ""
	if row.OK != nil {
		ok = *row.OK
	}
	req := &events.Request{
		Target:    row.Target,
		Status:    row.Status,
		OK:        ok,
		LatencyMS: latency,
		Error:     row.Error,
		BytesOut:  row.BytesOut,
		BytesIn:   row.BytesIn,
		Method:    row.Method,
		PodIP:     podIP,
	}

	key, err := rowKey(row, req)
	if err != nil {
		return Result{}, err
	}
	prefix := idPrefix(rowIDPrefix, o.Cluster)
	if len(prefix)+len(key) > events.MaxIDLen {
		return Result{}, fmt.Errorf("id: longer than %d bytes (with the cluster, request ids are at most %d)", events.MaxIDLen-len(prefix), events.MaxIDLen)
	}
	env, err := o.envelope(prefix+key, row.SentAt, observed, pod, req)
	if err != nil {
		return Result{}, err
	}
	return Result{Envelope: env, LegacyID: rowIDPrefix + key}, nil
}

// rowKey is what follows "request/ingest/<cluster>/" in a row's id: the row's own id, or the
// first 32 hex digits of the SHA-256 of its canonical form. Before ids included the cluster,
// "request/ingest/" and the key was the whole id.
func rowKey(row Row, req *events.Request) (string, error) {
	if row.ID != "" {
		for _, r := range row.ID {
			if unicode.IsControl(r) || unicode.IsSpace(r) {
				return "", fmt.Errorf("id: %q contains a space or control character", row.ID)
			}
		}
		return row.ID, nil
	}
	b, err := json.Marshal(canonicalRow{
		PodUID:       row.PodUID,
		PodNamespace: row.PodNamespace,
		PodName:      row.PodName,
		PodIP:        req.PodIP,
		SentAt:       row.SentAt.UTC().Format(time.RFC3339Nano),
		LatencyMS:    req.LatencyMS,
		Status:       req.Status,
		OK:           req.OK,
		Error:        req.Error,
		Target:       req.Target,
		Method:       req.Method,
		BytesIn:      req.BytesIn,
		BytesOut:     req.BytesOut,
	})
	if err != nil {
		return "", fmt.Errorf("hash row: %w", err)
	}
	return hashID(b), nil
}

func jsonType(b []byte) string {
	switch b[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
