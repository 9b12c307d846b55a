// Package clock holds the waits on the wall clock that a context can cut short, shared by the
// processes and the lab.
package clock

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, and reports whether it waited the whole of d: false when ctx
// ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Until calls ok every interval until it returns true, and reports whether it did before d
// passed: false when d passed first. It calls ok at least once.
func Until(d, every time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every)
	}
	return true
}
