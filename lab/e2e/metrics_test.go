package e2e

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/testenv"
	"github.com/schedlens/schedlens/internal/workload"
)

// scrape reads the api's /metrics.
func (e *env) scrape() map[string]*dto.MetricFamily {
	e.t.Helper()
	resp, err := http.Get("http://" + e.s.APIAddr + "/metrics")
	if err != nil {
		e.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET /metrics: HTTP %d %s", resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		e.t.Fatalf("/metrics: %v", err)
	}
	return mfs
}

// label is a metric's label value ("" when it has none of that name).
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// workloadSeries renders what the api exports of each workload's disruptions: per workload and
// kind, the count, and the interruption and recovery histograms' count and sum (ms).
func workloadSeries(mfs map[string]*dto.MetricFamily) []string {
	var out []string
	key := func(m *dto.Metric) string {
		return fmt.Sprintf("%s/%s/%s %s", label(m, "workload_namespace"), label(m, "workload_kind"), label(m, "workload_name"), label(m, "kind"))
	}
	if mf := mfs["schedlens_workload_disruptions_total"]; mf != nil {
		for _, m := range mf.GetMetric() {
			if v := m.GetCounter().GetValue(); v > 0 {
				out = append(out, fmt.Sprintf("%s: %g disruptions", key(m), v))
			}
		}
	}
	for _, name := range []string{"interruption", "recovery"} {
		if mf := mfs["schedlens_workload_disruption_"+name+"_seconds"]; mf != nil {
			for _, m := range mf.GetMetric() {
				h := m.GetHistogram()
				out = append(out, fmt.Sprintf("%s: %s count %d, sum %.0f ms", key(m), name, h.GetSampleCount(), math.Round(h.GetSampleSum()*1000)))
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkExported holds the api's /metrics to what GET /v1/disruptions said (ds): per workload
// and kind, as many disruptions counted (those that began since the UTC day the counters count
// from), and once settled (over and recovered, that day), the interruption and recovery
// histograms holding each one's seconds.
func checkExported(t *testing.T, e *env, ds []report.Disruption) {
	t.Helper()
	var got, want []string
	ok := testenv.Until(2*time.Minute, 500*time.Millisecond, func() bool {
		mfs := e.scrape()
		period := time.Time{}
		if mf := mfs["schedlens_workload_metrics_period_start_timestamp_seconds"]; mf != nil && len(mf.GetMetric()) == 1 {
			period = time.Unix(int64(mf.GetMetric()[0].GetGauge().GetValue()), 0)
		}
		type tally struct {
			n                      int
			interruption, recovery float64
			settled                int
		}
		by := map[string]*tally{}
		var keys []string
		for _, d := range ds {
			for _, a := range d.Workloads {
				k := fmt.Sprintf("%s %s", a.Workload, d.Kind)
				if by[k] == nil {
					by[k] = &tally{}
					keys = append(keys, k)
				}
				if !d.Start.Before(period) {
					by[k].n++
				}
				if d.End != nil && a.RecoveredAt != nil && a.RecoverySeconds != nil && !workload.Until(d, a, *a.RecoveredAt).Before(period) {
					by[k].settled++
					by[k].interruption += a.Interruption.Seconds
					by[k].recovery += *a.RecoverySeconds
				}
			}
		}
		want = want[:0]
		for _, k := range keys {
			b := by[k]
			if b.n > 0 {
				want = append(want, fmt.Sprintf("%s: %d disruptions", k, b.n))
			}
			want = append(want, fmt.Sprintf("%s: interruption count %d, sum %.0f ms", k, b.settled, math.Round(b.interruption*1000)),
				fmt.Sprintf("%s: recovery count %d, sum %.0f ms", k, b.settled, math.Round(b.recovery*1000)))
		}
		slices.Sort(want)
		got = workloadSeries(mfs)
		return cmp.Equal(want, got)
	})
	if !ok {
		t.Errorf("/metrics does not say what GET /v1/disruptions said (-disruptions +metrics):\n%s", cmp.Diff(want, got))
		return
	}
	t.Logf("/metrics agrees with GET /v1/disruptions:\n  %s", strings.Join(got, "\n  "))
}
