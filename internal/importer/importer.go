// Package importer is `collector import` once its input is parsed: it publishes the request
// results, then reads back through the API what the correlator made of them — stored,
// attributed to a pod, or waiting for one and why — so that results which reached no pod are
// reported instead of kept aside unseen. Before publishing it asks which results are stored
// already, under their ids or under the ids they had before ids included the cluster, so a
// re-import stores nothing twice.
package importer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/ingest"
)

// Published is what JetStream acknowledged of one publish.
type Published struct {
	Acked      int // acknowledged, including Duplicates
	Duplicates int // already in the stream (its duplicate window)
	Failed     int // not acknowledged
}

// Publish sends envelopes to JetStream; Lookup reads stored results back by id (Client.Lookup).
type (
	Publish func(ctx context.Context, envs []*events.Envelope) (Published, error)
	Lookup  func(ctx context.Context, ids []string) ([]State, error)
)

// Config says how to import.
type Config struct {
	// Cluster is the results' cluster; ClusterDefaulted says no -cluster chose it.
	Cluster          string
	ClusterDefaulted bool
	// Wait is the longest time without progress to wait for the correlator to store what was
	// published. 0 publishes without reading back (and without the check for stored results).
	Wait time.Duration
	// Poll is the time between read-backs (250 ms when 0).
	Poll time.Duration
	// RequireAttributed makes a result waiting for a pod (or not stored in time) an error.
	RequireAttributed bool
}

// Report is what an import did, for Write and Err.
type Report struct {
	Config
	Rejected  int       // input lines rejected by the parser
	Repeated  int       // results whose id an earlier line of the input already had
	Published Published // what JetStream acknowledged
	ReadBack  bool      // whether the states below were read back

	StoredNew     int // stored by the correlator for this import
	AlreadyStored int // stored before, under the same id: not published again
	StoredLegacy  int // stored before ids included the cluster, in the same cluster: not published again
	NotStored     int // published but not stored within Wait

	Attributed int
	Pods       []PodCount  // attributed results per pod, most first
	Waiting    int         // stored, waiting for a pod
	Groups     []WaitGroup // the waiting results by cluster and IP, earliest first
}

// PodCount is how many of the results landed on one pod.
type PodCount struct {
	Pod events.PodRef
	N   int
}

// WaitGroup is the waiting results of one IP in one cluster that wait for the same reason.
type WaitGroup struct {
	Cluster, IP    string
	N              int
	First, Last    time.Time // when the first and last of them were sent
	IPSeenFrom     *time.Time
	ClustersWithIP []string
}

// Run publishes results and reports what became of them. It fails before publishing anything
// when the read-back cannot start (the API is unreachable): run with Wait 0 to publish
// without it. Errors while waiting are retried until Wait passes without progress.
func Run(ctx context.Context, cfg Config, results []ingest.Result, rejected int, publish Publish, lookup Lookup) (*Report, error) {
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	r := &Report{Config: cfg, Rejected: rejected, ReadBack: cfg.Wait > 0}
	seen := map[string]bool{}
	var unique []ingest.Result
	for _, res := range results {
		if seen[res.Envelope.ID] {
			r.Repeated++
			continue
		}
		seen[res.Envelope.ID] = true
		unique = append(unique, res)
	}

	states := map[string]State{} // by the result's current id
	toPublish := unique
	if r.ReadBack {
		var err error
		if toPublish, err = r.skipStored(ctx, unique, lookup, states); err != nil {
			return nil, fmt.Errorf("%w (start the api, point -api-url at it, or give -wait 0 to publish without reading back)", err)
		}
	}
	envs := make([]*events.Envelope, len(toPublish))
	for i, res := range toPublish {
		envs[i] = res.Envelope
	}
	var pubErr error
	if len(envs) > 0 {
		r.Published, pubErr = publish(ctx, envs)
	}
	if r.ReadBack && r.Published.Acked > 0 {
		r.StoredNew = waitStored(ctx, cfg, envs, r.Published.Acked, lookup, states)
		r.NotStored = max(0, r.Published.Acked-r.StoredNew)
	}
	r.summarise(states)
	return r, pubErr
}

// skipStored looks up every result under its id and its pre-cluster id, records the states of
// those stored already, and returns the others.
func (r *Report) skipStored(ctx context.Context, results []ingest.Result, lookup Lookup, states map[string]State) ([]ingest.Result, error) {
	ids := make([]string, 0, 2*len(results))
	for _, res := range results {
		ids = append(ids, res.Envelope.ID)
		if res.LegacyID != "" {
			ids = append(ids, res.LegacyID)
		}
	}
	found, err := lookup(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]State, len(found))
	for _, s := range found {
		byID[s.ID] = s
	}
	var rest []ingest.Result
	for _, res := range results {
		if s, ok := byID[res.Envelope.ID]; ok {
			states[res.Envelope.ID] = s
			r.AlreadyStored++
			continue
		}
		// The same result imported before ids included the cluster: stored once is enough. In
		// another cluster, or on another pod than the one the result names now (a corrected
		// -host-pod), it is another result: the mistake a re-import corrects.
		if s, ok := byID[res.LegacyID]; ok && res.LegacyID != "" && s.Cluster == res.Envelope.Cluster && samePod(res.Envelope.Pod, s.Pod) {
			states[res.Envelope.ID] = s
			r.StoredLegacy++
			continue
		}
		rest = append(rest, res)
	}
	return rest, nil
}

// samePod reports whether a stored result is on the pod a result names; a result that names
// none (only an IP) is attributed by the correlator, so any stored attribution matches.
func samePod(named, stored *events.PodRef) bool {
	return named == nil || (stored != nil && stored.UID == named.UID)
}

// waitStored reads the published results back until acked of them are stored or cfg.Wait
// passes without one more stored, and returns how many were.
//
// The correlator stores the stream in order, so a round asks for the pending ids oldest first,
// a chunk at a time, and ends at the first chunk it finds partly stored: the correlator is at
// work there and the later chunks are not stored yet. A chunk with nothing stored does not end
// the round (it may hold only ids that were never acknowledged).
func waitStored(ctx context.Context, cfg Config, envs []*events.Envelope, acked int, lookup Lookup, states map[string]State) int {
	pending := make([]string, len(envs))
	for i, env := range envs {
		pending[i] = env.ID
	}
	stored := 0
	lastProgress := time.Now()
	for len(pending) > 0 && stored < acked {
		got := map[string]bool{}
		for start := 0; start < len(pending); start += lookupChunk {
			chunk := pending[start:min(start+lookupChunk, len(pending))]
			found, err := lookup(ctx, chunk)
			if err != nil {
				break // retried next round, until cfg.Wait passes without progress
			}
			for _, s := range found {
				states[s.ID] = s
				got[s.ID] = true
			}
			if len(found) > 0 && len(found) < len(chunk) {
				break
			}
		}
		if len(got) > 0 {
			pending = slices.DeleteFunc(pending, func(id string) bool { return got[id] })
			stored += len(got)
			lastProgress = time.Now()
		}
		if stored >= acked || time.Since(lastProgress) >= cfg.Wait {
			break
		}
		t := time.NewTimer(cfg.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return stored
		case <-t.C:
		}
	}
	return stored
}

// summarise counts the states: per pod, and the waiting ones by cluster, IP and reason.
func (r *Report) summarise(states map[string]State) {
	pods := map[string]*PodCount{}
	groups := map[string]*WaitGroup{}
	for _, s := range states {
		switch {
		case s.Pod != nil:
			r.Attributed++
			pc := pods[s.Pod.UID]
			if pc == nil {
				pc = &PodCount{Pod: *s.Pod}
				pods[s.Pod.UID] = pc
			}
			pc.N++
		case s.Waiting != nil:
			r.Waiting++
			w := s.Waiting
			seenFrom := ""
			if w.IPSeenFrom != nil {
				seenFrom = w.IPSeenFrom.UTC().Format(time.RFC3339Nano)
			}
			key := strings.Join([]string{s.Cluster, w.IP, seenFrom, strings.Join(w.ClustersWithIP, ",")}, "\x00")
			g := groups[key]
			if g == nil {
				g = &WaitGroup{Cluster: s.Cluster, IP: w.IP, First: s.OccurredAt, Last: s.OccurredAt, IPSeenFrom: w.IPSeenFrom, ClustersWithIP: w.ClustersWithIP}
				groups[key] = g
			}
			g.N++
			if s.OccurredAt.Before(g.First) {
				g.First = s.OccurredAt
			}
			if s.OccurredAt.After(g.Last) {
				g.Last = s.OccurredAt
			}
		}
	}
	for _, pc := range pods {
		r.Pods = append(r.Pods, *pc)
	}
	slices.SortFunc(r.Pods, func(a, b PodCount) int {
		return cmp.Or(cmp.Compare(b.N, a.N), strings.Compare(a.Pod.Namespace+"/"+a.Pod.Name, b.Pod.Namespace+"/"+b.Pod.Name), strings.Compare(a.Pod.UID, b.Pod.UID))
	})
	for _, g := range groups {
		r.Groups = append(r.Groups, *g)
	}
	slices.SortFunc(r.Groups, func(a, b WaitGroup) int {
		return cmp.Or(a.First.Compare(b.First), strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.IP, b.IP))
	})
}

// Err is nil when nothing was rejected or lost on the way, and, with RequireAttributed,
// every result landed on a pod; otherwise it says what was not.
func (r *Report) Err() error {
	var errs []error
	if r.Rejected > 0 {
		errs = append(errs, fmt.Errorf("%d rejected lines", r.Rejected))
	}
	if r.Published.Failed > 0 {
		errs = append(errs, fmt.Errorf("%d results not acknowledged by JetStream (import again: ids are deterministic)", r.Published.Failed))
	}
	if r.NotStored > 0 {
		errs = append(errs, fmt.Errorf("%d results not stored by the correlator within %s (they are in the stream: is the correlator running? see GET /v1/dead-letters)", r.NotStored, r.Wait))
	}
	if r.RequireAttributed {
		switch {
		case !r.ReadBack:
			errs = append(errs, errors.New("-require-attributed needs the read-back (-wait > 0)"))
		case r.Waiting > 0:
			errs = append(errs, fmt.Errorf("%d results wait for a pod (-require-attributed)", r.Waiting))
		}
	}
	return errors.Join(errs...)
}
