package metricstest_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/metricstest"
)

// fatalTB records a Fatalf and ends its goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// registered runs Registered on a TB that records a failure instead of ending the test.
func registered(t *testing.T, g prometheus.Gatherer, name string) (float64, string) {
	tb := &fatalTB{TB: t}
	var v float64
	done := make(chan struct{})
	go func() {
		defer close(done)
		v = metricstest.Registered(tb, g, name)
	}()
	<-done
	return v, tb.fatal
}

// Registered reads a counter, reads a vector nothing was counted in as 0, and fails for a name
// the registry does not hold — the renamed metric a test comparing with 0 must not pass on.
func TestRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"})
	c.Add(2)
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "y_total", Help: "y"}, []string{"kind"})
	reg.MustRegister(c, vec)

	if v, fatal := registered(t, reg, "x_total"); v != 2 || fatal != "" {
		t.Errorf("x_total: %v, %q; want 2 and no failure", v, fatal)
	}
	if v, fatal := registered(t, reg, "y_total"); v != 0 || fatal != "" {
		t.Errorf("y_total (no values): %v, %q; want 0 and no failure", v, fatal)
	}
	if _, fatal := registered(t, reg, "renamed_total"); fatal == "" {
		t.Error("renamed_total: no failure; want one")
	}
	// The probe leaves nothing behind.
	if _, fatal := registered(t, reg, "renamed_total"); fatal == "" {
		t.Error("renamed_total, asked again: no failure; want one")
	}
	vec.WithLabelValues("a").Inc()
	if v, fatal := registered(t, reg, "y_total"); v != 1 || fatal != "" {
		t.Errorf("y_total: %v, %q; want 1 and no failure", v, fatal)
	}
}
