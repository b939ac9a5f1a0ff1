// The quiet timer tells when the server turns busy and when it has been
// idle for a while: work starting after a quiet spell, and no work having
// run for quietAfter (the server can give memory back). It knows counts of
// running work and a timer, nothing of what the work is.

package sessions

import (
	"sync"
	"time"
)

// quietAfter is how long no work must have run before the idle function is
// called.
const quietAfter = time.Second

// quietTimer calls idle once each time no work has run for quietAfter, and busy
// when work starts after such a call (or as the first work of all): the
// two calls alternate, busy first. The zero value calls nothing.
type quietTimer struct {
	idle, busy func() // nil: nothing is called
	after      time.Duration

	mu      sync.Mutex
	running int
	timer   *time.Timer
	working bool // busy was called last (or is being called)

	calls sync.Mutex // held while idle or busy runs: they never overlap or pass each other
}

// newQuiet returns a quietTimer that calls idle after a quiet spell and busy when
// work starts again (either may be nil).
func newQuiet(idle, busy func()) *quietTimer {
	return &quietTimer{idle: idle, busy: busy, after: quietAfter}
}

// Begin notes work starting; after a quiet spell it calls busy first.
func (q *quietTimer) Begin() {
	q.mu.Lock()
	q.running++
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	wake := !q.working
	q.working = true
	q.mu.Unlock()
	if wake && q.busy != nil {
		q.calls.Lock()
		defer q.calls.Unlock()
		q.busy()
	}
}

// End notes work ending; the last one to end arms the idle call.
func (q *quietTimer) End() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running--
	if q.running == 0 && (q.idle != nil || q.busy != nil) {
		q.timer = time.AfterFunc(q.after, q.fire)
	}
}

func (q *quietTimer) fire() {
	q.calls.Lock()
	defer q.calls.Unlock()
	q.mu.Lock()
	if q.running > 0 || q.timer == nil {
		q.mu.Unlock()
		return
	}
	q.timer, q.working = nil, false
	q.mu.Unlock()
	if q.idle != nil {
		q.idle()
	}
}

// Stop disarms a pending call (at shutdown).
func (q *quietTimer) Stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
}
