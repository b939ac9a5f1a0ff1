package sessions

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// holder is what holds a live claude process: a session or a warm spare.
// The pool knows holders only through these methods.
type holder interface {
	// idleSince reports whether the holder could give its process up now,
	// and since when it is idle (the least recently used goes first).
	idleSince() (time.Time, bool)
	// evict gives the process up; false when the holder became busy
	// meanwhile. It returns once the process is gone, and must not be
	// called with the pool's lock held (the holder releases its place).
	evict(reason string) bool
}

// livePool accounts for live processes: at most max at a time. A holder
// that needs a process beyond that makes the least recently used idle
// holder give its process up, or waits in a FIFO queue (at most maxQueue
// long) for one to become free.
type livePool struct {
	max, maxQueue int

	mu      sync.Mutex
	live    map[holder]bool
	queue   []holder
	changed chan struct{} // closed and replaced when a place may have come free
	closed  bool
}

func newLivePool(max, maxQueue int) *livePool {
	return &livePool{max: max, maxQueue: maxQueue, live: map[holder]bool{}, changed: make(chan struct{})}
}

// acquire gives h a place. With wait false it fails at once when every
// live process is busy; otherwise it queues, calling queued with h's
// position (1 is next) whenever that changes, until a place is free, ctx
// ends or the pool closes.
func (p *livePool) acquire(ctx context.Context, h holder, wait bool, queued func(pos int)) error {
	defer p.dequeue(h)
	lastPos, failed := 0, 0
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return ErrShuttingDown
		}
		if p.live[h] {
			p.mu.Unlock()
			return nil
		}
		pos := p.positionLocked(h)
		if len(p.live) < p.max && pos <= 1 {
			p.live[h] = true
			p.mu.Unlock()
			return nil
		}
		var victim holder
		if pos <= 1 && failed < 3 {
			victim = p.victimLocked()
		}
		changed := p.changed
		p.mu.Unlock()
		if victim != nil {
			if !victim.evict("max-live reached") {
				failed++ // it became busy meanwhile: look again, a few times
			}
			continue
		}
		failed = 0
		if !wait {
			return fmt.Errorf("%w: all %d live claude processes (--max-live) are busy; retry when one is free, or close a session", ErrTooMany, p.max)
		}
		if pos == 0 {
			if pos = p.enqueue(h); pos == 0 {
				return fmt.Errorf("%w: all %d live claude processes (--max-live) are busy and %d queries already wait for one (--max-queue); retry later", ErrTooMany, p.max, p.maxQueue)
			}
			continue
		}
		if pos != lastPos && queued != nil {
			queued(pos)
		}
		lastPos = pos
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// positionLocked is h's place in the queue (1 is next), 0 when it is not
// queued.
func (p *livePool) positionLocked(h holder) int {
	for i, q := range p.queue {
		if q == h {
			return i + 1
		}
	}
	return 0
}

// victimLocked is the holder to give its process up: idle, and the least
// recently used.
func (p *livePool) victimLocked() holder {
	var victim holder
	var oldest time.Time
	for v := range p.live {
		since, idle := v.idleSince()
		if idle && (victim == nil || since.Before(oldest)) {
			victim, oldest = v, since
		}
	}
	return victim
}

// enqueue adds h at the end of the queue and returns its position, or 0
// when the queue is full.
func (p *livePool) enqueue(h holder) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) >= p.maxQueue {
		return 0
	}
	p.queue = append(p.queue, h)
	return len(p.queue)
}

func (p *livePool) dequeue(h holder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, q := range p.queue {
		if q == h {
			p.queue = append(p.queue[:i], p.queue[i+1:]...)
			p.signalLocked() // the positions behind changed
			return
		}
	}
}

// tryAcquire gives h a free place, if there is one and nobody waits for
// it; it never makes another holder give its place up.
func (p *livePool) tryAcquire(h holder) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.queue) > 0 || len(p.live) >= p.max {
		return false
	}
	p.live[h] = true
	return true
}

// handover gives from's place to to.
func (p *livePool) handover(from, to holder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live[from] {
		delete(p.live, from)
		p.live[to] = true
	}
}

// release frees h's place.
func (p *livePool) release(h holder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live[h] {
		delete(p.live, h)
		p.signalLocked()
	}
}

// idle tells waiters that a holder went idle: they may make it give its
// process up.
func (p *livePool) idle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) > 0 {
		p.signalLocked()
	}
}

func (p *livePool) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// close refuses every later acquire and wakes the waiters.
func (p *livePool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.signalLocked()
}

// count is how many processes are live.
func (p *livePool) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.live)
}

// queued is how many holders wait.
func (p *livePool) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// makeRoomFor keeps a user within --user-max-live: when s's owner has that
// many live sessions, the least recently used idle one goes dormant; when
// none is idle, s cannot start.
func (m *Manager) makeRoomFor(s *Session) error {
	owner, limit := s.opts.Owner, m.cfg.UserMaxLive
	if owner == "" || limit <= 0 {
		return nil
	}
	for range limit + 1 {
		var live int
		var victim *Session
		var oldest time.Time
		for _, o := range m.List() {
			if o == s || o.opts.Owner != owner {
				continue
			}
			since, idle := o.idleSince()
			o.mu.Lock()
			isLive := o.proc != nil
			o.mu.Unlock()
			if !isLive {
				continue
			}
			live++
			if idle && (victim == nil || since.Before(oldest)) {
				victim, oldest = o, since
			}
		}
		if live < limit {
			return nil
		}
		if victim == nil {
			return fmt.Errorf("%w: user %s has %d live sessions, all busy, and this server allows a user %d (--user-max-live); wait for one to finish", ErrTooMany, owner, live, limit)
		}
		victim.makeDormant("user-max-live reached")
	}
	return fmt.Errorf("%w: user %s is at --user-max-live %d", ErrTooMany, owner, limit)
}
