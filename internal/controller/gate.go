package controller

import (
	"context"
	"sync"
)

// gate holds the Service reconcilers back while the controller must not
// allocate: until the startup barrier has registered every assignment, and
// while no pool exists (an empty configuration must never clear an
// address). It can open and close any number of times.
type gate struct {
	mu     sync.Mutex
	opened chan struct{} // closed while the gate is open
	open   bool
}

func newGate() *gate { return &gate{opened: make(chan struct{})} }

func (g *gate) openGate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		close(g.opened)
		g.open = true
	}
}

func (g *gate) closeGate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		g.opened = make(chan struct{})
		g.open = false
	}
}

func (g *gate) isOpen() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

// wait returns once the gate is open, or with ctx's error.
func (g *gate) wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.opened
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
