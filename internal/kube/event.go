package kube

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	eventsv1 "k8s.io/api/events/v1"

	"github.com/schedlens/schedlens/internal/events"
)

var (
	// The scheduler's Scheduled note: "Successfully assigned ai-lab/day20-control-1 to gpu-node-1".
	// KAI-Scheduler writes "Successfully assigned pod ai-lab/p to node gpu-node-1 at node-pool default".
	scheduledRE = regexp.MustCompile(`^Successfully assigned (?:pod )?\S+/\S+ to (?:node )?(\S+)(?: at node-pool \S+)?$`)
	// The scheduler's Preempted note on the victim: "Preempted by pod <uid> on node gpu-node-3".
	preemptedRE = regexp.MustCompile(`^Preempted by pod \S+ on node (\S+)$`)
)

// EventCount is the series count of an events.k8s.io/v1 Event: series.count when series is set,
// else deprecatedCount, else 1. Every increase is one more occurrence of the same event.
func EventCount(ev *eventsv1.Event) int {
	switch {
	case ev.Series != nil && ev.Series.Count > 0:
		return int(ev.Series.Count)
	case ev.DeprecatedCount > 0:
		return int(ev.DeprecatedCount)
	default:
		return 1
	}
}

// EventEnvelope converts an Event to a k8s_event envelope for its current count: id
// "k8s_event/<event uid>/<count>", occurred_at the time of that occurrence (see eventTime), pod
// the regarding Pod, node the regarding Node or the node named by a Scheduled or Preempted note,
// data.scheduling the parsed note of a FailedScheduling event. It returns ok=false for events
// that are neither about a Pod nor a Node.
func EventEnvelope(ev *eventsv1.Event, m Meta) (env *events.Envelope, ok bool, err error) {
	var pod *events.PodRef
	var node string
	switch ev.Regarding.Kind {
	case "Pod":
		pod = &events.PodRef{Namespace: ev.Regarding.Namespace, Name: ev.Regarding.Name, UID: string(ev.Regarding.UID)}
		node = nodeFromNote(ev.Reason, ev.Note)
	case "Node":
		node = ev.Regarding.Name
	default:
		return nil, false, nil
	}
	count := EventCount(ev)
	data := events.K8sEvent{
		Reason:              ev.Reason,
		Type:                ev.Type,
		Note:                ev.Note,
		ReportingController: ev.ReportingController,
		Action:              ev.Action,
		EventUID:            string(ev.UID),
		Count:               count,
	}
	if data.ReportingController == "" {
		data.ReportingController = ev.DeprecatedSource.Component
	}
	if r := ev.Related; r != nil && r.Kind == "Pod" && r.Name != "" {
		data.Related = &events.PodRef{Namespace: r.Namespace, Name: r.Name, UID: string(r.UID)}
	}
	switch ev.Reason {
	case events.ReasonFailedScheduling:
		data.Scheduling = ParseFailedScheduling(ev.Note)
	case events.ReasonUnschedulable:
		data.Scheduling = ParseKAIUnschedulable(ev.Note)
	}
	id := joinID(string(events.KindK8sEvent), string(ev.UID), strconv.Itoa(count))
	env, err = envelope(events.KindK8sEvent, id, eventTime(ev, count), pod, node, nil, &data, m)
	if err != nil {
		return nil, true, fmt.Errorf("event %s/%s: %w", ev.Namespace, ev.Name, err)
	}
	return env, true, nil
}

// eventTime is when the occurrence with the given count happened: series.lastObservedTime for a
// repeat (count > 1), else eventTime, else the deprecated core/v1 timestamps (events written
// through core/v1 by older clients), else the object's creation; to the microsecond.
func eventTime(ev *eventsv1.Event, count int) time.Time {
	switch {
	case count > 1 && ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return micro(ev.Series.LastObservedTime.Time)
	case !ev.EventTime.IsZero():
		return micro(ev.EventTime.Time)
	case !ev.DeprecatedLastTimestamp.IsZero():
		return micro(ev.DeprecatedLastTimestamp.Time)
	case !ev.DeprecatedFirstTimestamp.IsZero():
		return micro(ev.DeprecatedFirstTimestamp.Time)
	default:
		return micro(ev.CreationTimestamp.Time)
	}
}

// nodeFromNote is the node a pod event names: where a Scheduled pod was bound, or where a
// Preempted victim ran.
func nodeFromNote(reason, note string) string {
	var re *regexp.Regexp
	switch reason {
	case events.ReasonScheduled:
		re = scheduledRE
	case events.ReasonPreempted:
		re = preemptedRE
	default:
		return ""
	}
	if m := re.FindStringSubmatch(note); m != nil {
		return m[1]
	}
	return ""
}
