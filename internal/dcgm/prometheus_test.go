package dcgm_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/dcgm"
)

// prometheus answers GET <prefix>/api/v1/query with body and status, once it has checked that
// the query selects the DCGM fields.
func prometheus(t *testing.T, prefix string, status int, body []byte) string {
	t.Helper()
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != prefix+"/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		if q := r.URL.Query().Get("query"); q != `{__name__=~"DCGM_FI_.*"}` {
			t.Errorf("query %q", q)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
	return srv.URL + prefix
}

func TestQueryPrometheus(t *testing.T) {
	base := prometheus(t, "/prom", http.StatusOK, fixture(t, "derived/prometheus-query.json"))
	samples, at, err := dcgm.QueryPrometheus(context.Background(), &http.Client{}, base+"/")
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2025, time.November, 30, 6, 50, 0, 123000000, time.UTC); !at.Equal(want) {
		t.Errorf("time %v, want the evaluation time %v", at, want)
	}
	// The T4 was scraped through a ServiceMonitor: its pod labels name the exporter's pod and
	// exported_* the pod using the GPU. The L40S, idle, was scraped by a static job.
	want := []summary{
		with(t4, func(s *summary) { s.Pod, s.Container, s.SharedBy = "day20/chat-7d9f8b6c5-4xkqp", "server", 1 }),
		l40s,
	}
	if diff := cmp.Diff(want, summarize(samples)); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
	// Through Prometheus or scraped directly, the fields are the same.
	direct := parse(t, "recorded/t4-busy-no-help.prom", "recorded/l40s-idle-node.prom")
	for i := range direct {
		if diff := cmp.Diff(direct[i].Metrics, samples[i].Metrics); diff != "" {
			t.Errorf("%s: metrics (-scraped +queried):\n%s", samples[i].UUID, diff)
		}
	}
	envs, err := dcgm.Envelopes(samples, "lab", "collector/test", "", at, at.Add(time.Second), cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 2 || envs[0].Pod == nil || envs[0].Pod.UID != uidChatA || envs[1].Pod != nil {
		t.Errorf("envelopes not attributed as the samples: %+v", envs)
	}
}

func TestQueryPrometheusErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		wantErr string
	}{
		{"bad query", http.StatusBadRequest,
			`{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:1: parse error"}`,
			`status 400: bad_data: invalid parameter "query"`},
		{"timeout", http.StatusServiceUnavailable,
			`{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`,
			"status 503: timeout: query timed out"},
		{"proxy in front", http.StatusBadGateway, "<html>502 Bad Gateway</html>", "status 502: <html>502 Bad Gateway</html>"},
		{"not the API", http.StatusOK, "<html>Grafana</html>", "not a Prometheus API response"},
		{"matrix", http.StatusOK, `{"status":"success","data":{"resultType":"matrix","result":[]}}`, `result type "matrix", want vector`},
		{"bad value", http.StatusOK,
			`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"},"value":[1764485400.123,"lots"]}]}}`,
			`result[0] (DCGM_FI_DEV_GPU_UTIL): value "lots"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := prometheus(t, "", tt.status, []byte(tt.body))
			samples, _, err := dcgm.QueryPrometheus(context.Background(), nil, base)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
			if len(samples) != 0 {
				t.Errorf("%d samples with an error", len(samples))
			}
		})
	}
}

func TestQueryPrometheusNothingStored(t *testing.T) {
	base := prometheus(t, "", http.StatusOK, []byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	samples, at, err := dcgm.QueryPrometheus(context.Background(), nil, base)
	if err != nil || len(samples) != 0 || !at.IsZero() {
		t.Errorf("got %d samples at %v, error %v; want none, the zero time and no error", len(samples), at, err)
	}
	envs, err := dcgm.Envelopes(samples, "lab", "collector/test", "", at, time.Now(), nil)
	if err != nil || len(envs) != 0 {
		t.Errorf("envelopes of nothing: %d, %v", len(envs), err)
	}
}
