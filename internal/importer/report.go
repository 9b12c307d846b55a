package importer

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Most pods and waiting groups Write lists one by one (all are counted).
const (
	maxPodsListed   = 5
	maxGroupsListed = 20
)

// Write prints the report for a terminal: the publish line scripts already parse, then what
// was stored, attributed and why the rest waits.
func (r *Report) Write(w io.Writer) {
	fmt.Fprintf(w, "published %d request results (%d already in the stream), %d rejected lines, %d not acknowledged\n",
		r.Published.Acked, r.Published.Duplicates, r.Rejected, r.Published.Failed)
	if !r.ReadBack {
		fmt.Fprintln(w, "not read back (-wait 0): GET /v1/stats and /v1/unattributed-requests show what waits for a pod")
		return
	}
	fmt.Fprintf(w, "stored: %d new, %d already stored, %d stored before ids included the cluster, %d not stored within %s",
		r.StoredNew, r.AlreadyStored, r.StoredLegacy, r.NotStored, r.Wait)
	if r.Repeated > 0 {
		fmt.Fprintf(w, " (%d lines repeated a result of an earlier line)", r.Repeated)
	}
	fmt.Fprintln(w)

	total := r.Attributed + r.Waiting
	fmt.Fprintf(w, "attributed to pods: %d of %d", r.Attributed, total)
	if len(r.Pods) > 0 {
		var ps []string
		for _, p := range r.Pods[:min(len(r.Pods), maxPodsListed)] {
			ps = append(ps, fmt.Sprintf("%s/%s %d", p.Pod.Namespace, p.Pod.Name, p.N))
		}
		if len(r.Pods) > maxPodsListed {
			ps = append(ps, fmt.Sprintf("%d more pods", len(r.Pods)-maxPodsListed))
		}
		fmt.Fprintf(w, " (%s)", strings.Join(ps, ", "))
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "waiting for a pod: %d", r.Waiting)
	if r.Waiting == 0 {
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, " — no pod of their cluster held their IP when they were sent (cluster %q", r.Cluster)
	if r.ClusterDefaulted {
		fmt.Fprint(w, ", the default: no -cluster was given")
	}
	fmt.Fprintln(w, "):")
	var elsewhere []string
	known := 0 // groups whose IP another cluster knew
	for i, g := range r.Groups {
		if len(g.ClustersWithIP) > 0 {
			known++
		}
		for _, c := range g.ClustersWithIP {
			if !slices.Contains(elsewhere, c) {
				elsewhere = append(elsewhere, c)
			}
		}
		if i >= maxGroupsListed {
			continue
		}
		fmt.Fprintf(w, "  %s in cluster %q: %s", g.IP, g.Cluster, plural(g.N, "result"))
		if g.N == 1 {
			fmt.Fprintf(w, " sent %s", g.First.Format(time.RFC3339Nano))
		} else {
			fmt.Fprintf(w, " sent %s to %s", g.First.Format(time.RFC3339Nano), g.Last.Format(time.RFC3339Nano))
		}
		if g.IPSeenFrom != nil {
			fmt.Fprintf(w, "; a pod of %q was first seen with it only at %s", g.Cluster, g.IPSeenFrom.UTC().Format(time.RFC3339Nano))
		} else {
			fmt.Fprintf(w, "; no pod of %q was ever seen with it", g.Cluster)
		}
		switch len(g.ClustersWithIP) {
		case 0:
			fmt.Fprintln(w, "; no other cluster had a pod with it then")
		default:
			fmt.Fprintf(w, "; a pod of %s held it then\n", quoted(g.ClustersWithIP))
		}
	}
	if len(r.Groups) > maxGroupsListed {
		fmt.Fprintf(w, "  … and %d more IPs\n", len(r.Groups)-maxGroupsListed)
	}
	these := "these IPs"
	if known < len(r.Groups) {
		these = fmt.Sprintf("%d of these IPs", known)
	}
	switch {
	case len(elsewhere) == 1:
		fmt.Fprintf(w, "hint: pods of cluster %q held %s: import again with -cluster %s (nothing already stored is stored twice)\n", elsewhere[0], these, elsewhere[0])
	case len(elsewhere) > 1:
		fmt.Fprintf(w, "hint: pods of clusters %s held %s: import the results again with the right -cluster\n", quoted(elsewhere), these)
	default:
		fmt.Fprintln(w, "hint: they are attributed as soon as the correlator stores snapshots of the pods that held these IPs (collector run or replay for that cluster)")
	}
	fmt.Fprintln(w, "GET /v1/unattributed-requests lists every result that waits")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func quoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
