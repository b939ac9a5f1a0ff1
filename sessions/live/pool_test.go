package live

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

const waitLimit = 30 * time.Second

var (
	errFull   = errors.New("too many sessions")
	errClosed = errors.New("server is shutting down")
)

func newPool(max, maxQueue int) *Pool {
	return NewPool(PoolConfig{Max: max, MaxQueue: maxQueue, ErrFull: errFull, ErrClosed: errClosed})
}

// holder is a fake holder: idle since a time, or busy; evicted, it gives
// its place back.
type holder struct {
	pool  *Pool
	owner string

	mu      sync.Mutex
	idle    bool
	since   time.Time
	evicted []string // the reasons
}

func (h *holder) Owner() string { return h.owner }

func (h *holder) IdleSince() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since, h.idle
}

func (h *holder) Evict(reason string) bool {
	h.mu.Lock()
	if !h.idle {
		h.mu.Unlock()
		return false
	}
	h.idle = false
	h.evicted = append(h.evicted, reason)
	h.mu.Unlock()
	h.pool.Release(h)
	return true
}

func (h *holder) setIdle(since time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.idle, h.since = true, since
}

func (h *holder) evictions() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.evicted...)
}

// acquire runs Acquire in the background, sending each queued position to
// the returned channel and the result to the other.
func acquire(ctx context.Context, p *Pool, h Holder) (<-chan int, <-chan error) {
	pos, done := make(chan int, 8), make(chan error, 1)
	go func() { done <- p.Acquire(ctx, h, func(n int) { pos <- n }) }()
	return pos, done
}

func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

// TestPoolPlaces: at most Max places; TryAcquire never evicts nor jumps
// the queue; Handover moves a place; a refusal without waiting wraps
// ErrFull and says why.
func TestPoolPlaces(t *testing.T) {
	t.Parallel()
	p := newPool(2, 4)
	a, b, c, d := &holder{pool: p}, &holder{pool: p}, &holder{pool: p}, &holder{pool: p}
	if !p.TryAcquire(a) || !p.TryAcquire(b) {
		t.Fatal("TryAcquire refused a free place")
	}
	if p.TryAcquire(c) || p.Count() != 2 {
		t.Fatalf("TryAcquire beyond Max: count %d", p.Count())
	}
	err := p.AcquireNow(c)
	const want = "too many sessions: all 2 live claude processes (--max-live) are busy; retry when one is free, or close a session"
	if !errors.Is(err, errFull) || err.Error() != want {
		t.Errorf("Acquire with every holder busy: %v, want %q", err, want)
	}
	if err := p.AcquireNow(a); err != nil {
		t.Errorf("Acquire by a holder that has a place: %v", err)
	}
	p.Handover(b, d)
	p.Release(b) // b has no place any more
	if p.Count() != 2 || p.TryAcquire(c) {
		t.Errorf("after the handover: count %d", p.Count())
	}
	p.Release(d)
	if !p.TryAcquire(c) || p.Count() != 2 {
		t.Errorf("the handed-over place was not freed by its new holder: count %d", p.Count())
	}
}

// TestPoolEvictsLRU: a holder beyond Max makes the least recently used
// idle holder give its place up; a holder that turns busy meanwhile is
// asked three times at most before the acquire gives up.
func TestPoolEvictsLRU(t *testing.T) {
	t.Parallel()
	p := newPool(3, 4)
	old, recent, busy, next := &holder{pool: p}, &holder{pool: p}, &holder{pool: p}, &holder{pool: p}
	for _, h := range []*holder{old, recent, busy} {
		p.TryAcquire(h)
	}
	t0 := time.Now()
	recent.setIdle(t0.Add(time.Second))
	old.setIdle(t0)
	if err := p.AcquireNow(next); err != nil {
		t.Fatalf("Acquire with idle holders: %v", err)
	}
	if ev := old.evictions(); len(ev) != 1 || ev[0] != "max-live reached" {
		t.Errorf("the least recently used holder's evictions: %q", ev)
	}
	if ev := recent.evictions(); len(ev) != 0 {
		t.Errorf("the more recent holder was evicted: %q", ev)
	}

	// A victim that refuses (it became busy between the look and the
	// eviction): three tries, then the refusal.
	p2 := newPool(1, 4)
	liar := &liarHolder{}
	p2.TryAcquire(liar)
	if err := p2.AcquireNow(&holder{pool: p2}); !errors.Is(err, errFull) {
		t.Errorf("Acquire when the idle holder will not go: %v", err)
	}
	if n := liar.tries(); n != 3 {
		t.Errorf("the refusing holder was asked %d times, want 3", n)
	}
}

// liarHolder says it is idle but refuses every eviction.
type liarHolder struct {
	mu sync.Mutex
	n  int
}

func (h *liarHolder) IdleSince() (time.Time, bool) { return time.Time{}, true }

func (h *liarHolder) Owner() string { return "" }

func (h *liarHolder) Evict(string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	return false
}

func (h *liarHolder) tries() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// TestPoolQueue: waiting holders queue in FIFO order up to MaxQueue and
// learn their position; a full queue refuses, saying why; a freed place
// goes to the first; a cancelled waiter leaves the queue; Idle wakes the
// first to evict the holder that went idle; Close refuses every waiter.
func TestPoolQueue(t *testing.T) {
	t.Parallel()
	p := newPool(1, 2)
	a, b, c, d := &holder{pool: p}, &holder{pool: p}, &holder{pool: p}, &holder{pool: p}
	p.TryAcquire(a)
	bPos, bDone := acquire(context.Background(), p, b)
	if n := receive(t, "b's position", bPos); n != 1 {
		t.Fatalf("b queued at %d", n)
	}
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cPos, cDone := acquire(cctx, p, c)
	if n := receive(t, "c's position", cPos); n != 2 {
		t.Fatalf("c queued at %d", n)
	}
	if p.Queued() != 2 || p.TryAcquire(d) {
		t.Errorf("queued %d; TryAcquire jumped the queue", p.Queued())
	}
	err := p.Acquire(context.Background(), d, nil)
	const want = "too many sessions: all 1 live claude processes (--max-live) are busy and 2 queries already wait for one (--max-queue); retry later"
	if !errors.Is(err, errFull) || err.Error() != want {
		t.Errorf("Acquire beyond a full queue: %v, want %q", err, want)
	}

	p.Release(a)
	if err := receive(t, "b's place", bDone); err != nil {
		t.Fatalf("b: %v", err)
	}
	if n := receive(t, "c's new position", cPos); n != 1 {
		t.Errorf("c moved to %d, want 1", n)
	}
	cancel()
	if err := receive(t, "c's end", cDone); !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled waiter: %v", err)
	}
	if p.Queued() != 0 {
		t.Errorf("queued %d after the cancel", p.Queued())
	}

	// b holds the place; d waits until b goes idle.
	dPos, dDone := acquire(context.Background(), p, d)
	receive(t, "d's position", dPos)
	b.setIdle(time.Now())
	p.Idle()
	if err := receive(t, "d's place", dDone); err != nil {
		t.Fatalf("d: %v", err)
	}
	if ev := b.evictions(); len(ev) != 1 {
		t.Errorf("b was not evicted for d: %q", ev)
	}

	aPos, aDone := acquire(context.Background(), p, a)
	receive(t, "a's position", aPos)
	p.Close()
	if err := receive(t, "a's end", aDone); err != errClosed {
		t.Errorf("a waiter at Close: %v", err)
	}
	p.Release(d)
	if p.TryAcquire(a) {
		t.Error("TryAcquire after Close")
	}
	if err := p.AcquireNow(a); err != errClosed {
		t.Errorf("Acquire after Close: %v", err)
	}
}

// TestPoolUserMax: an owner's holders get at most UserMax places at a
// time, counted when a place is given (under the pool's lock: starts that
// race cannot pass it together, defect 16 of issue 43): the owner's least
// recently used idle holder gives way, or the acquire is refused when all
// are busy; other owners are not held up; a handover to a full owner is
// refused.
func TestPoolUserMax(t *testing.T) {
	t.Parallel()
	p := NewPool(PoolConfig{Max: 3, MaxQueue: 4, UserMax: 1, ErrFull: errFull, ErrClosed: errClosed})
	alice1, alice2 := &holder{pool: p, owner: "alice"}, &holder{pool: p, owner: "alice"}
	bob := &holder{pool: p, owner: "bob"}
	// Many of alice's starts at once: one place.
	var wg sync.WaitGroup
	got := make(chan Holder, 8)
	for _, h := range []*holder{alice1, alice2, {pool: p, owner: "alice"}, {pool: p, owner: "alice"}} {
		wg.Go(func() {
			if p.AcquireNow(h) == nil {
				got <- h
			}
		})
	}
	wg.Wait()
	close(got)
	var won []Holder
	for h := range got {
		won = append(won, h)
	}
	if len(won) != 1 {
		t.Fatalf("%d of alice's concurrent starts got a place, want 1", len(won))
	}
	first := won[0].(*holder)
	other := alice1
	if first == alice1 {
		other = alice2
	}
	err := p.AcquireNow(other)
	if !errors.Is(err, errFull) || !strings.Contains(err.Error(), "--user-max-live") {
		t.Errorf("alice's second start while her first is busy: %v", err)
	}
	if err := p.AcquireNow(bob); err != nil {
		t.Errorf("bob is held up by alice's cap: %v", err)
	}
	// Idle, alice's first gives way to her second.
	first.setIdle(time.Now())
	if err := p.AcquireNow(other); err != nil {
		t.Fatalf("alice's second start with her first idle: %v", err)
	}
	if ev := first.evictions(); len(ev) != 1 || ev[0] != "user-max-live reached" {
		t.Errorf("alice's first was evicted for %v", ev)
	}
	// A handover (a spare taken) to a full owner is refused.
	spare := &holder{pool: p}
	if !p.TryAcquire(spare) {
		t.Fatal("no free place for the spare")
	}
	if p.Handover(spare, &holder{pool: p, owner: "alice"}) {
		t.Error("a spare was handed to alice at her cap")
	}
	if !p.Handover(spare, &holder{pool: p, owner: "carol"}) {
		t.Error("a spare was not handed to carol")
	}
}
