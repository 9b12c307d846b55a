// Package background runs the lab's long-lived parts (the API server, the scheduler, the
// simulated kubelet, …) in goroutines and keeps the errors they stop with.
package background

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Group is a set of running parts; its zero value is ready to use.
type Group struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

// Go runs f in a goroutine, keeping the error it returns under name; a cancelled context is
// how parts stop, not an error.
func (g *Group) Go(name string, f func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := f(); err != nil && !errors.Is(err, context.Canceled) {
			g.mu.Lock()
			g.errs = append(g.errs, fmt.Errorf("%s: %w", name, err))
			g.mu.Unlock()
		}
	}()
}

// Err returns what made a part stop early, if anything did.
func (g *Group) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.errs...)
}

// Wait waits until every part has returned.
func (g *Group) Wait() { g.wg.Wait() }
