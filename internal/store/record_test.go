package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/eventgen"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/record"
	"github.com/schedlens/schedlens/internal/store"
)

// nodeSnapshots are node_status events for the nodes envs' pods ran on, at at: a pool label, the
// GPU model, one GPU, a taint on the shared pool, kubelet version v1.37.2.
func nodeSnapshots(t *testing.T, envs []*events.Envelope, at time.Time, label string) []*events.Envelope {
	t.Helper()
	nodes := map[string]bool{}
	for _, e := range envs {
		if s, ok := e.Payload.(*events.PodStatus); ok && s.NodeName != "" {
			nodes[s.NodeName] = true
		}
	}
	var out []*events.Envelope
	for i, n := range slices.Sorted(func(yield func(string) bool) {
		for k := range nodes {
			if !yield(k) {
				return
			}
		}
	}) {
		s := &events.NodeStatus{Ready: true, KubeletVersion: "v1.37.2",
			Labels:      map[string]string{"lab.schedlens.io/pool": fmt.Sprintf("pool-%d", i%2), "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "team": label},
			Allocatable: map[string]string{"nvidia.com/gpu": "1"}}
		if i%2 == 1 {
			s.Taints = []events.Taint{{Key: "nvidia.com/gpu.shared", Value: "true", Effect: "NoSchedule"}}
		}
		env := &events.Envelope{V: events.Version, ID: fmt.Sprintf("node/%s/%s/%d", n, label, at.UnixNano()), Kind: events.KindNodeStatus,
			Cluster: "lab", Source: "test", OccurredAt: at, ObservedAt: at, Node: n, Payload: s}
		b, err := events.Encode(env)
		if err != nil {
			t.Fatal(err)
		}
		d, err := events.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		t.Fatal("the experiment's pods name no node")
	}
	return out
}

func recordJSON(t *testing.T, db *store.DB, name string) (record.Record, []byte) {
	t.Helper()
	r, err := db.Record(context.Background(), name, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := record.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := record.Verify(r); err != nil {
		t.Fatal(err)
	}
	return r, b
}

// The record of eventgen's experiment: byte-identical on every read and whatever order the
// events were stored in; what it holds (definition keys, arms with their specs and runs' nodes,
// the cluster's pools, settings, comparison, events); a node label changed during the
// experiment changes the node in the record and the digest.
func TestRecordIsDeterministic(t *testing.T) {
	t.Parallel()
	cfg := eventgen.Default()
	envs := eventgen.Generate(cfg)
	envs = append(nodeSnapshots(t, envs, cfg.Start.Add(-time.Minute), "a"), envs...)

	db := pgtest.DB(t)
	ingestInBatches(t, db, envs, 100)
	r, first := recordJSON(t, db, cfg.Experiment)
	if _, again := recordJSON(t, db, cfg.Experiment); !bytes.Equal(first, again) {
		t.Fatal("two reads of one record differ")
	}
	shuffled := slices.Clone(envs)
	shuffle(shuffled, 7, 11)
	other := pgtest.DB(t)
	ingestInBatches(t, other, shuffled, 37)
	if _, b := recordJSON(t, other, cfg.Experiment); !bytes.Equal(first, b) {
		t.Fatalf("the record of the same events stored shuffled differs:\n%s\n---\n%s", first, b)
	}

	if r.SchemaVersion != record.SchemaVersion || !strings.HasPrefix(r.Digest, "sha256:") || r.Previous != nil {
		t.Errorf("header: %s %s %v", r.SchemaVersion, r.Digest, r.Previous)
	}
	for _, k := range []string{"name", "change", "fixed", "metrics", "repeats", "baseline", "arms", "thresholds"} {
		if _, ok := r.Definition.Keys[k]; !ok {
			t.Errorf("definition lacks key %s: %v", k, r.Definition.Keys)
		}
	}
	if len(r.Arms) != len(r.Comparison.Arms) || len(r.Arms) < len(cfg.Arms) || r.Definition.Versions != 1 {
		var names []string
		for _, a := range r.Arms {
			names = append(names, a.Name)
		}
		t.Fatalf("arms %q, definition versions %d", names, r.Definition.Versions)
	}
	for _, a := range r.Arms {
		if len(a.Specs) == 0 || slices.Contains(cfg.Arms, a.Name) && len(a.Runs) != cfg.Runs {
			t.Errorf("arm %s: %d specs, %d runs", a.Name, len(a.Specs), len(a.Runs))
		}
		for _, run := range a.Runs {
			for _, n := range run.Nodes {
				if n.KubeletVersion != "v1.37.2" || n.Labels["team"] != "a" || !strings.HasPrefix(n.Pool, "pool-") {
					t.Errorf("arm %s run %s node %+v", a.Name, run.Run, n)
				}
			}
		}
	}
	if len(r.Cluster.Pools) != 2 || r.Cluster.Pools[0].GPUs["nvidia.com/gpu"] == 0 {
		t.Errorf("cluster %+v", r.Cluster)
	}
	if r.Schedlens.Settings.Thresholds["p95_latency_ms"] != float64(800) || r.Schedlens.Settings.Alpha == 0 || r.Comparison.Baseline != "control" {
		t.Errorf("settings %+v, baseline %s", r.Schedlens.Settings, r.Comparison.Baseline)
	}
	if r.Events.Count < int64(len(envs))/2 || !strings.HasPrefix(r.Events.Digest, "sha256:") {
		t.Errorf("events %+v of %d stored", r.Events, len(envs))
	}

	// A label changed on the nodes while the experiment ran: another record.
	ingestInBatches(t, db, nodeSnapshots(t, envs, cfg.Start.Add(time.Minute), "b"), 100)
	changed, b := recordJSON(t, db, cfg.Experiment)
	if changed.Digest == r.Digest || bytes.Equal(b, first) {
		t.Fatal("a changed node label left the record as it was")
	}
	if n := changed.Arms[0].Runs[0].Nodes[0]; n.Labels["team"] != "b" {
		t.Errorf("node after the change: %+v", n)
	}
}

// A definition's previous key chains the record to the named experiment's by digest; a cycle of
// previous keys ends; an unknown experiment is ErrNotFound.
func TestRecordChains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t)
	day20 := eventgen.Default()
	ingestInBatches(t, db, eventgen.Generate(day20), 200)
	day21 := eventgen.Default()
	day21.Experiment, day21.IDPrefix, day21.Seed = "day21", "d21/", 21
	// Tomorrow's experiment in a namespace of its own, as a second lab demo runs.
	day21.Namespace, day21.Scope = "ai-lab-2", &events.Scope{Namespaces: []string{"ai-lab-2"}, Selector: events.LabelExperiment}
	day21.Start = day20.Start.Add(24 * time.Hour)
	ingestInBatches(t, db, eventgen.Generate(day21), 200)

	define := func(name, previous string, at time.Time) {
		t.Helper()
		raw := fmt.Sprintf(`{"name":%q,"change":"placement","baseline":"control","previous":%q}`, name, previous)
		var def events.Experiment
		if err := json.Unmarshal([]byte(raw), &def); err != nil {
			t.Fatal(err)
		}
		if err := db.DefineExperiment(ctx, def, at); err != nil {
			t.Fatal(err)
		}
	}
	prev, _ := recordJSON(t, db, "day20")
	define("day21", "day20", day21.Start.Add(time.Hour))
	r, _ := recordJSON(t, db, "day21")
	if r.Previous == nil || r.Previous.Experiment != "day20" || r.Previous.Digest != prev.Digest {
		t.Fatalf("previous %+v, want day20 at %s", r.Previous, prev.Digest)
	}
	if k := r.Definition.Keys["previous"]; string(k.Value) != `"day20"` || r.Definition.Versions != 2 {
		t.Errorf("definition %+v", r.Definition)
	}
	// Read in its own namespace, day21 still links day20's record (which has no pod there).
	rns, err := db.Record(ctx, "day21", "ai-lab-2")
	if err != nil {
		t.Fatal(err)
	}
	if rns.Namespace != "ai-lab-2" || rns.Previous == nil || rns.Previous.Digest != prev.Digest {
		t.Errorf("day21 in ai-lab-2: namespace %q previous %+v, want day20 at %s", rns.Namespace, rns.Previous, prev.Digest)
	}
	// A chain reaches a record imported from elsewhere: day22 names day19, known here by its
	// record only (day20's, renamed and digested again).
	day19 := prev
	day19.Experiment, day19.Previous = "day19", nil
	if day19.Digest, err = record.Digest(day19); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ImportRecord(ctx, day19); err != nil {
		t.Fatal(err)
	}
	define("day21", "day19", day21.Start.Add(2*time.Hour))
	r, _ = recordJSON(t, db, "day21")
	if r.Previous == nil || r.Previous.Experiment != "day19" || r.Previous.Digest != day19.Digest {
		t.Errorf("previous %+v, want the imported day19 at %s", r.Previous, day19.Digest)
	}
	// day20 now names day21: the cycle ends at the record that closes it.
	define("day20", "day21", day20.Start.Add(48*time.Hour))
	r20, _ := recordJSON(t, db, "day20")
	if r20.Previous == nil || r20.Previous.Experiment != "day21" || r20.Previous.Digest == "" {
		t.Errorf("day20's previous %+v", r20.Previous)
	}
	if _, err := db.Record(ctx, "day99", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown experiment: %v", err)
	}
}
