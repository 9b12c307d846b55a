package workloadmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
	"github.com/schedlens/schedlens/internal/report"
	"github.com/schedlens/schedlens/internal/workload"
)

// Label names. Not "namespace": a scrape target's own namespace label would rename it.
var (
	workloadLabels   = []string{"workload_namespace", "workload_kind", "workload_name"}
	disruptionLabels = append(workloadLabels[:3:3], "kind")
	waitingLabels    = append(workloadLabels[:3:3], "reason")
)

var (
	disruptionsDesc = prometheus.NewDesc("schedlens_workload_disruptions_total",
		"Disruptions that touched the workload, by kind (rollout, drain, node_failure, preemption, scale), counted when first found, since the start of the UTC day.",
		disruptionLabels, nil)
	interruptionDesc = prometheus.NewDesc("schedlens_workload_disruption_interruption_seconds",
		"Seconds a disruption left the workload with fewer pods Ready than desired, observed once settled (over, and the workload recovered), since the start of the UTC day.",
		disruptionLabels, nil)
	recoveryDesc = prometheus.NewDesc("schedlens_workload_disruption_recovery_seconds",
		"Seconds from a disruption's start until the workload had as many pods Ready as desired again, observed once settled, since the start of the UTC day.",
		disruptionLabels, nil)
	desiredDesc = prometheus.NewDesc("schedlens_workload_desired_replicas",
		"Replicas the workload's controller (Deployment, StatefulSet, ReplicaSet) wants now.", workloadLabels, nil)
	readyDesc = prometheus.NewDesc("schedlens_workload_ready_replicas",
		"The workload's pods Ready now.", workloadLabels, nil)
	belowDesc = prometheus.NewDesc("schedlens_workload_below_desired_since_timestamp_seconds",
		"When the workload's current time with fewer pods Ready than desired began (Unix time); absent while it has as many.", workloadLabels, nil)
	waitingDesc = prometheus.NewDesc("schedlens_workload_gpu_pods_waiting",
		"The workload's pods asking for GPUs that are not scheduled now, by the class of the scheduler's latest reason.", waitingLabels, nil)
	waitingSinceDesc = prometheus.NewDesc("schedlens_workload_gpu_pods_waiting_since_timestamp_seconds",
		"When the longest waiting of those pods was created (Unix time).", waitingLabels, nil)
	periodDesc = prometheus.NewDesc("schedlens_workload_metrics_period_start_timestamp_seconds",
		"The start of the UTC day the disruption counters and histograms count from (Unix time).", nil, nil)

	descs = []*prometheus.Desc{disruptionsDesc, interruptionDesc, recoveryDesc, desiredDesc, readyDesc, belowDesc, waitingDesc, waitingSinceDesc, periodDesc}
)

// labels is how a workload is labelled: pods without a controller count together per namespace
// (kind Pod, no name), so a namespace of bare pods is one series, not one per pod.
type labels struct{ namespace, kind, name string }

func labelsOf(w events.WorkloadRef) labels {
	if w.Kind == "Pod" { // events.WorkloadOf's workload of a pod without a controller
		return labels{w.Namespace, w.Kind, ""}
	}
	return labels{w.Namespace, w.Kind, w.Name}
}

func (l labels) values(extra ...string) []string {
	return append([]string{l.namespace, l.kind, l.name}, extra...)
}

// dkey is a workload's series of one disruption kind.
type dkey struct {
	labels
	kind string
}

// histogram is a const histogram's state: cumulative counts per bound of Buckets.
type histogram struct {
	count   uint64
	sum     float64
	buckets []uint64
}

func (h *histogram) observe(v float64) {
	if h.buckets == nil {
		h.buckets = make([]uint64, len(Buckets))
	}
	h.count++
	h.sum += v
	for i, b := range Buckets {
		if v <= b {
			h.buckets[i]++
		}
	}
}

func (h *histogram) metric(d *prometheus.Desc, values []string) prometheus.Metric {
	b := make(map[float64]uint64, len(Buckets))
	for i, ub := range Buckets {
		if h.buckets != nil {
			b[ub] = h.buckets[i]
		} else {
			b[ub] = 0
		}
	}
	return prometheus.MustNewConstHistogram(d, h.count, h.sum, b, values...)
}

// tally is what the refreshes of one period have counted, and what the next one must read
// again.
type tally struct {
	origin    time.Time // the period's start
	next      time.Time // the previous refresh's time less Lag: where the next read starts
	refreshes int
	counted   map[string]bool      // disruption id + workload: counted in disruptions
	observed  map[string]bool      // … observed in the histograms
	unsettled map[string]time.Time // … not yet observed: the disruption's start
	counts    map[dkey]uint64
	// interruption and recovery hold a workload's histograms from the refresh that first saw
	// a disruption of that kind touch it (born): an observation made in a later refresh than
	// the series' first export is seen by rate() and increase() (a series that appears
	// already at 1 is not).
	interruption, recovery map[dkey]*histogram
	born                   map[dkey]int
	// short carries each workload's below-desired start across refreshes: a read sees an
	// hour before its window, a shortfall may be older.
	short map[labels]time.Time
}

func newTally(origin time.Time) *tally {
	return &tally{origin: origin, counted: map[string]bool{}, observed: map[string]bool{}, unsettled: map[string]time.Time{},
		counts: map[dkey]uint64{}, interruption: map[dkey]*histogram{}, recovery: map[dkey]*histogram{}, born: map[dkey]int{},
		short: map[labels]time.Time{}}
}

// from is where the next read's window starts: the previous refresh's time less Lag, or the
// start of the oldest disruption not settled yet, never before the period's start.
func (t *tally) from() time.Time {
	from := t.origin
	if !t.next.IsZero() {
		from = t.next
	}
	for _, s := range t.unsettled {
		if s.Before(from) {
			from = s
		}
	}
	if from.Before(t.origin) {
		from = t.origin
	}
	return from
}

// settledAt is when what d cost the workload of a stopped changing: d over and the workload
// recovered; false while either lasts.
func settledAt(d report.Disruption, a report.Affected) (time.Time, bool) {
	if d.End == nil || a.RecoveredAt == nil {
		return time.Time{}, false
	}
	return workload.Until(d, a, *a.RecoveredAt), true
}

// update counts what a read of in (whose disruptions are ds) found, and returns the snapshot to
// serve at now.
func (t *tally) update(in workload.Input, ds []report.Disruption, pending []report.PendingPod, now time.Time) []prometheus.Metric {
	seen := map[string]bool{}
	for _, d := range ds {
		for _, a := range d.Workloads {
			id := d.ID + "\x00" + a.Workload.String()
			k := dkey{labelsOf(a.Workload), d.Kind}
			if !d.Start.Before(t.origin) && !t.counted[id] {
				t.counted[id] = true
				t.counts[k]++
			}
			if t.observed[id] {
				continue
			}
			at, settled := settledAt(d, a)
			if settled && at.Before(t.origin) {
				continue // settled in an earlier period
			}
			if _, ok := t.born[k]; !ok {
				t.born[k] = t.refreshes
				t.interruption[k], t.recovery[k] = &histogram{}, &histogram{}
			}
			if settled && !at.After(now.Add(-Settle)) && (t.refreshes == 0 || t.born[k] < t.refreshes) {
				t.interruption[k].observe(a.Interruption.Seconds)
				t.recovery[k].observe(*a.RecoverySeconds)
				t.observed[id] = true
				continue
			}
			seen[id] = true
			t.unsettled[id] = d.Start
		}
	}
	for id := range t.unsettled {
		if !seen[id] {
			delete(t.unsettled, id) // found no more (its facts changed): nothing left to settle
		}
	}
	t.next = now.Add(-Lag)
	t.refreshes++

	// The workloads now: those with a pod alive in the last Window. Their controllers' own
	// desired counts only: one inferred from the pods (a Job, a bare pod) reads as short once its
	// pods have ended.
	cur := in
	cur.From = now.Add(-Window)
	workloads := map[labels]bool{}
	var out []prometheus.Metric
	below := workload.BelowDesired(cur, in.From.Add(-Window))
	short := map[labels]time.Time{}
	for _, s := range workload.Summaries(cur, nil) {
		l := labelsOf(s.WorkloadRef)
		workloads[l] = true
		if !s.Observed {
			continue
		}
		out = append(out, prometheus.MustNewConstMetric(desiredDesc, prometheus.GaugeValue, float64(s.Desired), l.values()...),
			prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, float64(s.Ready), l.values()...))
		since, ok := below[s.WorkloadRef]
		if !ok {
			continue
		}
		if prev, ok := t.short[l]; ok && prev.Before(since) && !since.After(in.From.Add(-Window)) {
			since = prev // under way when this read's sight began: as the previous refresh saw it
		}
		short[l] = since
		out = append(out, prometheus.MustNewConstMetric(belowDesc, prometheus.GaugeValue, unix(since), l.values()...))
	}
	t.short = short

	for l := range workloads {
		for _, kind := range report.DisruptionKinds {
			if _, ok := t.counts[dkey{l, kind}]; !ok {
				t.counts[dkey{l, kind}] = 0 // exported from 0, so the first one counts in increase()
			}
		}
	}
	for k, n := range t.counts {
		out = append(out, prometheus.MustNewConstMetric(disruptionsDesc, prometheus.CounterValue, float64(n), k.values(k.kind)...))
	}
	for k, h := range t.interruption {
		out = append(out, h.metric(interruptionDesc, k.values(k.kind)), t.recovery[k].metric(recoveryDesc, k.values(k.kind)))
	}

	type wkey struct {
		labels
		reason string
	}
	waiting := map[wkey]int{}
	oldest := map[wkey]time.Time{}
	for _, p := range pending {
		k := wkey{labelsOf(p.Workload), kube.ReasonClass(p.Scheduling)}
		waiting[k]++
		if o, ok := oldest[k]; !ok || p.Since.Before(o) {
			oldest[k] = p.Since
		}
	}
	for k, n := range waiting {
		out = append(out, prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(n), k.values(k.reason)...),
			prometheus.MustNewConstMetric(waitingSinceDesc, prometheus.GaugeValue, unix(oldest[k]), k.values(k.reason)...))
	}
	out = append(out, prometheus.MustNewConstMetric(periodDesc, prometheus.GaugeValue, unix(t.origin)))
	return out
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
