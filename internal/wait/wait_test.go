package wait_test

import (
	"context"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/wait"
)

func TestSleep(t *testing.T) {
	if !wait.Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep with a live context = false, want true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if wait.Sleep(ctx, time.Hour) {
		t.Error("Sleep with an ended context = true, want false")
	}
}
