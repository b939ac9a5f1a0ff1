package sessions

import (
	"strings"
	"sync"
	"testing"
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
// runs at once; idle comes quietAfter the last work ended; work that starts
// again calls busy again, and work that starts before the idle call is due
// calls neither.
func TestBusyThenIdle(t *testing.T) {
	c := &calls{ch: make(chan struct{}, 8)}
	q := newQuiet(c.add("idle"), c.add("busy"))
	q.after = 100 * time.Millisecond
	wait := func(want string) {
		t.Helper()
		select {
		case <-c.ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no call after %q", c)
		}
		if got := c.String(); got != want {
			t.Fatalf("calls %q, want %q", got, want)
		}
	}
	q.Begin()
	wait("busy")
	q.Begin() // a second piece of work at once: no call
	q.End()
	q.End()
	wait("busy idle")
	q.Begin()
	wait("busy idle busy")
	q.End()
	q.Begin() // before the idle call is due: the server never went idle
	time.Sleep(3 * q.after)
	q.End()
	wait("busy idle busy idle")
	if n := len(c.ch); n != 0 {
		t.Fatalf("%d calls more than %q", n, c)
	}
}

// TestZeroValue: a zero quietTimer calls nothing and counts work all the same.
func TestZeroValue(t *testing.T) {
	var q quietTimer
	q.Begin()
	q.End()
	q.Stop()
}
