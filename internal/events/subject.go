package events

import (
	"fmt"
	"strings"
)

// SubjectPrefix is the root of every schedlens subject; StreamSubjects is what the stream holds.
const (
	SubjectPrefix  = "schedlens.v1"
	StreamSubjects = SubjectPrefix + ".>"
)

// Subject returns the NATS subject an envelope of kind from cluster is published on:
// schedlens.v1.<cluster>.<kind>.
func Subject(cluster string, kind Kind) string {
	return SubjectPrefix + "." + cluster + "." + string(kind)
}

// SubjectOf returns the subject env is published on.
func SubjectOf(env *Envelope) string { return Subject(env.Cluster, env.Kind) }

// ParseSubject splits a schedlens subject into its cluster and kind.
func ParseSubject(subject string) (cluster string, kind Kind, err error) {
	rest, ok := strings.CutPrefix(subject, SubjectPrefix+".")
	if !ok {
		return "", "", fmt.Errorf("subject %q is not under %s", subject, SubjectPrefix)
	}
	cluster, k, ok := strings.Cut(rest, ".")
	if !ok || cluster == "" || strings.Contains(k, ".") || !Kind(k).Valid() {
		return "", "", fmt.Errorf("subject %q is not %s.<cluster>.<kind>", subject, SubjectPrefix)
	}
	return cluster, Kind(k), nil
}

// CheckSubject verifies that an envelope arrived on the subject its cluster and kind name, so a
// message published under the wrong kind cannot be projected as another.
func CheckSubject(subject string, env *Envelope) error {
	cluster, kind, err := ParseSubject(subject)
	if err != nil {
		return &ValidationError{Reason: err.Error()}
	}
	switch {
	case cluster != env.Cluster:
		return invalid("cluster", "envelope is %s/%s but arrived on subject %q", env.Cluster, env.Kind, subject)
	case kind != env.Kind:
		return invalid("kind", "envelope is %s/%s but arrived on subject %q", env.Cluster, env.Kind, subject)
	}
	return nil
}

// validToken reports whether s can be one token of a NATS subject.
func validToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, ".*> \t\r\n")
}
