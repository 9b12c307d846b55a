package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/schedlens/schedlens/internal/events"
)

// MaxLookup bounds the ids of one RequestStates call (and of POST /v1/requests/lookup).
const MaxLookup = 1000

// RequestState is what became of one stored request result: attributed to a pod, or waiting
// for one.
type RequestState struct {
	ID         string         `json:"id"`
	Cluster    string         `json:"cluster"`
	Source     string         `json:"source"`
	OccurredAt time.Time      `json:"occurred_at"`
	Pod        *events.PodRef `json:"pod"`     // the pod that served it; nil while it waits
	Waiting    *WaitReason    `json:"waiting"` // why it waits; nil once attributed
}

// WaitReason says why a result that names only a pod IP is not attributed: no pod of its
// cluster held the IP when it was sent (by the attribution rule: the pod that most recently
// took the IP, seen with it at most 2 s after the request).
type WaitReason struct {
	IP string `json:"ip"`
	// IPSeenFrom is when a pod of the result's own cluster was first seen with the IP — after
	// the result was sent, or it would be attributed — or nil when none was.
	IPSeenFrom *time.Time `json:"ip_seen_from"`
	// ClustersWithIP are the other clusters in which a pod held the IP when the result was
	// sent: imported again with one of them as its cluster, the result would be attributed.
	ClustersWithIP []string `json:"clusters_with_ip"`
	// Reason says the above in a sentence.
	Reason string `json:"reason"`
}

// UnattributedRequest is one waiting result, as GET /v1/unattributed-requests lists it.
type UnattributedRequest struct {
	ID         string    `json:"id"`
	Cluster    string    `json:"cluster"`
	Source     string    `json:"source"`
	OccurredAt time.Time `json:"occurred_at"`
	WaitReason
}

// UnattributedFilter selects waiting results; empty fields match everything.
type UnattributedFilter struct {
	Cluster, Source string
}

// UnattributedPage is one page of waiting results and the cursor of the next ("" at the end).
type UnattributedPage struct {
	Requests   []UnattributedRequest
	NextCursor string
}

// waitColumns explain a waiting result u; $1 is ipHoldSlack.
const waitColumns = `u.ip,
    (SELECT min(q.first_seen) FROM pod_ips q WHERE q.ip = u.ip AND q.cluster = u.cluster),
    ARRAY(SELECT DISTINCT q.cluster FROM pod_ips q
          WHERE q.ip = u.ip AND q.cluster <> u.cluster AND q.first_seen <= u.occurred_at + $1::interval
          ORDER BY 1)`

// RequestStates returns what became of the stored request results among ids (at most
// MaxLookup), ordered by id; ids not stored (yet) are absent.
func (db *DB) RequestStates(ctx context.Context, ids []string) ([]RequestState, error) {
	if len(ids) > MaxLookup {
		return nil, fmt.Errorf("request states: %d ids, at most %d", len(ids), MaxLookup)
	}
	rows, err := db.pool.Query(ctx, `
		SELECT e.id, e.cluster, e.source, e.occurred_at, e.pod_uid,
		       COALESCE(p.namespace, e.envelope->'pod'->>'namespace'), COALESCE(p.name, e.envelope->'pod'->>'name'),
		       `+waitColumns+`
		FROM events e
		LEFT JOIN pods p ON p.uid = e.pod_uid
		LEFT JOIN unattributed_requests u ON u.event_id = e.id
		WHERE e.id = ANY($2::text[]) AND e.kind = 'request'
		ORDER BY e.id`, ipHoldSlack.String(), ids)
	if err != nil {
		return nil, fmt.Errorf("request states: %w", err)
	}
	out := []RequestState{}
	var (
		s             RequestState
		uid, ns, name *string
		ip            *string
		w             WaitReason
	)
	_, err = pgx.ForEachRow(rows, []any{&s.ID, &s.Cluster, &s.Source, &s.OccurredAt, &uid, &ns, &name, &ip, &w.IPSeenFrom, &w.ClustersWithIP}, func() error {
		st := s
		st.OccurredAt = st.OccurredAt.UTC()
		switch {
		case uid != nil:
			st.Pod = &events.PodRef{Namespace: deref(ns), Name: deref(name), UID: *uid}
		case ip != nil:
			wr := w
			wr.IP = *ip
			wr.explain(st.Cluster, st.OccurredAt)
			st.Waiting = &wr
		}
		out = append(out, st)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("request states: %w", err)
	}
	return out, nil
}

type requestCursor struct {
	At time.Time `json:"t"`
	ID string    `json:"i"`
}

// decodeRequestCursor reads a cursor of Unattributed. Its id must be one an envelope could
// have: text Postgres accepts (valid UTF-8, no NUL) of at most events.MaxIDLen bytes.
func decodeRequestCursor(s string) (requestCursor, error) {
	var c requestCursor
	if !decodeToken(s, &c) || c.ID == "" || len(c.ID) > events.MaxIDLen ||
		!utf8.ValidString(c.ID) || strings.ContainsRune(c.ID, 0) || c.At.IsZero() {
		return requestCursor{}, ErrBadCursor
	}
	return c, nil
}

// Unattributed returns the waiting results matching f, by when they were sent (then id),
// limit at a time; after is the NextCursor of the previous page. The cursor stays valid while
// results arrive and leave.
func (db *DB) Unattributed(ctx context.Context, f UnattributedFilter, limit int, after string) (UnattributedPage, error) {
	args := []any{ipHoldSlack.String()}
	var where []string
	add := func(cond string, v ...any) {
		n := len(args)
		args = append(args, v...)
		idx := make([]any, len(v))
		for i := range v {
			idx[i] = n + i + 1
		}
		where = append(where, fmt.Sprintf(cond, idx...))
	}
	if f.Cluster != "" {
		add("u.cluster = $%d", f.Cluster)
	}
	if f.Source != "" {
		add("e.source = $%d", f.Source)
	}
	if after != "" {
		c, err := decodeRequestCursor(after)
		if err != nil {
			return UnattributedPage{}, err
		}
		add("(u.occurred_at, u.event_id) > ($%d, $%d)", c.At, c.ID)
	}
	q := `SELECT u.event_id, u.cluster, e.source, u.occurred_at, ` + waitColumns + `
		FROM unattributed_requests u JOIN events e ON e.id = u.event_id`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, limit+1)
	q += fmt.Sprintf(` ORDER BY u.occurred_at, u.event_id LIMIT $%d`, len(args))
	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return UnattributedPage{}, fmt.Errorf("list unattributed requests: %w", err)
	}
	page := UnattributedPage{Requests: []UnattributedRequest{}}
	var r UnattributedRequest
	more := false
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.Cluster, &r.Source, &r.OccurredAt, &r.IP, &r.IPSeenFrom, &r.ClustersWithIP}, func() error {
		if len(page.Requests) == limit {
			more = true // the row past the page
			return nil
		}
		u := r
		u.OccurredAt = u.OccurredAt.UTC()
		u.explain(u.Cluster, u.OccurredAt)
		page.Requests = append(page.Requests, u)
		return nil
	})
	if err != nil {
		return UnattributedPage{}, fmt.Errorf("list unattributed requests: %w", err)
	}
	if more {
		last := page.Requests[len(page.Requests)-1]
		page.NextCursor = encodeToken(requestCursor{At: last.OccurredAt, ID: last.ID})
	}
	return page, nil
}

// explain fills Reason (and normalises the times and the cluster list) for a result of
// cluster sent at at.
func (w *WaitReason) explain(cluster string, at time.Time) {
	if w.IPSeenFrom != nil {
		t := w.IPSeenFrom.UTC()
		w.IPSeenFrom = &t
	}
	if w.ClustersWithIP == nil {
		w.ClustersWithIP = []string{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "no pod held %s in cluster %q at %s", w.IP, cluster, at.Format(time.RFC3339Nano))
	if w.IPSeenFrom != nil {
		fmt.Fprintf(&b, " (a pod there was first seen with it at %s)", w.IPSeenFrom.Format(time.RFC3339Nano))
	}
	switch len(w.ClustersWithIP) {
	case 0:
		b.WriteString("; no other cluster had a pod with this IP then")
	case 1:
		fmt.Fprintf(&b, "; in cluster %q a pod did", w.ClustersWithIP[0])
	default:
		fmt.Fprintf(&b, "; in clusters %s pods did", quoteAll(w.ClustersWithIP))
	}
	w.Reason = b.String()
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
