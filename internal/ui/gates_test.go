package ui_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/pipetest"
)

// Where the wait was, drawn: on the run page a gated pod's lane starts with the gate's own
// segment and marks where the gate went, and a pod with DRA claims marks when they were
// allocated; pods of the other arms show neither.
func TestRunPageShowsGatesAndClaims(t *testing.T) {
	ctx := browser(t)
	p := pipetest.Start(t)
	cfg := eventgen.Default()
	cfg.DRA, cfg.Runs = true, 1
	p.Publish(eventgen.Generate(cfg))
	srv := serve(t, p)
	do(t, ctx, chromedp.Navigate(srv.URL+"/ui/experiments/day20/runs/1"), chromedp.WaitVisible(chromedp.CSS(`#timeline .lane`)))
	count := func(arm, selector string) int {
		return eval[int](t, ctx, `[...document.querySelectorAll('#timeline [data-group="`+arm+`"] .lane')].filter(l => l.querySelector('`+selector+`')).length`)
	}
	for _, c := range []struct {
		arm, selector string
		want          int
	}{
		{"affinity", `rect.bar.gated`, cfg.PodsPerArm},
		{"affinity", `[data-milestone="gated"]`, cfg.PodsPerArm},
		{"sharing", `[data-milestone="claim_allocated"]`, cfg.PodsPerArm},
		{"control", `rect.bar.gated`, 0},
		{"control", `[data-milestone="claim_allocated"]`, 0},
		{"sharing", `[data-milestone="gated"]`, 0},
	} {
		if got := count(c.arm, c.selector); got != c.want {
			t.Errorf("%s lanes with %s: %d, want %d", c.arm, c.selector, got, c.want)
		}
	}
}
