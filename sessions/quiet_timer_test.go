package sessions

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// calls records the calls of a quietTimer in order.
type calls struct {
	mu  sync.Mutex
	got []string
	ch  chan struct{}
}

func (c *calls) add(what string) func() {
	return func() {
		c.mu.Lock()
		c.got = append(c.got, what)
		c.mu.Unlock()
		c.ch <- struct{}{}
	}
}

func (c *calls) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.got, " ")
}

// TestBusyThenIdle: the first work calls busy, once however much of it
// runs at once; idle comes quietAfter the last work ended, not a moment
// before; work that starts again calls busy again, and work that starts
// before the idle call is due (even just before) calls neither. The time is
// synctest's: the timer's quietAfter passes at once, and to the nanosecond.
func TestBusyThenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &calls{ch: make(chan struct{}, 8)}
		q := newQuiet(c.add("idle"), c.add("busy"))
		// after lets d pass and checks the calls made by then (the timer's
		// goroutine done).
		after := func(d time.Duration, want string) {
			t.Helper()
			time.Sleep(d)
			synctest.Wait()
			if got := c.String(); got != want {
				t.Fatalf("calls %q after another %s, want %q", got, d, want)
			}
		}
		q.Begin()
		after(0, "busy")
		q.Begin() // a second piece of work at once: no call
		q.End()
		after(0, "busy")
		q.End()
		after(quietAfter-time.Nanosecond, "busy")
		after(time.Nanosecond, "busy idle")
		q.Begin()
		after(0, "busy idle busy")
		q.End()
		q.Begin() // before the idle call is due: the server never went idle
		after(3*quietAfter, "busy idle busy")
		q.End()
		after(quietAfter-time.Nanosecond, "busy idle busy")
		q.Begin() // a nanosecond before it is due: still no call
		after(3*quietAfter, "busy idle busy")
		q.End()
		after(quietAfter-time.Nanosecond, "busy idle busy")
		after(time.Nanosecond, "busy idle busy idle")
		after(3*quietAfter, "busy idle busy idle")
		if n := len(c.ch); n != 4 {
			t.Fatalf("%d calls signalled, want the 4 of %q", n, c)
		}
	})
}

// TestZeroValue: a zero quietTimer calls nothing and counts work all the same.
func TestZeroValue(t *testing.T) {
	var q quietTimer
	q.Begin()
	q.End()
	q.Stop()
}
