// A saveQueue writes one thing's state off its caller's path: writes
// queued with Later run in order on a goroutine of their own, those that
// wait meanwhile merged into one; Now waits for its own write and every
// one before it.

package sessions

import "sync"

// saveQueue orders the writes of one thing. The zero value is not usable: see
// newSaveQueue.
type saveQueue[T any] struct {
	write func(T)
	merge func(older, newer T) T

	mu      sync.Mutex
	pending bool
	next    T
	idle    chan struct{} // nil while no writer runs; closed when it stops
}

// newSaveQueue returns a queue that writes with write and merges two writes that
// wait with merge.
func newSaveQueue[T any](write func(T), merge func(older, newer T) T) *saveQueue[T] {
	return &saveQueue[T]{write: write, merge: merge}
}

// Later queues w and returns at once; the channel is closed once w is
// written.
func (q *saveQueue[T]) Later(w T) <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending {
		q.next = q.merge(q.next, w)
	} else {
		q.next, q.pending = w, true
	}
	if q.idle == nil {
		q.idle = make(chan struct{})
		go q.run()
	}
	return q.idle
}

// Now writes w after the writes queued before it, and returns once it is
// written.
func (q *saveQueue[T]) Now(w T) { <-q.Later(w) }

// Wait returns once the writes queued so far are written.
func (q *saveQueue[T]) Wait() {
	q.mu.Lock()
	idle := q.idle
	q.mu.Unlock()
	if idle != nil {
		<-idle
	}
}

func (q *saveQueue[T]) run() {
	for {
		q.mu.Lock()
		if !q.pending {
			close(q.idle)
			q.idle = nil
			q.mu.Unlock()
			return
		}
		w := q.next
		var zero T
		q.next, q.pending = zero, false
		q.mu.Unlock()
		q.write(w)
	}
}
