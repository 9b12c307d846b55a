// Package compare compares the arms of an experiment with its baseline across repeats. It is
// pure: per-run data in (pods with their latency histograms, interruption seconds), intervals and
// verdicts out.
//
// Each metric is one value per run (a run's pods pooled; pending by Kaplan–Meier, with censored
// pods as lower bounds). Arm − baseline is taken repeat by repeat when both arms ran the same
// repeats. Its 95 % interval uses the larger of the between-run variance (runs − 1 degrees of
// freedom) and the within-run variance from a bootstrap over each run's pods (many more): pods
// and requests give power, runs keep the cluster state they share honest. Primary metrics (the
// definition's `metrics`) are called better or worse by Holm at family-wise alpha, guardrails
// (execution metrics) worse by Holm over one-sided p-values, and a metric not called is
// equivalent when its interval lies within its margin, else inconclusive. docs/comparison.md
// states the method, what it assumes and its simulated error rates.
package compare
