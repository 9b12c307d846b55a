package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/lab/disrupt"
	"github.com/schedlens/schedlens/lab/experiment"
	"github.com/schedlens/schedlens/lab/labenv"
	"github.com/schedlens/schedlens/lab/manifest"
	"github.com/schedlens/schedlens/lab/stack"
)

// demo runs schedlens beside the lab, runs the experiment and prints what it saw.
func demo(ctx context.Context, o options, l *labenv.Lab, def *experiment.Definition, extra []*unstructured.Unstructured, logger *slog.Logger, stdout io.Writer) error {
	if err := store.EnsureDatabase(ctx, o.databaseURL); err != nil {
		return err
	}
	// A namespace per demo keeps this run's pods apart from earlier ones in the same database.
	ns := fmt.Sprintf("%s-%s", def.Name, time.Now().UTC().Format("20060102-150405"))
	if _, err := l.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	// The manifests' other objects (PriorityClasses), their namespace replaced by the demo's.
	if len(extra) > 0 {
		a, err := manifest.NewApplier(l.REST)
		if err != nil {
			return err
		}
		for _, u := range extra {
			if u.GetNamespace() != "" {
				u.SetNamespace(ns)
			}
		}
		if err := a.Apply(ctx, extra, ns); err != nil {
			return fmt.Errorf("apply the manifests: %w", err)
		}
	}
	// The workload scenario's namespace, dated like the experiment's.
	prod := "prod" + strings.TrimPrefix(ns, def.Name)
	namespaces := []string{ns}
	if o.workload {
		namespaces = append(namespaces, prod)
	}
	s, err := stack.Start(ctx, stack.Options{
		Client: l.Client, DatabaseURL: o.databaseURL, HTTPAddr: o.httpAddr, Namespaces: namespaces,
		NATSDir: filepath.Join(o.dir, "nats"), Logger: logger, DCGMTargets: l.DCGMTargets,
	})
	if err != nil {
		return err
	}
	defer s.Stop()
	// On a database an earlier demo stored to, this one is the next of a chain (docs/records.md);
	// otherwise the definition's own previous, if it names one, stands.
	name, previous, err := chainName(ctx, s.APIAddr, def.Name)
	if err != nil {
		return err
	}
	def.Name, def.Previous = name, cmp.Or(previous, def.Previous)
	fmt.Fprintf(stdout, "schedlens: collector watching namespace %s, api http://%s\n", ns, s.APIAddr)
	fmt.Fprintf(stdout, "web UI (updates live): %s\n", uiURL(s.APIAddr, def.Name, ns, ""))
	fmt.Fprintf(stdout, "experiment %s: %d arms × %d repeats, %d pods each, disruptions %v\n\n",
		def.Name, len(def.Arms), def.Repeats, def.Fixed.Pods, def.Disruptions)

	runner := &experiment.Runner{Client: l.Client, Nodes: l.Kubelet, Namespace: ns, Progress: progress(stdout)}
	start := time.Now()
	if err := runner.Run(ctx, def); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nexperiment done in %s\n", time.Since(start).Round(time.Second))
	workloadStart := time.Now()
	if o.workload {
		if err := workload(ctx, l, prod, stdout); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, "waiting for schedlens to store everything")
	// Caught up with what was published so far: the workload's pods are still probed.
	caught, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = s.CaughtUp(caught)
	cancel()
	if err != nil {
		return fmt.Errorf("%w %v", err, s.Err())
	}
	if err := countDisruptions(ctx, stdout, s.APIAddr, ns, start.Add(-time.Minute)); err != nil {
		return err
	}
	if o.workload {
		if err := printDisruptions(ctx, stdout, s.APIAddr, prod, workloadStart.Add(-time.Minute)); err != nil {
			return err
		}
	}
	c, err := comparison(ctx, s.APIAddr, def.Name, ns, def.Baseline)
	if err != nil {
		return err
	}
	printSummary(stdout, def, c)
	if err := checkPage(ctx, uiURL(s.APIAddr, def.Name, ns, "1")); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nin the web UI: %s (runs: %s)\n\n", uiURL(s.APIAddr, def.Name, ns, ""), uiURL(s.APIAddr, def.Name, ns, "1"))
	if err := printRecord(ctx, stdout, s.APIAddr, def.Name); err != nil {
		return err
	}
	if err := compare.WriteTable(stdout, c); err != nil {
		return err
	}
	if err := errors.Join(s.Err(), l.Err()); err != nil {
		return err
	}
	if o.exit {
		return nil
	}
	fmt.Fprintf(stdout, "\nThe API stays up until Ctrl-C:\n  curl -s 'http://%s/v1/pods?namespace=%s&arm=%s' | jq .\n  curl -s http://%s/v1/pods/<uid>/timeline | jq .\n",
		s.APIAddr, ns, def.Baseline, s.APIAddr)
	<-ctx.Done()
	return nil
}

// chainName names this demo's experiment: base when the database holds no experiment of that
// name, else base-N after the highest base-N there (base itself counting as 1), with that
// latest one as previous, so that a demo run again on the same database chains its record to
// the last one's.
func chainName(ctx context.Context, addr, base string) (name, previous string, err error) {
	var list struct {
		Experiments []struct {
			Name string `json:"name"`
		} `json:"experiments"`
	}
	if err := getJSON(ctx, "http://"+addr+"/v1/experiments", &list); err != nil {
		return "", "", fmt.Errorf("list experiments: %w", err)
	}
	last := 0
	for _, e := range list.Experiments {
		if e.Name == base {
			last = max(last, 1)
		} else if n, err := strconv.Atoi(strings.TrimPrefix(e.Name, base+"-")); err == nil && n > 1 && e.Name == fmt.Sprintf("%s-%d", base, n) {
			last = max(last, n)
		}
	}
	switch last {
	case 0:
		return base, "", nil
	case 1:
		return base + "-2", base, nil
	default:
		return fmt.Sprintf("%s-%d", base, last+1), fmt.Sprintf("%s-%d", base, last), nil
	}
}

// printRecord says where the experiment's record is, with its digest and the record it chains
// to (docs/records.md). The experiment is this demo's alone, so its record is read over every
// namespace: the reading a later record's previous link names.
func printRecord(ctx context.Context, w io.Writer, addr, name string) error {
	var r struct {
		Digest string `json:"digest"`
		Events struct {
			Count int64 `json:"count"`
		} `json:"events"`
		Previous *struct {
			Experiment string `json:"experiment"`
			Digest     string `json:"digest"`
		} `json:"previous"`
	}
	u := "http://" + addr + "/v1/experiments/" + url.PathEscape(name) + "/record"
	if err := getJSON(ctx, u, &r); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	fmt.Fprintf(w, "the record of its conditions and results (%d events): %s\n  %s\n", r.Events.Count, r.Digest, u)
	if p := r.Previous; p != nil {
		fmt.Fprintf(w, "chained to the record of %s (the previous demo on this database): %s\n  what changed since: http://%s/ui/experiments/%s/against/%s\n",
			p.Experiment, cmp.Or(p.Digest, "(none stored)"), addr, url.PathEscape(name), url.PathEscape(p.Experiment))
	}
	fmt.Fprintln(w)
	return nil
}

// uiURL is the web UI's page of the experiment (or of one of its runs) for this demo's namespace.
func uiURL(addr, name, ns, run string) string {
	u := "http://" + addr + "/ui/experiments/" + url.PathEscape(name)
	if run != "" {
		u += "/runs/" + url.PathEscape(run)
	}
	return u + "?" + url.Values{"namespace": {ns}}.Encode()
}

// checkPage fails unless the web UI answers url with a page.
func checkPage(ctx context.Context, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("web UI: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("web UI: %s answered HTTP %d", u, resp.StatusCode)
	}
	return nil
}

// progress prints one line per arm and scenario as it finishes, and a header per repeat.
func progress(w io.Writer) func(experiment.Progress) {
	lastRun := 0
	return func(p experiment.Progress) {
		if p.Run != lastRun {
			lastRun = p.Run
			fmt.Fprintf(w, "repeat %d/%d\n", p.Run, p.Runs)
		}
		if p.Phase != "done" {
			return
		}
		line := fmt.Sprintf("  %-16s %d/%d Ready  %5.1fs", p.Arm, p.Ready, p.Of, p.Elapsed.Seconds())
		if len(p.Unready) > 0 {
			line += fmt.Sprintf("  (not Ready: %s)", strings.Join(p.Unready, ", "))
		}
		fmt.Fprintln(w, line)
	}
}

// comparison reads the comparison of the experiment's arms in namespace ns from the API.
func comparison(ctx context.Context, addr, name, ns, baseline string) (compare.Comparison, error) {
	var c compare.Comparison
	q := url.Values{"baseline": {baseline}, "namespace": {ns}}
	err := getJSON(ctx, "http://"+addr+"/v1/experiments/"+url.PathEscape(name)+"/comparison?"+q.Encode(), &c)
	if err != nil {
		return c, fmt.Errorf("comparison: %w", err)
	}
	return c, nil
}

// getJSON reads a JSON answer of the API into v.
func getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// countDisruptions prints how many disruptions of each kind schedlens found in the experiment's
// namespace since from: its disruption scenarios (rolling update, drain, node rejoin) and the
// priority arm's preemptions, found from what happened — the scenario labels play no part.
func countDisruptions(ctx context.Context, w io.Writer, addr, ns string, from time.Time) error {
	q := url.Values{"namespace": {ns}, "from": {from.UTC().Format(time.RFC3339)}, "to": {"now"}, "limit": {"1000"}}
	var page struct {
		Disruptions []report.Disruption `json:"disruptions"`
	}
	if err := getJSON(ctx, "http://"+addr+"/v1/disruptions?"+q.Encode(), &page); err != nil {
		return fmt.Errorf("disruptions: %w", err)
	}
	count := map[string]int{}
	for _, d := range page.Disruptions {
		count[d.Kind]++
	}
	var parts []string
	for _, k := range report.DisruptionKinds {
		if count[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, count[k]))
		}
	}
	fmt.Fprintf(w, "disruptions schedlens found in namespace %s (from what happened; no label read): %s\n", ns, strings.Join(parts, ", "))
	return nil
}

// printDisruptions prints what schedlens found happened to the workload scenario's namespace
// since from (GET /v1/disruptions), oldest first: each disruption with what it cost the
// Deployment, and where to look in the web UI.
func printDisruptions(ctx context.Context, w io.Writer, addr, ns string, from time.Time) error {
	q := url.Values{"namespace": {ns}, "from": {from.UTC().Format(time.RFC3339)}, "to": {"now"}}
	var page struct {
		Disruptions []report.Disruption `json:"disruptions"`
	}
	if err := getJSON(ctx, "http://"+addr+"/v1/disruptions?"+q.Encode(), &page); err != nil {
		return fmt.Errorf("disruptions: %w", err)
	}
	fmt.Fprintf(w, "\nwhat schedlens found in namespace %s, from what happened (no schedlens labels; GET /v1/disruptions?namespace=%s):\n", ns, ns)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  kind\tnode\tstart\tlasted\tworkload\tinterrupted\tfewest Ready\trecovery\tno success\treplacements (pending, model load)")
	secs := func(p *float64) string {
		if p == nil {
			return "—"
		}
		return fmt.Sprintf("%.1fs", *p)
	}
	for i := len(page.Disruptions) - 1; i >= 0; i-- {
		d := page.Disruptions[i]
		lasted := "open"
		if d.End != nil {
			lasted = fmt.Sprintf("%.1fs", d.End.Sub(d.Start).Seconds())
		}
		for _, a := range d.Workloads {
			var repl []string
			for _, r := range a.Replacements {
				repl = append(repl, fmt.Sprintf("%s (%s, %s)", r.Name, secs(r.PendingSeconds), secs(r.ModelLoadSeconds)))
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%.1fs\t%d of %d\t%s\t%s\t%s\n", d.Kind, cmpOr(d.Node, "—"), d.Start.Format("15:04:05.000"), lasted,
				a.Workload.Kind+"/"+a.Workload.Name, a.Interruption.Seconds, a.Interruption.FewestReady, a.Desired, secs(a.RecoverySeconds),
				secs(a.Interruption.NoSuccessSeconds), strings.Join(repl, ", "))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "in the web UI: http://%s/ui/disruptions?%s and the workload: http://%s/ui/workloads/%s/Deployment/infer?from=-1h\n",
		addr, url.Values{"namespace": {ns}}.Encode(), addr, url.PathEscape(ns))
	return nil
}

func cmpOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// printSummary prints, per arm, the at-a-glance view: pods, how many never scheduled and how many
// were preempted over the repeats, then the across-repeat means of the comparison's per-run
// metrics (the same numbers the comparison below judges; "≥" marks a lower bound) and where the
// pods ran.
func printSummary(w io.Writer, def *experiment.Definition, c compare.Comparison) {
	order := make([]string, 0, len(c.Arms))
	for _, a := range def.Arms {
		order = append(order, a.Name)
	}
	byArm := map[string]compare.ArmResult{}
	for _, a := range c.Arms {
		byArm[a.Arm] = a
		if !slices.Contains(order, a.Arm) {
			order = append(order, a.Arm)
		}
	}
	fmt.Fprintf(w, "\n%s — per arm, mean over %d repeats of each repeat's value (seconds unless named; error rate of requests sent to Ready pods)\n", def.Name, def.Repeats)
	cols := []struct{ head, metric, format string }{
		{"pending p50", "pending_p50_s", "%.3f"}, {"pending p95", "pending_p95_s", "%.3f"},
		{"start", "start_p50_s", "%.2f"}, {"model load", "model_load_p50_s", "%.2f"},
		{"created→1st ok", "time_to_first_success_p50_s", "%.2f"},
		{"latency p50 ms", "latency_p50_ms", "%.1f"}, {"latency p95 ms", "latency_p95_ms", "%.1f"},
		{"error rate", "error_rate", "%.3f"}, {"pre-Ready errors/pod", "pre_ready_errors", "%.1f"},
		{"GPU util %", "gpu_util_mean_pct", "%.1f"},
	}
	gated := slices.ContainsFunc(def.Arms, func(a experiment.Arm) bool { return a.Gate != nil })
	if gated {
		// Where the wait was, when an arm waits behind a scheduling gate (docs/dra.md).
		cols = append(cols, struct{ head, metric, format string }{"gated p95", "gated_p95_s", "%.3f"},
			struct{ head, metric, format string }{"schedulable p95", "schedulable_wait_p95_s", "%.3f"})
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	head := "arm\tpods\tscheduled\tnever\tpreempted"
	for _, col := range cols {
		head += "\t" + col.head
	}
	fmt.Fprintln(tw, head+"\tGPU and sharing\tGPU pools")
	for _, arm := range order {
		a, ok := byArm[arm]
		if !ok {
			continue
		}
		label := arm
		if a.Baseline {
			label += " (baseline)"
		}
		sum := func(metric string) int {
			n := 0.0
			for _, m := range a.Metrics {
				if m.Metric == metric {
					for _, v := range m.Runs {
						n += v
					}
				}
			}
			return int(n)
		}
		never := sum("never_scheduled")
		line := fmt.Sprintf("%s\t%d\t%d\t%d\t%d", label, a.Pods, a.Pods-never, never, sum("preemptions_suffered"))
		for _, col := range cols {
			cell := "–"
			for _, m := range a.Metrics {
				if m.Metric == col.metric && m.AcrossRun.N > 0 {
					cell = fmt.Sprintf(col.format, m.AcrossRun.Mean)
					if m.LowerBound {
						cell = "≥ " + cell
					}
				}
			}
			line += "\t" + cell
		}
		pools := map[string]int{}
		gpu := "–"
		if p := c.Placement[arm]; p != nil {
			for node, n := range p.Nodes {
				pools[nodeModel(node)] += n
			}
			// The GPU each arm's pods got and how they shared it, device plugin or DRA alike.
			gpu = strings.Join(slices.Sorted(maps.Keys(p.GPUModels)), ",") + " " + strings.Join(slices.Sorted(maps.Keys(p.Sharing)), ",")
		}
		fmt.Fprintln(tw, line+"\t"+gpu+"\t"+modelList(pools))
	}
	tw.Flush()
}

// nodeModel names a lab node's pool (gpu-<pool>-<n>).
func nodeModel(node string) string {
	s := strings.TrimPrefix(node, "gpu-")
	if i := strings.LastIndexByte(s, '-'); i > 0 {
		return s[:i]
	}
	return s
}

func modelList(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s×%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// workload runs the workload scenario (package disrupt) in namespace ns and prints what it did.
func workload(ctx context.Context, l *labenv.Lab, ns string, stdout io.Writer) error {
	w := &disrupt.Workload{Client: l.Client, Nodes: l.Kubelet, Namespace: ns}
	d := w.Deployment()
	fmt.Fprintf(stdout, "\nworkload: Deployment %s/%s, %d pods of %s with one GPU each, no schedlens labels, through a rollout, a drain and a node failure\n",
		ns, d.Name, *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
	rep, err := w.Run(ctx)
	if err != nil {
		return fmt.Errorf("workload scenario: %w", err)
	}
	printWorkload(stdout, rep)
	return nil
}

// printWorkload prints the workload scenario's steps, each with its times from its start.
func printWorkload(w io.Writer, rep *disrupt.WorkloadReport) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	secs := func(from, to time.Time) string { return fmt.Sprintf("%.1fs", to.Sub(from).Seconds()) }
	fmt.Fprintf(tw, "  ready\t\t%d pods Ready %s after the Deployment was created\n", len(rep.Disruptions[0].Pods), secs(rep.Created, rep.Ready))
	for _, d := range rep.Disruptions {
		switch d.Kind {
		case report.DisruptionRollout:
			fmt.Fprintf(tw, "  %s\t\treplicaset %s → %s: complete in %s\n", d.Kind, d.FromReplicaSet, d.ToReplicaSet, secs(d.Start, d.End))
		case report.DisruptionDrain:
			fmt.Fprintf(tw, "  %s\t%s\tcordoned, %d evicted (Eviction API), replaced and Ready %s after the eviction, uncordoned at %s\n",
				d.Kind, d.Node, len(d.Pods), secs(d.Evicted, d.Recovered), secs(d.Start, d.End))
		case report.DisruptionNodeFailure:
			fmt.Fprintf(tw, "  %s\t%s\theartbeats stopped; NotReady at %s, %d pods deleted by the controller at %s, replacements Ready at %s, rejoined at %s\n",
				d.Kind, d.Node, secs(d.Start, d.NotReady), len(d.Pods), secs(d.Start, d.Evicted), secs(d.Start, d.Recovered), secs(d.Start, d.End))
		}
	}
	fmt.Fprintf(tw, "  total\t\t%s\n", secs(rep.Created, rep.Finished))
	tw.Flush()
}
