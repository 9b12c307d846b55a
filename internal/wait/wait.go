// Package wait holds the wait on the wall clock that a context can cut short, shared by the
// processes and the lab.
package wait

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
