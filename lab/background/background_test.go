package background_test

import (
	"context"
	"errors"
	"testing"

	"github.com/schedlens/schedlens/lab/background"
)

func TestGroup(t *testing.T) {
	var g background.Group
	boom := errors.New("boom")
	g.Go("stopped", func() error { return context.Canceled })
	g.Go("fine", func() error { return nil })
	g.Go("broken", func() error { return boom })
	g.Wait()
	err := g.Err()
	if !errors.Is(err, boom) || err.Error() != "broken: boom" {
		t.Errorf("Err() = %v, want only broken: boom", err)
	}
}
