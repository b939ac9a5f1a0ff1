// Package live owns the live claude processes of a server: the pool that
// keeps at most --max-live of them (the least recently used idle holder
// gives its process up, a query beyond that waits in a FIFO queue) and the
// warm spares, processes started ahead for the option sets most likely
// next (spares.go).
//
// It knows nothing about sessions, MCP or the store: the pool sees its
// holders through [Holder] (a session or a spare), and the spares are
// given what they need from their manager — which option sets a spare can
// serve and the process options they start, how to start a process — in
// [SparesConfig]. Package sessions builds on it; it never imports
// sessions.
package live

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Holder is what holds a live claude process: a session or a warm spare.
// The pool knows holders only through these methods, and keeps them as
// map keys: a holder must be comparable, the same value for the same
// holder (a pointer, or a struct of one).
type Holder interface {
	// IdleSince reports whether the holder could give its process up now,
	// and since when it is idle (the least recently used goes first).
	IdleSince() (time.Time, bool)
	// Evict gives the process up; false when the holder became busy
	// meanwhile. It returns once the process is gone, and must not be
	// called with the pool's lock held (the holder releases its place).
	Evict(reason string) bool
	// Owner is the user the holder's process works for ("" for none: a
	// spare, a session without a user), whose live processes count
	// toward PoolConfig.UserMax.
	Owner() string
}

// PoolConfig sets a pool's limits and the errors it refuses with.
type PoolConfig struct {
	// Max is how many processes may be live at a time (--max-live).
	Max int
	// MaxQueue is how many holders may wait for a place (--max-queue).
	MaxQueue int
	// UserMax is how many processes one owner's holders may have live at
	// a time (--user-max-live; 0 no cap): checked when a place is given,
	// under the pool's lock, so that concurrent starts of one user's
	// sessions cannot pass it together.
	UserMax int
	// ErrFull is wrapped by the refusals when every place is busy (and,
	// for a waiting acquire, the queue is full).
	ErrFull error
	// ErrClosed is what an acquire returns once the pool is closed.
	ErrClosed error
}

// Pool accounts for live processes: at most Max at a time. A holder that
// needs a process beyond that makes the least recently used idle holder
// give its process up, or waits in a FIFO queue (at most MaxQueue long)
// for one to become free.
type Pool struct {
	cfg PoolConfig

	mu      sync.Mutex
	live    map[Holder]bool
	queue   []Holder
	changed chan struct{} // closed and replaced when a place may have come free
	closed  bool
}

// NewPool returns an empty pool.
func NewPool(cfg PoolConfig) *Pool {
	return &Pool{cfg: cfg, live: map[Holder]bool{}, changed: make(chan struct{})}
}

// Acquire gives h a place, queueing when every live process is busy:
// queued (nil: none) gets h's position (1 is next) whenever that changes,
// until a place is free, ctx ends or the pool closes.
func (p *Pool) Acquire(ctx context.Context, h Holder, queued func(pos int)) error {
	return p.acquire(ctx, h, waitInQueue, queued)
}

// AcquireNow gives h a place, or fails at once when every live process is
// busy (an idle holder is made to give its place up first, as for
// Acquire).
func (p *Pool) AcquireNow(h Holder) error {
	return p.acquire(context.Background(), h, failAtOnce, nil)
}

// acquireMode says what an acquire does when every place is busy.
type acquireMode uint8

const (
	failAtOnce acquireMode = iota
	waitInQueue
)

func (p *Pool) acquire(ctx context.Context, h Holder, mode acquireMode, queued func(pos int)) error {
	defer p.dequeue(h)
	lastPos, failed := 0, 0
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return p.cfg.ErrClosed
		}
		if p.live[h] {
			p.mu.Unlock()
			return nil
		}
		pos := p.positionLocked(h)
		if full, n, own := p.userFullLocked(h.Owner(), nil); full {
			// The owner's cap first: one of its idle holders gives way,
			// or the acquire is refused (it is not the pool's to wait for).
			p.mu.Unlock()
			if own != nil && failed < 3 {
				if !own.Evict("user-max-live reached") {
					failed++
				}
				continue
			}
			return fmt.Errorf("%w: user %s has %d live sessions, all busy, and this server allows a user %d (--user-max-live); wait for one to finish", p.cfg.ErrFull, h.Owner(), n, p.cfg.UserMax)
		}
		if len(p.live) < p.cfg.Max && pos <= 1 {
			p.live[h] = true
			p.mu.Unlock()
			return nil
		}
		var victim Holder
		if pos <= 1 && failed < 3 {
			victim = p.victimLocked()
		}
		changed := p.changed
		p.mu.Unlock()
		if victim != nil {
			if !victim.Evict("max-live reached") {
				failed++ // it became busy meanwhile: look again, a few times
			}
			continue
		}
		failed = 0
		if mode == failAtOnce {
			return fmt.Errorf("%w: all %d live claude processes (--max-live) are busy; retry when one is free, or close a session", p.cfg.ErrFull, p.cfg.Max)
		}
		if pos == 0 {
			if pos = p.enqueue(h); pos == 0 {
				return fmt.Errorf("%w: all %d live claude processes (--max-live) are busy and %d queries already wait for one (--max-queue); retry later", p.cfg.ErrFull, p.cfg.Max, p.cfg.MaxQueue)
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

// userFullLocked reports whether owner has UserMax live holders
// (not counting except), how many, and the least recently used idle one.
func (p *Pool) userFullLocked(owner string, except Holder) (full bool, n int, idle Holder) {
	if owner == "" || p.cfg.UserMax <= 0 {
		return false, 0, nil
	}
	var oldest time.Time
	for v := range p.live {
		if v == except || v.Owner() != owner {
			continue
		}
		n++
		if since, ok := v.IdleSince(); ok && (idle == nil || since.Before(oldest)) {
			idle, oldest = v, since
		}
	}
	return n >= p.cfg.UserMax, n, idle
}

// positionLocked is h's place in the queue (1 is next), 0 when it is not
// queued.
func (p *Pool) positionLocked(h Holder) int {
	for i, q := range p.queue {
		if q == h {
			return i + 1
		}
	}
	return 0
}

// victimLocked is the holder to give its process up: idle, and the least
// recently used.
func (p *Pool) victimLocked() Holder {
	var victim Holder
	var oldest time.Time
	for v := range p.live {
		since, idle := v.IdleSince()
		if idle && (victim == nil || since.Before(oldest)) {
			victim, oldest = v, since
		}
	}
	return victim
}

// enqueue adds h at the end of the queue and returns its position, or 0
// when the queue is full.
func (p *Pool) enqueue(h Holder) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) >= p.cfg.MaxQueue {
		return 0
	}
	p.queue = append(p.queue, h)
	return len(p.queue)
}

func (p *Pool) dequeue(h Holder) {
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

// TryAcquire gives h a free place, if there is one and nobody waits for
// it; it never makes another holder give its place up.
func (p *Pool) TryAcquire(h Holder) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.queue) > 0 || len(p.live) >= p.cfg.Max {
		return false
	}
	p.live[h] = true
	return true
}

// Handover gives from's place to to, unless to's owner has its UserMax
// live already (false: nothing changed).
func (p *Pool) Handover(from, to Holder) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.live[from] {
		return true
	}
	if full, _, _ := p.userFullLocked(to.Owner(), from); full {
		return false
	}
	delete(p.live, from)
	p.live[to] = true
	return true
}

// Release frees h's place.
func (p *Pool) Release(h Holder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live[h] {
		delete(p.live, h)
		p.signalLocked()
	}
}

// Idle tells waiters that a holder went idle: they may make it give its
// process up.
func (p *Pool) Idle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) > 0 {
		p.signalLocked()
	}
}

func (p *Pool) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Close refuses every later acquire and wakes the waiters.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.signalLocked()
}

// Count is how many processes are live.
func (p *Pool) Count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.live)
}

// Queued is how many holders wait.
func (p *Pool) Queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}
