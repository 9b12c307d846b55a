package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/clock"
)

func TestSleep(t *testing.T) {
	if !clock.Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep with a live context = false, want true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if clock.Sleep(ctx, time.Hour) {
		t.Error("Sleep with an ended context = true, want false")
	}
}

func TestUntil(t *testing.T) {
	calls := 0
	if !clock.Until(time.Minute, time.Millisecond, func() bool { calls++; return calls == 3 }) {
		t.Error("Until of a condition that comes to hold = false, want true")
	}
	if calls != 3 {
		t.Errorf("ok called %d times, want 3 (until it held)", calls)
	}
	if clock.Until(0, time.Millisecond, func() bool { return false }) {
		t.Error("Until of a condition that never holds = true, want false")
	}
}
