package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/scope"
)

// RunDetail and PodSeries read their pods' events within the pods' first and last sightings
// (so that Postgres skips the hours of samples outside them): an event that is the first or
// the last must still be read, and every scheduling failure, GPU sample and request with it.
func TestRunDetailReadsItsPodsEventsToTheEdges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t)
	cfg := eventgen.Default()
	envs := eventgen.Generate(cfg)
	// One pod of run 2, the first and last time of anything stored, and an event of each kind
	// to copy: the pod's own first and last events become the edges of the run's span.
	var pod *events.PodRef
	var failure, sample *events.Envelope
	var first, last time.Time
	for _, env := range envs {
		switch p := env.Payload.(type) {
		case *events.K8sEvent:
			if p.Reason == "FailedScheduling" && failure == nil {
				failure = env
			}
		case *events.GPUSample:
			if _, ok := p.Metrics["DCGM_FI_DEV_GPU_UTIL"]; ok && sample == nil {
				sample = env
			}
		case *events.PodStatus:
			if pod == nil && p.Labels[events.LabelRun] == "2" {
				pod = env.Pod
			}
		}
		// The edges of everything stored: the read's bounds are its pods' span as a whole.
		if first.IsZero() || env.OccurredAt.Before(first) {
			first = env.OccurredAt
		}
		if env.OccurredAt.After(last) {
			last = env.OccurredAt
		}
	}
	if pod == nil || failure == nil || sample == nil {
		t.Fatal("eventgen made no run-2 pod, FailedScheduling or GPU utilisation sample")
	}
	before, after := first.Add(-time.Second), last.Add(time.Second)
	envs = append(envs, copyAt(t, failure, "edge/first", pod, before), copyAt(t, sample, "edge/last", pod, after))
	if _, err := db.Append(ctx, envs, nil); err != nil {
		t.Fatal(err)
	}
	d, err := db.RunDetail(ctx, cfg.Experiment, cfg.Namespace, "2", scope.All)
	if err != nil {
		t.Fatal(err)
	}
	fs, gpu := d.FailedScheduling[pod.UID], d.GPU[pod.UID]
	if len(fs) == 0 || !fs[0].At.Equal(before) {
		t.Errorf("pod %s's scheduling failures %v: want its first event, at %s, first", pod.Name, fs, before)
	}
	if len(gpu) == 0 || !gpu[len(gpu)-1].At.Equal(after) {
		t.Errorf("pod %s's GPU samples end %v: want its last event, at %s, last", pod.Name, gpu, after)
	}
	// Every failure and sample of the run's pods and the victims beside them, counted from
	// what was stored.
	in := map[string]bool{}
	for _, p := range append(d.Pods, d.Outside...) {
		in[p.Pod.UID] = true
	}
	var wantFS, wantGPU, gotFS, gotGPU int
	for _, env := range envs {
		if !in[env.PodUID()] {
			continue
		}
		switch p := env.Payload.(type) {
		case *events.K8sEvent:
			if p.Reason == "FailedScheduling" {
				wantFS++
			}
		case *events.GPUSample:
			if _, ok := p.Metrics["DCGM_FI_DEV_GPU_UTIL"]; ok {
				wantGPU++
			}
		}
	}
	for _, f := range d.FailedScheduling {
		gotFS += len(f)
	}
	for _, g := range d.GPU {
		gotGPU += len(g)
	}
	if gotFS != wantFS || gotGPU != wantGPU {
		t.Errorf("run 2 read %d scheduling failures and %d GPU samples; its pods have %d and %d", gotFS, gotGPU, wantFS, wantGPU)
	}
	t.Logf("%d pods, %d failures, %d GPU samples", len(in), gotFS, gotGPU)

	// The pod page's series, read within the pod's own span the same way.
	series, err := db.PodSeries(ctx, pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	var requests, samples int
	for _, env := range envs {
		if env.PodUID() != pod.UID {
			continue
		}
		switch p := env.Payload.(type) {
		case *events.Request:
			requests++
		case *events.GPUSample:
			if _, ok := p.Metrics["DCGM_FI_DEV_GPU_UTIL"]; ok {
				samples++
			}
		}
	}
	if n := len(series.GPU); n != samples || !series.GPU[n-1].At.Equal(after) {
		t.Errorf("pod %s's series: %d GPU samples, the last at %v; want %d, the last at %s", pod.Name, n, series.GPU[max(n-1, 0)].At, samples, after)
	}
	if len(series.Requests) != requests {
		t.Errorf("pod %s's series: %d requests, want %d", pod.Name, len(series.Requests), requests)
	}
}
