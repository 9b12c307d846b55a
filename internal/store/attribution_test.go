package store_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/eventstest"
	"github.com/schedlens/schedlens/internal/pgtest"
)

// ipOnly turns a request envelope into one an external load generator would send: no pod,
// only the pod's IP.
func ipOnly(t *testing.T, env *events.Envelope, ip string) *events.Envelope {
	t.Helper()
	return ipOnlyID(t, env, ip, env.ID)
}

func ipOnlyID(t *testing.T, env *events.Envelope, ip, id string) *events.Envelope {
	t.Helper()
	r := *env.Payload.(*events.Request)
	r.PodIP = ip
	return eventstest.RoundTrip(t, &events.Envelope{V: env.V, ID: id, Kind: env.Kind, Cluster: env.Cluster, Source: "vegeta",
		OccurredAt: env.OccurredAt, ObservedAt: env.ObservedAt, Payload: &r})
}

// Results that name only a pod IP land on the pod that held the IP when they were sent —
// whether they arrive after the pod's snapshots or before them — and count exactly as if they
// had named the pod. A result for an IP no pod held is kept aside, not counted.
func TestRequestsAttributedByPodIP(t *testing.T) {
	t.Parallel()
	envs := eventgen.Generate(eventgen.Default())
	ips := map[string]string{}
	for _, e := range envs {
		if p, ok := e.Payload.(*events.PodStatus); ok && p.PodIP != "" {
			ips[e.Pod.UID] = p.PodIP
		}
	}
	var plain, anonymous []*events.Envelope
	for _, e := range envs {
		if e.Kind == events.KindRequest {
			anonymous = append(anonymous, ipOnly(t, e, ips[e.Pod.UID]))
		} else {
			plain = append(plain, e)
		}
	}
	// A result for an address no pod ever held (a copy of a real one, another id and IP).
	stray := ipOnlyID(t, anonymous[0], "127.255.255.254", "request/vegeta/stray")

	for name, order := range map[string][]*events.Envelope{
		"results after the snapshots":  append(append(append([]*events.Envelope{}, plain...), anonymous...), stray),
		"results before the snapshots": append(append([]*events.Envelope{stray}, anonymous...), plain...),
	} {
		t.Run(name, func(t *testing.T) {
			db := pgtest.DB(t)
			ingestInBatches(t, db, order, 53)
			total := 0
			for _, uid := range podUIDs(plain) {
				want, _ := align.Build(uid, envs, events.DefaultLabelKeys)
				got := timelines(t, db, []string{uid})[uid]
				if diff := cmp.Diff(want.Counts, got.Counts); diff != "" {
					t.Errorf("pod %s counts (-named +by IP):\n%s", want.Pod.Name, diff)
				}
				if diff := cmp.Diff(want.Milestones.FirstSuccess, got.Milestones.FirstSuccess); diff != "" {
					t.Errorf("pod %s first success (-named +by IP):\n%s", want.Pod.Name, diff)
				}
				if diff := cmp.Diff(want.Requests, got.Requests); diff != "" {
					t.Errorf("pod %s request summary (-named +by IP):\n%s", want.Pod.Name, diff)
				}
				total += got.Counts.Requests
			}
			if total != len(anonymous) {
				t.Errorf("%d requests attributed, want %d (the stray result for an IP no pod held counts nowhere)", total, len(anonymous))
			}
		})
	}
}
