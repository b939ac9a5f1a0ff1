// Package quiet calls a function once each time no work has run for a
// while: the server is idle, and can give memory back. It knows counts of
// running work and a timer, nothing of what the work is.
package quiet

import (
	"sync"
	"time"
)

// After is how long no work must have run before the function is called.
const After = time.Second

// Quiet calls fn once each time no work has run for After. The zero value
// with fn nil calls nothing.
type Quiet struct {
	fn func() // nil: nothing is called

	mu      sync.Mutex
	running int
	timer   *time.Timer
}

// New returns a Quiet that calls fn (nil: nothing).
func New(fn func()) *Quiet { return &Quiet{fn: fn} }

// Begin notes work starting.
func (q *Quiet) Begin() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running++
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
}

// End notes work ending; the last one to end arms the call.
func (q *Quiet) End() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running--
	if q.running == 0 && q.fn != nil {
		q.timer = time.AfterFunc(After, q.fire)
	}
}

func (q *Quiet) fire() {
	q.mu.Lock()
	if q.running > 0 || q.timer == nil {
		q.mu.Unlock()
		return
	}
	q.timer = nil
	q.mu.Unlock()
	q.fn()
}

// Stop disarms a pending call (at shutdown).
func (q *Quiet) Stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
}
