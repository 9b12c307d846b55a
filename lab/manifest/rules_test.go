package manifest_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/schedlens/schedlens/lab/manifest"
)

// dashboards are the chart's Grafana dashboards.
var dashboards = []string{"files/dashboard.json", "files/dashboard-workloads.json"}

// dashboardQueries returns, per dashboard panel query and templating variable of the chart's
// dashboards, its PromQL (a variable's label_values(SELECTOR, label) gives its selector).
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, file := range dashboards {
		b, err := os.ReadFile(chartDir + "/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var dash struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
			Templating struct {
				List []struct {
					Name       string `json:"name"`
					Definition string `json:"definition"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(b, &dash); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, p := range dash.Panels {
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", file, p.Title)
			}
			for i, tg := range p.Targets {
				out[fmt.Sprintf("%s %q query %d", file, p.Title, i+1)] = tg.Expr
			}
		}
		for _, v := range dash.Templating.List {
			if v.Definition == "" {
				continue
			}
			m := labelValues.FindStringSubmatch(v.Definition)
			if m == nil {
				t.Errorf("%s: variable %s: %q is not label_values(SELECTOR, LABEL)", file, v.Name, v.Definition)
				continue
			}
			out[fmt.Sprintf("%s variable %s", file, v.Name)] = m[1]
		}
	}
	return out
}

var (
	labelValues = regexp.MustCompile(`^label_values\((.+), *[a-z_]+\)$`)
	// grafanaVar is a dashboard variable in a query: $name or ${name}.
	grafanaVar = regexp.MustCompile(`\$\{?(__[a-z_]+|[a-z_]+)\}?`)
)

// asPromQL is a dashboard query as Grafana sends it: its variables replaced, ranges by 5m.
func asPromQL(q string) string {
	return grafanaVar.ReplaceAllStringFunc(q, func(v string) string {
		if strings.HasPrefix(strings.Trim(v, "${"), "__") {
			return "5m" // $__rate_interval, $__range, $__interval
		}
		return "x"
	})
}

var promql = parser.NewParser(parser.Options{})

// Every query of the chart's dashboards, and every selector its variables list values of, is
// PromQL that Prometheus' own parser accepts.
func TestDashboardQueriesParse(t *testing.T) {
	qs := dashboardQueries(t)
	if len(qs) < 20 {
		t.Fatalf("%d dashboard queries, want the two dashboards' (at least 20)", len(qs))
	}
	for where, q := range qs {
		if _, err := promql.ParseExpr(asPromQL(q)); err != nil {
			t.Errorf("%s: %q: %v", where, q, err)
		}
	}
}

// ruleGroups renders the chart with values and returns its PrometheusRule's spec as a
// Prometheus rule file (groups:), in YAML.
func ruleGroups(t *testing.T, values map[string]any) []byte {
	t.Helper()
	out, err := manifest.Template(chartDir, manifest.Release{Name: "schedlens", Namespace: "schedlens", Values: values})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Decode([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if u.GetKind() == "PrometheusRule" {
			b, err := yaml.Marshal(u.Object["spec"])
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatal("no PrometheusRule rendered")
	return nil
}

// The chart's alerts are a rule file Prometheus loads (promtool's check, through the Prometheus
// module's rule parser: every expression parses, every annotation template is valid), with the
// workload alerts' thresholds from the values.
func TestAlertRulesParse(t *testing.T) {
	for _, c := range []struct {
		name   string
		values map[string]any
		want   []string // in the workload alerts' expressions
	}{
		{"defaults", map[string]any{}, []string{`le=~"60|60\\.0"`, `[30m]`, `> 600`, `> 900`}},
		{"thresholds", map[string]any{"workloads": map[string]any{"interruptionSeconds": 300, "interruptionWindow": "1h", "belowDesiredSeconds": 1200, "gpuWaitingSeconds": 3600}},
			[]string{`le=~"300|300\\.0"`, `[1h]`, `> 1200`, `> 3600`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr := map[string]any{"enabled": true}
			for k, v := range c.values {
				pr[k] = v
			}
			b := ruleGroups(t, map[string]any{"prometheusRule": pr})
			groups, errs := rulefmt.Parse(b, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
			for _, err := range errs {
				t.Errorf("rule file: %v\n%s", err, b)
			}
			if groups == nil {
				return
			}
			var exprs []string
			alerts := map[string]bool{}
			for _, g := range groups.Groups {
				for _, r := range g.Rules {
					alerts[r.Alert] = true
					if g.Name == "schedlens-workloads" {
						exprs = append(exprs, r.Expr)
					}
				}
			}
			for _, a := range []string{"SchedlensDisruptionInterruption", "SchedlensWorkloadBelowDesired", "SchedlensGPUPodsWaiting", "SchedlensWorkloadMetricsFailing", "SchedlensDeadLetters"} {
				if !alerts[a] {
					t.Errorf("no alert %s", a)
				}
			}
			all := strings.Join(exprs, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("the workload alerts do not say %s:\n%s", w, all)
				}
			}
		})
	}
	// Without the workload alerts, the rest stays.
	b := ruleGroups(t, map[string]any{"prometheusRule": map[string]any{"enabled": true, "workloads": map[string]any{"enabled": false}}})
	if strings.Contains(string(b), "schedlens-workloads") || !strings.Contains(string(b), "SchedlensDeadLetters") {
		t.Errorf("prometheusRule.workloads.enabled=false:\n%s", b)
	}
	// A threshold that is no bucket of the histogram is refused, saying which are.
	for _, v := range []any{45, 60.5} {
		_, err := manifest.Template(chartDir, manifest.Release{Name: "x", Namespace: "x",
			Values: map[string]any{"prometheusRule": map[string]any{"enabled": true, "workloads": map[string]any{"interruptionSeconds": v}}}})
		if err == nil || !strings.Contains(err.Error(), "want one of the interruption histogram's buckets") {
			t.Errorf("interruptionSeconds %v: %v, want a refusal naming the buckets", v, err)
		}
	}
}
