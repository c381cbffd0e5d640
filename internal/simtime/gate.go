package simtime

import (
	"context"
	"sync"
)

// Gate holds a component's next piece of work until the rest of the
// cluster has settled, and lets one piece through at a time: the
// component then sees each moment whole, and what it decides does not
// depend on how far the machine had got with the rest. The scheduler
// takes each pod through one: it places a pod only on nodes that are as
// the moment left them (registered, Ready, their GPUs advertised), and
// places the pods in its queue's order, one settled cluster at a time.
//
// A gate holds work only while a Driver steps the clock: before (a
// rehearsal's cluster starting, its device plugin's pods to place) and
// after, it lets everything through.
type Gate struct {
	name string
	// pending reports whether the component has work for the gate.
	pending func() bool

	mu      sync.Mutex
	waiting bool
	pass    chan struct{}
	// free is closed while no Driver holds the gate.
	free chan struct{}
}

// Gate registers a gate for the component named name, whose pending says
// whether it has work waiting.
func (a *Activity) Gate(name string, pending func() bool) *Gate {
	g := &Gate{name: name, pending: pending, pass: make(chan struct{}), free: make(chan struct{})}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.holding {
		close(g.free)
	}
	a.gates = append(a.gates, g)
	return g
}

// Wait blocks the component until its Driver lets one piece of work
// through, or ctx ends (false).
func (g *Gate) Wait(ctx context.Context) bool {
	g.mu.Lock()
	g.waiting = true
	free := g.free
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.waiting = false
		g.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return false
	case <-g.pass:
		return true
	case <-free:
		return true
	}
}

// hold has the gate hold work for a Driver, or (false) let it through.
func (g *Gate) hold(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.free:
		if on {
			g.free = make(chan struct{})
		}
	default:
		if !on {
			close(g.free)
		}
	}
}

// open lets one piece of work through if the component waits at the
// gate with work pending, and reports whether it did; busy reports a
// component with work pending that is not at the gate (at work on an
// earlier piece).
func (g *Gate) open() (opened, busy bool) {
	if !g.pending() {
		return false, false
	}
	g.mu.Lock()
	waiting := g.waiting
	g.mu.Unlock()
	if !waiting {
		return false, true
	}
	select {
	case g.pass <- struct{}{}:
		return true, false
	default:
		return false, true
	}
}
