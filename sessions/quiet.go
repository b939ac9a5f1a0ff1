package sessions

import (
	"sync"
	"time"
)

// quietAfter is how long no work (a query, a create, a spare's start) must
// have run before Config.OnIdle is called.
const quietAfter = time.Second

// quiet calls fn once each time the manager has had no work running for
// quietAfter: the server is idle, and can give memory back (see
// Config.OnIdle).
type quiet struct {
	fn func()

	mu      sync.Mutex
	running int
	timer   *time.Timer
}

// begin notes work starting.
func (q *quiet) begin() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running++
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
}

// end notes work ending; the last one to end arms the call.
func (q *quiet) end() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running--
	if q.running == 0 && q.fn != nil {
		q.timer = time.AfterFunc(quietAfter, q.fire)
	}
}

func (q *quiet) fire() {
	q.mu.Lock()
	if q.running > 0 || q.timer == nil {
		q.mu.Unlock()
		return
	}
	q.timer = nil
	q.mu.Unlock()
	q.fn()
}

// stop disarms a pending call (at shutdown).
func (q *quiet) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
}
