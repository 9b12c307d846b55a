package dcgm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// promQuery selects every DCGM field series a Prometheus server holds.
const promQuery = `{__name__=~"DCGM_FI_.*"}`

// promResponse is the envelope of every Prometheus HTTP API answer
// (prometheus.io/docs/prometheus/latest/querying/api/).
type promResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

// promData is the data of a query answer; an instant query over series answers a vector.
type promData struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric map[string]string `json:"metric"`
		// Value is [<unix time in seconds>, "<value>"]; native histograms have "histogram"
		// instead, which DCGM fields never are.
		Value []json.RawMessage `json:"value"`
	} `json:"result"`
}

// QueryPrometheus reads the DCGM series from a Prometheus server instead of the exporters:
// GET <baseURL>/api/v1/query?query={__name__=~"DCGM_FI_.*"} (an instant query), grouped into
// Samples as Parse groups a scrape. The exporter's pod labels may appear as exported_pod,
// exported_namespace and exported_container (a scrape without honor_labels whose target has
// pod labels of its own); those win over pod, namespace and container.
//
// The returned time is the samples' timestamp: for an instant query Prometheus stamps every
// sample with the evaluation time (the latest is returned should they differ), not with the
// exporter's scrape time, which is at most the lookback delta (5m by default) earlier. It is
// the zero time when the answer holds no series.
func QueryPrometheus(ctx context.Context, client *http.Client, baseURL string) ([]Sample, time.Time, error) {
	if client == nil {
		client = http.DefaultClient
	}
	u := strings.TrimRight(baseURL, "/") + "/api/v1/query?" + url.Values{"query": {promQuery}}.Encode()
	body, err := get(ctx, client, u, "application/json")
	var se *statusError
	if err != nil && !errors.As(err, &se) {
		return nil, time.Time{}, fmt.Errorf("query prometheus: %w", err)
	}
	var resp promResponse
	if jerr := json.Unmarshal(body, &resp); jerr != nil || resp.Status == "" {
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("query prometheus: %w", err)
		}
		return nil, time.Time{}, fmt.Errorf("query prometheus: answer is not a Prometheus API response: %.100q", body)
	}
	if resp.Status != "success" || err != nil {
		code := 200
		if se != nil {
			code = se.code
		}
		return nil, time.Time{}, fmt.Errorf("query prometheus: status %d: %s: %s", code, resp.ErrorType, resp.Error)
	}
	var data promData
	if err := json.Unmarshal(resp.Data, &data); err != nil {
		return nil, time.Time{}, fmt.Errorf("query prometheus: decode data: %w", err)
	}
	if data.ResultType != "vector" {
		return nil, time.Time{}, fmt.Errorf("query prometheus: result type %q, want vector", data.ResultType)
	}
	var (
		all    []series
		latest time.Time
	)
	for i, r := range data.Result {
		name := r.Metric["__name__"]
		if name == "" || r.Value == nil {
			continue
		}
		ts, v, err := promSample(r.Value)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("query prometheus: result[%d] (%s): %w", i, name, err)
		}
		if ts.After(latest) {
			latest = ts
		}
		labels := make(map[string]string, len(r.Metric))
		for k, val := range r.Metric {
			if k != "__name__" {
				labels[k] = val
			}
		}
		all = append(all, series{name: name, labels: labels, value: v})
	}
	return group(all), latest, nil
}

// promSample decodes a [<unix seconds>, "<value>"] pair. Prometheus timestamps are
// milliseconds, written as seconds with up to three decimals.
func promSample(pair []json.RawMessage) (time.Time, float64, error) {
	if len(pair) != 2 {
		return time.Time{}, 0, fmt.Errorf("value has %d elements, want 2", len(pair))
	}
	secs, err := strconv.ParseFloat(string(pair[0]), 64)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("timestamp %s: %w", pair[0], err)
	}
	var s string
	if err := json.Unmarshal(pair[1], &s); err != nil {
		return time.Time{}, 0, fmt.Errorf("value %s is not a string", pair[1])
	}
	v, err := strconv.ParseFloat(s, 64) // also "NaN", "+Inf", "-Inf"; group drops those
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("value %q: %w", s, err)
	}
	return time.UnixMilli(int64(math.Round(secs * 1000))).UTC(), v, nil
}
