package compare

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteTable renders a comparison for a terminal: per arm its verdict and explanation, rollback
// and conditions, then each metric's role, mean [95 % interval] and, against the baseline, the
// difference [95 % interval] with its margin and verdict.
func WriteTable(w io.Writer, c Comparison) error {
	fmt.Fprintf(w, "%s: arms against %s (alpha %.3g; primary: %s)\n%s\n", c.Experiment, c.Baseline, c.Alpha, strings.Join(c.PrimaryMetrics, ", "), c.Method)
	if c.Namespace != "" {
		fmt.Fprintf(w, "pods of namespace %s only\n", c.Namespace)
	}
	if len(c.UnknownMetricWords) > 0 {
		fmt.Fprintf(w, "metrics words that name no metric: %s\n", strings.Join(c.UnknownMetricWords, ", "))
	}
	if len(c.ThresholdsChangedAfterStart) > 0 {
		fmt.Fprintf(w, "the definition in force was received after runs %s had started: their rollback conditions were not fixed in advance\n", strings.Join(c.ThresholdsChangedAfterStart, ", "))
	}
	for _, a := range c.Arms {
		fmt.Fprintln(w)
		head := fmt.Sprintf("%s — %d runs, %d pods", a.Arm, a.Runs, a.Pods)
		if a.Baseline {
			head += " (baseline)"
		} else {
			head += fmt.Sprintf(": %s — %s", strings.ToUpper(a.Verdict), a.Explanation)
		}
		fmt.Fprintln(w, head)
		if a.Rollback.Required {
			fmt.Fprintf(w, "  ROLLBACK: %s\n", strings.Join(a.Rollback.Reasons, "; "))
		}
		if p := c.Placement[a.Arm]; p != nil {
			fmt.Fprintf(w, "  placement: GPU %s; sharing %s; nodes %s\n", counts(p.GPUModels), counts(p.Sharing), counts(p.Nodes))
			if len(p.FailedScheduling) > 0 {
				fmt.Fprintf(w, "  FailedScheduling (node counts): %s\n", counts(p.FailedScheduling))
			}
		}
		if cs := a.Conditions; len(cs.NodePools) > 0 || len(cs.KubeletVersions) > 0 {
			fmt.Fprintf(w, "  measured on: node pools %s; kubelet %s\n", orDash(cs.NodePools), orDash(cs.KubeletVersions))
		}
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  metric\trole\tmean [95% CI]\tvs baseline [95% CI]\t±margin\tverdict")
		for _, m := range a.Metrics {
			if m.AcrossRun.N == 0 {
				continue
			}
			mean := fmt.Sprintf("%.3g%s", m.AcrossRun.Mean, interval(m.AcrossRun.Low, m.AcrossRun.High))
			if m.LowerBound {
				mean = "≥ " + mean
			}
			diff, margin := "", ""
			if d := m.Difference; d != nil {
				diff = fmt.Sprintf("%+.3g%s", d.Mean, interval(d.Low, d.High))
			}
			if m.Margin != nil {
				margin = fmt.Sprintf("%.3g", m.Margin.Value)
			}
			verdict := m.Verdict
			if m.RepeatsNeeded != nil {
				verdict += fmt.Sprintf(" (~%d repeats)", *m.RepeatsNeeded)
			}
			fmt.Fprintf(tw, "  %s (%s, %s better)\t%s\t%s\t%s\t%s\t%s\n", m.Metric, m.Unit, m.Better, m.Role, mean, diff, margin, verdict)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func orDash(xs []string) string {
	if len(xs) == 0 {
		return "–"
	}
	return strings.Join(xs, ", ")
}

func counts(m map[string]int) string { return JoinCounts(m, "×") }

// JoinCounts renders placement counts (nodes, GPU models, reasons) as "key×n, key×n" in key
// order, with mark between a key and its count; "–" when there are none. The terminal table
// and the experiment page both show them so.
func JoinCounts(m map[string]int, mark string) string {
	if len(m) == 0 {
		return "–"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s%s%d", k, mark, m[k]))
	}
	return strings.Join(parts, ", ")
}

func interval(lo, hi *float64) string {
	if lo == nil || hi == nil {
		return ""
	}
	return fmt.Sprintf(" [%.3g, %.3g]", *lo, *hi)
}
