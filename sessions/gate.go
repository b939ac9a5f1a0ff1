package sessions

import "sync"

// queryGate is a session's one-query-at-a-time gate. Unlike a mutex it is
// tried, not waited for — a second query is refused at once — except
// while the running query's turn is being interrupted, when the next one
// waits for it to end (see Session.Query).
type queryGate struct {
	mu      sync.Mutex
	busy    bool
	winding bool          // the holder's turn is being interrupted
	freed   chan struct{} // closed when the holder releases the gate
}

// tryAcquire takes the gate if it is free.
func (g *queryGate) tryAcquire() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy {
		return false
	}
	g.busy, g.winding, g.freed = true, false, make(chan struct{})
	return true
}

// windDown notes that the holder's turn is being interrupted: it ends soon.
func (g *queryGate) windDown() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.winding = g.busy
}

// windingDown reports whether the gate is held by a query whose turn is
// being interrupted.
func (g *queryGate) windingDown() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.busy && g.winding
}

// release frees the gate and wakes those waiting for it.
func (g *queryGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy, g.winding = false, false
	close(g.freed)
}

// released is closed when the current holder releases the gate (at once
// when it is free).
func (g *queryGate) released() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.busy {
		c := make(chan struct{})
		close(c)
		return c
	}
	return g.freed
}
