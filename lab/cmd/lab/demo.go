package main

import (
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
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"gonum.org/v1/gonum/stat"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/lab/experiment"
	"github.com/schedlens/schedlens/lab/labenv"
	"github.com/schedlens/schedlens/lab/manifest"
	"github.com/schedlens/schedlens/lab/stack"
)

// demo runs schedlens beside the lab, runs the experiment and prints what it saw.
func demo(ctx context.Context, o options, l *labenv.Lab, def *experiment.Definition, extra []*unstructured.Unstructured, logger *slog.Logger, stdout io.Writer) error {
	if err := ensureDatabase(ctx, o.databaseURL); err != nil {
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
	s, err := stack.Start(ctx, stack.Options{
		Client: l.Client, DatabaseURL: o.databaseURL, HTTPAddr: o.httpAddr, Namespaces: []string{ns},
		NATSDir: filepath.Join(o.dir, "nats"), Logger: logger, DCGMTargets: l.DCGMTargets,
	})
	if err != nil {
		return err
	}
	defer s.Stop()
	fmt.Fprintf(stdout, "schedlens: collector watching namespace %s, api http://%s\n", ns, s.APIAddr)
	fmt.Fprintf(stdout, "experiment %s: %d arms × %d repeats, %d pods each, disruptions %v\n\n",
		def.Name, len(def.Arms), def.Repeats, def.Fixed.Pods, def.Disruptions)

	runner := &experiment.Runner{Client: l.Client, Nodes: l.Kubelet, Namespace: ns, Progress: progress(stdout)}
	start := time.Now()
	if err := runner.Run(ctx, def); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nexperiment done in %s; waiting for schedlens to store everything\n", time.Since(start).Round(time.Second))
	deadline := time.Now().Add(30 * time.Second)
	for {
		idle, err := s.Idle(ctx)
		if err == nil && idle {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pipeline not idle after 30s: %v %v", err, s.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
	pods, err := listPods(ctx, s.APIAddr, ns)
	if err != nil {
		return err
	}
	printSummary(stdout, def, pods)
	if err := printComparison(ctx, stdout, s.APIAddr, def.Name, ns, def.Baseline); err != nil {
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

// printComparison reads the comparison of the experiment's arms from the API and prints it.
func printComparison(ctx context.Context, w io.Writer, addr, name, ns, baseline string) error {
	q := url.Values{"baseline": {baseline}, "namespace": {ns}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/experiments/"+url.PathEscape(name)+"/comparison?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("comparison: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("comparison: HTTP %d", resp.StatusCode)
	}
	var c api.Comparison
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return fmt.Errorf("comparison: %w", err)
	}
	fmt.Fprintln(w)
	return api.WriteTable(w, c)
}

// listPods reads every pod of the namespace from the API.
func listPods(ctx context.Context, addr, ns string) ([]align.Summary, error) {
	var out []align.Summary
	cursor := ""
	for {
		q := url.Values{"namespace": {ns}, "limit": {"500"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/pods?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("list pods: %w", err)
		}
		var page struct {
			Pods       []align.Summary `json:"pods"`
			NextCursor *string         `json:"next_cursor"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("list pods: %w", err)
		}
		out = append(out, page.Pods...)
		if page.NextCursor == nil {
			return out, nil
		}
		cursor = *page.NextCursor
	}
}

// printSummary prints, per arm (repeats pooled), what the timelines say. The comparison with
// intervals and verdicts is the API's job; this is the at-a-glance view.
func printSummary(w io.Writer, def *experiment.Definition, pods []align.Summary) {
	byArm := map[string][]align.Summary{}
	for _, p := range pods {
		if p.Experiment.Arm != nil {
			byArm[*p.Experiment.Arm] = append(byArm[*p.Experiment.Arm], p)
		}
	}
	var order []string
	for _, a := range def.Arms {
		order = append(order, a.Name)
	}
	for _, arm := range slices.Sorted(maps.Keys(byArm)) {
		if !slices.Contains(order, arm) {
			order = append(order, arm)
		}
	}
	fmt.Fprintf(w, "\n%s — per arm, %d repeats pooled (seconds unless named; p50 / p95 over pods; latency = each pod's p50; errors include those before Ready)\n", def.Name, def.Repeats)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\tpods\tscheduled\tnever\tpreempted\trestarts\tpending\tstart\tmodel load\tcreated→ready\tready→1st ok\tlatency ms\terrors\tGPU util %\tGPU models")
	for _, arm := range order {
		ps := byArm[arm]
		if len(ps) == 0 {
			continue
		}
		var scheduled, preempted, restarts int
		var pending, startD, load, toReady, firstOK, latency, util []float64
		var requests, errs int
		models := map[string]int{}
		for _, p := range ps {
			if p.Milestones.Scheduled != nil {
				scheduled++
			}
			if p.EndedReason != nil && *p.EndedReason == align.EndPreempted {
				preempted++
			}
			restarts += p.Counts.Restarts
			add := func(xs *[]float64, v *float64) {
				if v != nil {
					*xs = append(*xs, *v)
				}
			}
			add(&pending, p.Durations.Pending)
			add(&startD, p.Durations.Start)
			add(&load, p.Durations.ModelLoad)
			add(&firstOK, p.Durations.ReadyToFirstSuccess)
			if r := p.Requests; r != nil {
				requests, errs = requests+r.Count, errs+r.Errors
				if v, ok := r.LatencyMS["p50"]; ok {
					latency = append(latency, v)
				}
			}
			if g := p.GPU; g != nil {
				util = append(util, g.UtilMean)
			}
			if p.Milestones.Created != nil && p.Milestones.Ready != nil {
				toReady = append(toReady, p.Milestones.Ready.Sub(*p.Milestones.Created).Seconds())
			}
			if p.Pod.Node != nil {
				models[nodeModel(*p.Pod.Node)]++
			}
		}
		label := arm
		if arm == def.Baseline {
			label += " (baseline)"
		}
		errRate := "–"
		if requests > 0 {
			errRate = fmt.Sprintf("%.0f%% of %d", 100*float64(errs)/float64(requests), requests)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", label, len(ps), scheduled, len(ps)-scheduled, preempted, restarts,
			quantiles(pending), quantiles(startD), quantiles(load), quantiles(toReady), quantiles(firstOK), quantiles(latency), errRate, quantiles(util), modelList(models))
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

// quantiles renders the empirical p50 and p95 of xs.
func quantiles(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	slices.Sort(xs)
	return fmt.Sprintf("%.2f / %.2f", stat.Quantile(0.5, stat.Empirical, xs, nil), stat.Quantile(0.95, stat.Empirical, xs, nil))
}

// ensureDatabase creates the database of url when it does not exist yet.
func ensureDatabase(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err == nil {
		return conn.Close(ctx)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" {
		return fmt.Errorf("connect to %s: %w", dbURL, err)
	}
	u, perr := url.Parse(dbURL)
	if perr != nil {
		return fmt.Errorf("database url: %w", perr)
	}
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	admin, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}
