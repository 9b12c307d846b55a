package workloadmetrics_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/eventstest"
	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/store"
	"github.com/schedlens/schedlens/internal/workloadmetrics"
)

// exported renders the workload series a registry holds as sorted lines
// "name{label=value,…} value", histograms as their _count and _sum; the refresher's own metrics
// are left out.
func exported(t *testing.T, g prometheus.Gatherer) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "schedlens_workload_") || strings.HasPrefix(name, "schedlens_workload_metrics_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, n := range []string{"workload_namespace", "workload_kind", "workload_name", "kind", "reason"} {
				for _, l := range m.GetLabel() {
					if l.GetName() == n {
						ls = append(ls, n+"="+l.GetValue())
					}
				}
			}
			if len(ls) != len(m.GetLabel()) {
				t.Fatalf("%s: labels %v", name, m.GetLabel())
			}
			series := name + "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, fmt.Sprintf("%s %g", series, m.GetCounter().GetValue()))
			case dto.MetricType_GAUGE:
				out = append(out, fmt.Sprintf("%s %g", series, m.GetGauge().GetValue()))
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out = append(out, fmt.Sprintf("%s count %d sum %.3f", series, h.GetSampleCount(), h.GetSampleSum()))
			}
		}
	}
	slices.Sort(out)
	return out
}

// history is what a collector would have published: the Deployment prod/infer through a
// rollout, a drain and a node failure (eventgen.DefaultWorkload, from 02:00 on 2026-12-01); the
// day20 experiment of the day before (its pods owned by the ReplicaSet ai-lab/day20), whose
// oversized pods still wait for GPUs; two pods of the Deployment prod/train created at 02:07,
// waiting for a GPU, one refused for a taint, one the scheduler has not answered; and a pod of
// no controller beside them, waiting too.
func history(t *testing.T) (envs []*events.Envelope, workloadStart time.Time) {
	t.Helper()
	cfg := eventgen.DefaultWorkload()
	wl, _ := eventgen.Workload(cfg)
	envs = append(envs, wl...)
	envs = append(envs, eventgen.Generate(eventgen.Default())...)
	at := cfg.Start.Add(7 * time.Minute)
	for i, name := range []string{"train-7d9f8c6b5-a1", "train-7d9f8c6b5-b2", "notebook"} {
		pod := &events.PodRef{Namespace: "prod", Name: name, UID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)}
		created := at.Add(time.Duration(i) * time.Second)
		status := &events.PodStatus{Phase: events.PhasePending, CreationTimestamp: &created,
			GPU: &events.GPU{Resource: "nvidia.com/gpu", Count: 8, Sharing: events.SharingUnknown}}
		if i < 2 {
			status.Labels, status.Owner = map[string]string{events.LabelPodTemplateHash: "7d9f8c6b5"}, &events.Owner{Kind: "ReplicaSet", Name: "train-7d9f8c6b5"}
		}
		envs = append(envs, eventstest.RoundTrip(t, &events.Envelope{V: events.Version, ID: "train/" + name, Kind: events.KindPodStatus,
			Cluster: "lab", Source: "test", OccurredAt: created.Add(10 * time.Millisecond), ObservedAt: created.Add(20 * time.Millisecond), Pod: pod,
			Payload: status}))
		if i == 0 {
			note := "0/4 nodes are available: 4 node(s) had untolerated taint {dedicated: training}."
			envs = append(envs, eventstest.RoundTrip(t, &events.Envelope{V: events.Version, ID: "train/fs/" + name, Kind: events.KindK8sEvent,
				Cluster: "lab", Source: "test", OccurredAt: created.Add(time.Second), ObservedAt: created.Add(time.Second), Pod: pod,
				Payload: &events.K8sEvent{Reason: events.ReasonFailedScheduling, Type: "Warning", Note: note, Count: 1, EventUID: "fs-" + name,
					Scheduling: kube.ParseFailedScheduling(note)}}))
		}
	}
	return envs, cfg.Start
}

// appender stores the history as it happens: each call appends what occurred by then.
type appender struct {
	t    *testing.T
	db   *store.DB
	envs []*events.Envelope
	done int
}

func (a *appender) until(at time.Time) {
	a.t.Helper()
	slices.SortStableFunc(a.envs, func(x, y *events.Envelope) int { return x.OccurredAt.Compare(y.OccurredAt) })
	n := a.done
	for n < len(a.envs) && !a.envs[n].OccurredAt.After(at) {
		n++
	}
	if n > a.done {
		if _, err := a.db.Append(context.Background(), a.envs[a.done:n], nil); err != nil {
			a.t.Fatal(err)
		}
	}
	a.done = n
}

// The exported series say what the store's disruptions say: per workload and kind, how many
// and (once settled) their interruption and recovery seconds; the Deployment's replicas; the
// pods waiting for a GPU by reason class. A refresh reads incrementally without counting
// anything twice, a series appears at zero before its first observation, and the counters start
// again with the next UTC day.
func TestRefreshExportsWhatTheStoreFound(t *testing.T) {
	ctx := context.Background()
	db := pgtest.DB(t)
	envs, start := history(t)
	a := &appender{t: t, db: db, envs: envs}
	now := start.Add(-5 * time.Minute)
	reg := prometheus.NewRegistry()
	r, err := workloadmetrics.New(db, workloadmetrics.Options{Now: func() time.Time { return now }}, reg)
	if err != nil {
		t.Fatal(err)
	}
	refresh := func(at time.Time) []string {
		t.Helper()
		now = at
		a.until(at)
		if err := r.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		return exported(t, reg)
	}
	const (
		infer = "workload_namespace=prod,workload_kind=Deployment,workload_name=infer"
		exp   = "workload_namespace=ai-lab,workload_kind=ReplicaSet,workload_name=day20"
		bare  = "workload_namespace=prod,workload_kind=Pod,workload_name="
		train = "workload_namespace=prod,workload_kind=Deployment,workload_name=train"
	)
	counters := func(l string, n map[string]int) []string {
		var out []string
		for _, k := range report.DisruptionKinds {
			out = append(out, fmt.Sprintf("schedlens_workload_disruptions_total{%s,kind=%s} %d", l, k, n[k]))
		}
		return out
	}
	oversized := fmt.Sprintf("schedlens_workload_gpu_pods_waiting{%s,reason=insufficient_gpu} 2", exp)
	oversizedSince := func(got []string) string { // the oldest one's creation, as the store has it
		for _, g := range got {
			if strings.HasPrefix(g, fmt.Sprintf("schedlens_workload_gpu_pods_waiting_since_timestamp_seconds{%s,", exp)) {
				return g
			}
		}
		return "(missing)"
	}

	// 01:55: the oversized pods of the day before wait; prod/infer has no pod yet, the
	// experiment's pods are in view.
	got := refresh(now)
	want := append(counters(exp, nil), oversized, oversizedSince(got))
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("at 01:55 (-want +got):\n%s", diff)
	}

	// 02:01: prod/infer runs its three replicas.
	got = refresh(start.Add(time.Minute))
	want = append(counters(exp, nil), oversized, oversizedSince(got))
	want = append(want, counters(infer, nil)...)
	want = append(want, "schedlens_workload_desired_replicas{"+infer+"} 3", "schedlens_workload_ready_replicas{"+infer+"} 3")
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("at 02:01 (-want +got):\n%s", diff)
	}

	// 02:10: the rollout, the drain and the node failure are over and settled. Each is counted;
	// their histograms appear at zero in this refresh and hold them from the next one.
	end := start.Add(10 * time.Minute)
	got = refresh(end)
	// Created at the first observation within the creation's second (the store's precision rule).
	trainAt := float64(start.Add(7*time.Minute).Unix()) + 0.01
	waiting := []string{oversized, oversizedSince(got),
		fmt.Sprintf("schedlens_workload_gpu_pods_waiting{%s,reason=taint} 1", train),
		fmt.Sprintf("schedlens_workload_gpu_pods_waiting_since_timestamp_seconds{%s,reason=taint} %g", train, trainAt),
		fmt.Sprintf("schedlens_workload_gpu_pods_waiting{%s,reason=none} 1", train),
		fmt.Sprintf("schedlens_workload_gpu_pods_waiting_since_timestamp_seconds{%s,reason=none} %g", train, trainAt+1),
		fmt.Sprintf("schedlens_workload_gpu_pods_waiting{%s,reason=none} 1", bare),
		fmt.Sprintf("schedlens_workload_gpu_pods_waiting_since_timestamp_seconds{%s,reason=none} %g", bare, trainAt+2),
	}
	one := map[string]int{report.DisruptionRollout: 1, report.DisruptionDrain: 1, report.DisruptionNodeFailure: 1}
	want = append(counters(exp, nil), waiting...)
	want = append(want, counters(infer, one)...)
	want = append(want, "schedlens_workload_desired_replicas{"+infer+"} 3", "schedlens_workload_ready_replicas{"+infer+"} 3")
	want = append(want, counters(train, nil)...)
	want = append(want, counters(bare, nil)...)
	for _, k := range []string{report.DisruptionRollout, report.DisruptionDrain, report.DisruptionNodeFailure} {
		want = append(want, fmt.Sprintf("schedlens_workload_disruption_interruption_seconds{%s,kind=%s} count 0 sum 0.000", infer, k),
			fmt.Sprintf("schedlens_workload_disruption_recovery_seconds{%s,kind=%s} count 0 sum 0.000", infer, k))
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("at 02:10 (-want +got):\n%s", diff)
	}

	// 02:10:30 and 02:11: the histograms hold what GET /v1/disruptions says each cost; reading
	// again counts nothing twice.
	ds, err := db.Disruptions(ctx, store.WorkloadFilter{}, start.Truncate(24*time.Hour), end)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 3 {
		t.Fatalf("the store found %d disruptions, want 3", len(ds))
	}
	want = want[:0]
	for _, g := range got {
		if !strings.HasPrefix(g, "schedlens_workload_disruption_") {
			want = append(want, g)
		}
	}
	for _, d := range ds {
		a := d.Workloads[0]
		want = append(want, fmt.Sprintf("schedlens_workload_disruption_interruption_seconds{%s,kind=%s} count 1 sum %.3f", infer, d.Kind, a.Interruption.Seconds),
			fmt.Sprintf("schedlens_workload_disruption_recovery_seconds{%s,kind=%s} count 1 sum %.3f", infer, d.Kind, *a.RecoverySeconds))
	}
	slices.Sort(want)
	for _, at := range []time.Time{end.Add(30 * time.Second), end.Add(time.Minute)} {
		got = refresh(at)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("at %s (-want +got):\n%s", at.Format("15:04:05"), diff)
		}
	}

	// The next UTC day: everything counts from 0 again; the pods still in view keep their
	// series.
	next := start.Truncate(24 * time.Hour).Add(24*time.Hour + 10*time.Second)
	got = refresh(next)
	for _, g := range got {
		if strings.HasPrefix(g, "schedlens_workload_disruption") && !strings.HasSuffix(g, " 0") {
			t.Errorf("the next day: %s, want counted from 0", g)
		}
	}
	if v := gauge(t, reg, "schedlens_workload_metrics_period_start_timestamp_seconds"); v != float64(next.Truncate(24*time.Hour).Unix()) {
		t.Errorf("period start %v, want %v", v, next.Truncate(24*time.Hour).Unix())
	}
}

// gauge is a gauge's value (no labels) in g.
func gauge(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// A workload short of Ready pods without a disruption to explain it (a pod that stays not
// Ready) is exported as below desired since it began, also once that is further back than a
// refresh reads: the start carries over from refresh to refresh.
func TestBelowDesiredSinceCarriesOver(t *testing.T) {
	ctx := context.Background()
	db := pgtest.DB(t)
	cfg := eventgen.DefaultWorkload()
	cfg.Rollouts, cfg.Drains, cfg.NodeFailures, cfg.RequestsEvery = 0, 0, 0, 0
	envs, _ := eventgen.Workload(cfg)
	var first *events.Envelope
	for _, e := range envs {
		if e.Kind == events.KindPodStatus {
			first = e
			break
		}
	}
	broken := *first.Payload.(*events.PodStatus)
	broken.Phase, broken.ResourceVersion = events.PhaseRunning, "broken"
	broken.Conditions = []events.Condition{{Type: "PodScheduled", Status: "True"}, {Type: "Ready", Status: "False"}}
	since := cfg.Start.Add(time.Minute)
	envs = append(envs, eventstest.RoundTrip(t, &events.Envelope{V: events.Version, ID: "broken", Kind: events.KindPodStatus, Cluster: first.Cluster,
		Source: "test", OccurredAt: since, ObservedAt: since, Pod: first.Pod, Node: first.Node, Payload: &broken}))
	if _, err := db.Append(ctx, envs, nil); err != nil {
		t.Fatal(err)
	}
	now := cfg.Start
	reg := prometheus.NewRegistry()
	r, err := workloadmetrics.New(db, workloadmetrics.Options{Now: func() time.Time { return now }}, reg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("schedlens_workload_below_desired_since_timestamp_seconds{workload_namespace=prod,workload_kind=Deployment,workload_name=infer} %g", float64(since.Unix())),
		"schedlens_workload_desired_replicas{workload_namespace=prod,workload_kind=Deployment,workload_name=infer} 3",
		"schedlens_workload_ready_replicas{workload_namespace=prod,workload_kind=Deployment,workload_name=infer} 2",
	}
	for _, after := range []time.Duration{10 * time.Minute, 2 * time.Hour, 4 * time.Hour, 5 * time.Hour} {
		now = cfg.Start.Add(after)
		if err := r.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, g := range exported(t, reg) {
			if !strings.HasPrefix(g, "schedlens_workload_disruptions_total") {
				got = append(got, g)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s after the start (-want +got):\n%s", after, diff)
		}
	}
}
