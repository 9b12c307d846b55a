// Package metricstest reads what a Prometheus registry holds, for tests that check a
// component's counters and gauges.
package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Value is the counter or gauge name summed over its label values: 0 when g holds none (a
// vector nothing has been counted in yet).
func Value(t testing.TB, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	v, _ := lookup(t, g, name)
	return v
}

// Registered is Value, failing the test when g does not hold name at all, so that a renamed
// metric is not read as 0. A vector nothing was counted in yet gathers nothing: when g is also
// a Registerer (a *prometheus.Registry), such a name is told apart from an unknown one by
// registering a probe of that name, which a registry refuses for a name it holds.
func Registered(t testing.TB, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	v, ok := lookup(t, g, name)
	if ok {
		return v
	}
	if r, isReg := g.(prometheus.Registerer); isReg {
		probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "metricstest probe"})
		if err := r.Register(probe); err != nil {
			return 0 // the name is registered: a vector without values
		}
		r.Unregister(probe)
	}
	t.Fatalf("%s not registered", name)
	return 0
}

func lookup(t testing.TB, g prometheus.Gatherer, name string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			}
		}
		return sum, true
	}
	return 0, false
}
