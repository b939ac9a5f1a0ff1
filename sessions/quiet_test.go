package sessions

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/quiet"
)

// TestOnIdle: Config.OnIdle runs once a second after the last query ended,
// never while one runs, and once per quiet spell.
func TestOnIdle(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	fired := make(chan struct{}, 4)
	m := newManager(t, Config{OnIdle: func() {
		calls.Add(1)
		fired <- struct{}{}
	}})
	s := create(t, m, CreateOptions{})
	query(t, s, "hi", QueryOptions{})
	// The next query starts at once and streams for 2 s, longer than the
	// quiet spell: the call armed by the first one's end must not fire
	// while it runs.
	start := time.Now()
	if r := query(t, s, "SLOW4", QueryOptions{}); r.IsError {
		t.Fatalf("query: %+v", r)
	}
	if d := time.Since(start); d < quiet.After+quiet.After/2 {
		t.Fatalf("the slow query took only %s: it proves nothing", d)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("OnIdle ran %d time(s) while a query ran", n)
	}
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("OnIdle did not run after the last query ended")
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("OnIdle ran %d times for one quiet spell", n)
	}
}
