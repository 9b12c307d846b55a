package collector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/metricstest"
	"github.com/schedlens/schedlens/internal/natstest"
)

// NATS goes away mid-stream; the collector keeps watching and, once NATS is back, every change
// made meanwhile arrives. With a roomy buffer every intermediate pod state is retried until it
// lands; with a tiny one the buffer overflows and the current state is re-published instead,
// so the last state of every pod arrives.
func TestCollectorSurvivesNATSOutage(t *testing.T) {
	for _, tc := range []struct {
		name         string
		buffer       int
		everyVersion bool // every intermediate state must arrive, not only the last
	}{
		{name: "buffered", buffer: 10_000, everyVersion: true},
		{name: "overflowing", buffer: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := natstest.Start(t)
			k, pods := recordedCluster(t)
			r := startCollector(t, k, srv.URL(), testOpts{buffer: tc.buffer, asyncTimeout: 300 * time.Millisecond})
			waitFor(t, 10*time.Second, "the recorded state", func() bool {
				return byKind(streamEnvelopes(t, srv.URL()))[events.KindInventory] == 1
			})

			srv.Stop()
			var want, last []string
			at := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
			for round := range 3 {
				for _, name := range []string{"day20-control-1", "day20-control-2", "day20-affinity-1", "day20-affinity-2", "day20-priority-1"} {
					status := corev1.ConditionFalse
					if round%2 == 1 {
						status = corev1.ConditionTrue
					}
					p := k.updatePod(t, name, func(p *corev1.Pod) { setReady(p, status, at.Add(time.Duration(round)*time.Minute)) })
					id := fmt.Sprintf("pod_status/%s/%s", p.UID, p.ResourceVersion)
					want = append(want, id)
					if round == 2 {
						last = append(last, id)
					}
				}
			}
			for i := range 3 {
				p := pods[0].DeepCopy()
				p.Name, p.UID, p.ResourceVersion = fmt.Sprintf("day20-late-%d", i), types.UID(k8sUID(0xb0+i)), k.nextRV()
				if _, err := k.client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				id := fmt.Sprintf("pod_status/%s/%s", p.UID, p.ResourceVersion)
				want, last = append(want, id), append(last, id)
			}
			waitFor(t, 10*time.Second, "publishes to fail while NATS is down", func() bool {
				return metricstest.Value(t, r.reg, "schedlens_collector_publish_failures_total") > 0
			})
			if err := r.c.Ready(); err != nil {
				t.Errorf("collector not ready while NATS is down: %v; it must keep watching", err)
			}

			srv.Restart()
			expect := want
			if !tc.everyVersion {
				expect = last
			}
			waitFor(t, 20*time.Second, "every change made during the outage", func() bool {
				return containsIDs(streamEnvelopes(t, srv.URL()), expect)
			})
			checkNoDoubles(t, streamEnvelopes(t, srv.URL()))
			if !tc.everyVersion {
				if n := metricstest.Value(t, r.reg, "schedlens_collector_buffer_overflows_total"); n == 0 {
					t.Error("the tiny buffer never overflowed: the test did not exercise re-publishing")
				}
				if n := metricstest.Value(t, r.reg, "schedlens_collector_resyncs_total"); n == 0 {
					t.Error("no re-publish of the current state after the overflow")
				}
			}
			waitFor(t, 10*time.Second, "the buffer to empty", func() bool { return metricstest.Registered(t, r.reg, "schedlens_collector_buffered") == 0 })
		})
	}
}

func k8sUID(n int) string { return fmt.Sprintf("0f0f0f0f-0000-4000-8000-%012x", n) }
