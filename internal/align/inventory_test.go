package align_test

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/align"
	"github.com/schedlens/schedlens/internal/events"
)

var (
	labScope   = events.Scope{Namespaces: []string{"ai-lab"}, Selector: "schedlens.io/experiment"}
	otherScope = events.Scope{Selector: "app=other"}
)

// inScope is a running pod snapshot as the collector publishes it, with the scope it watched.
func inScope(scope events.Scope) *events.PodStatus {
	p := running("04:32:00", "gpu-node-1", nil)
	p.Scope = &scope
	return p
}

// inventory is envelope id: a list of scope, taken at at, that named uids.
func inventory(id, at string, scope events.Scope, uids ...string) ev {
	return ev{id, events.PodRef{}, at, "", &events.Inventory{Scope: scope, PodUIDs: append([]string{}, uids...)}}
}

// heartbeat is envelope id: a watch of scope was live from since until at.
func heartbeat(id, at string, scope events.Scope, since string) ev {
	return ev{id, events.PodRef{}, at, "", &events.Heartbeat{Scope: scope, Since: tm(since)}}
}

func TestBuildInventory(t *testing.T) {
	seen := ev{"x/1", podX, "04:32:02", "gpu-node-1", inScope(labScope)}
	// The end lies in (observed_until, ended]: observed_until is the last time the pod was
	// known alive (its snapshot seen at 02.005, or a list that named it).
	unobserved := func(ended, until string) view {
		return view{
			Node:          "gpu-node-1",
			Milestones:    map[string]string{"created": "2026-11-30T04:32:00Z", "running": "2026-11-30T04:32:02Z", "ended": ended},
			EndedReason:   "deleted_unobserved",
			Durations:     map[string]string{},
			ObservedUntil: until,
			Censored:      []string{"scheduled", "ready", "first_success"},
		}
	}
	alive := view{
		Node:          "gpu-node-1",
		Milestones:    map[string]string{"created": "2026-11-30T04:32:00Z", "running": "2026-11-30T04:32:02Z"},
		Durations:     map[string]string{},
		ObservedUntil: "2026-11-30T04:32:02.005Z",
		Censored:      []string{"scheduled", "ready", "first_success"},
	}
	aliveUntil := func(until string) view {
		v := alive
		v.ObservedUntil = until
		return v
	}
	// The pod seen deleted at 04:35.
	deletion := ev{"x/2", podX, "04:35:00", "gpu-node-1", func() *events.PodStatus {
		p := inScope(labScope)
		p.Deleted = true
		return p
	}()}
	deleted := view{
		Node:          "gpu-node-1",
		Milestones:    map[string]string{"created": "2026-11-30T04:32:00Z", "running": "2026-11-30T04:32:02Z", "ended": "2026-11-30T04:35:00Z"},
		EndedReason:   "deleted",
		Durations:     map[string]string{},
		ObservedUntil: "2026-11-30T04:35:00Z",
		Censored:      []string{"scheduled", "ready", "first_success"},
	}
	cases := []struct {
		name string
		evs  []ev
		want view
	}{
		{
			name: "a list after the pod was last seen that does not name it ends it, bounded by the sighting",
			evs:  []ev{seen, inventory("inv/1", "04:40:00", labScope, uidY)},
			want: unobserved("2026-11-30T04:40:00Z", "2026-11-30T04:32:02.005Z"),
		},
		{
			name: "the earliest such list bounds the end",
			evs: []ev{seen,
				inventory("inv/2", "04:50:00", labScope),
				inventory("inv/1", "04:40:00", labScope, uidY)},
			want: unobserved("2026-11-30T04:40:00Z", "2026-11-30T04:32:02.005Z"),
		},
		{
			name: "a list that names the pod proves it alive until then",
			evs: []ev{seen,
				inventory("inv/1", "04:40:00", labScope, uidX),
				inventory("inv/2", "04:50:00", labScope)},
			want: unobserved("2026-11-30T04:50:00Z", "2026-11-30T04:40:00Z"),
		},
		{
			name: "a list that started before the pod was seen says nothing about it",
			evs:  []ev{seen, inventory("inv/0", "04:31:00", labScope)},
			want: alive,
		},
		{
			name: "a list of another scope says nothing about it",
			evs:  []ev{seen, inventory("inv/1", "04:40:00", otherScope)},
			want: alive,
		},
		{
			name: "the same scope named in another order is the same scope",
			evs: []ev{seen, inventory("inv/1", "04:40:00", events.Scope{
				Namespaces: []string{"ai-lab", "ai-lab"}, Selector: labScope.Selector})},
			want: unobserved("2026-11-30T04:40:00Z", "2026-11-30T04:32:02.005Z"),
		},
		{
			name: "an observed deletion wins over an unobserved one",
			evs: []ev{seen,
				inventory("inv/1", "04:40:00", labScope),
				deletion},
			want: deleted,
		},
		{
			name: "a heartbeat of a watch live since before the pod was last seen extends its observation",
			evs: []ev{seen,
				heartbeat("hb/1", "04:33:00", labScope, "04:31:00"),
				heartbeat("hb/2", "04:35:00", labScope, "04:31:00")},
			want: aliveUntil("2026-11-30T04:35:00Z"),
		},
		{
			name: "a watch that began after the pod was last known alive says nothing about it",
			evs:  []ev{seen, heartbeat("hb/1", "04:35:00", labScope, "04:34:00")},
			want: alive,
		},
		{
			name: "a watch that began with a list naming the pod extends it",
			evs: []ev{seen,
				inventory("inv/1", "04:34:00", labScope, uidX),
				heartbeat("hb/1", "04:36:00", labScope, "04:34:00")},
			want: aliveUntil("2026-11-30T04:36:00Z"),
		},
		{
			name: "a heartbeat of another scope says nothing about it",
			evs:  []ev{seen, heartbeat("hb/1", "04:35:00", otherScope, "04:31:00")},
			want: alive,
		},
		{
			name: "a heartbeat at or after the list that missed the pod does not extend it",
			evs: []ev{seen,
				heartbeat("hb/1", "04:33:00", labScope, "04:31:00"),
				heartbeat("hb/2", "04:45:00", labScope, "04:31:00"),
				inventory("inv/1", "04:40:00", labScope)},
			want: unobserved("2026-11-30T04:40:00Z", "2026-11-30T04:32:02.005Z"),
		},
		{
			name: "a heartbeat does not extend a pod seen to end",
			evs: []ev{seen,
				heartbeat("hb/1", "04:45:00", labScope, "04:31:00"),
				deletion},
			want: deleted,
		},
		{
			name: "a pod seen in no scope (a replayed file) is never ended by a list",
			evs: []ev{{"x/1", podX, "04:32:02", "gpu-node-1", running("04:32:00", "gpu-node-1", nil)},
				inventory("inv/1", "04:40:00", labScope)},
			want: alive,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			envs := envelopes(t, tc.evs)
			for i := range 5 {
				rand.New(rand.NewPCG(uint64(i), 7)).Shuffle(len(envs), func(a, b int) { envs[a], envs[b] = envs[b], envs[a] })
				tl, ok := align.Build(uidX, envs, events.DefaultLabelKeys)
				if !ok {
					t.Fatal("Build: no timeline")
				}
				if diff := cmp.Diff(tc.want, viewOf(tl.Summary)); diff != "" {
					t.Fatalf("order %d: summary (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestBuildInventoryOtherCluster(t *testing.T) {
	envs := envelopes(t, []ev{
		{"x/1", podX, "04:32:02", "gpu-node-1", inScope(labScope)},
		inventory("inv/1", "04:40:00", labScope),
	})
	envs[1].Cluster = "prod"
	tl, _ := align.Build(uidX, envs, events.DefaultLabelKeys)
	if tl.EndedReason != nil {
		t.Errorf("ended_reason = %q; an inventory of another cluster must not end the pod", *tl.EndedReason)
	}
}
