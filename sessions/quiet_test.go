package sessions

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOnIdle: Config.OnIdle runs once a second after the last query ended,
// never while one runs, and once per quiet spell; Config.OnBusy runs when
// the first work begins and when work begins again after OnIdle, so that
// the two alternate.
func TestOnIdle(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls []string
	fired := make(chan struct{}, 4)
	record := func(what string) func() {
		return func() {
			mu.Lock()
			calls = append(calls, what)
			mu.Unlock()
			if what == "idle" {
				fired <- struct{}{}
			}
		}
	}
	seen := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(calls, " ")
	}
	m := newManager(t, Config{OnIdle: record("idle"), OnBusy: record("busy")})
	s := create(t, m, CreateOptions{})
	query(t, s, "hi", QueryOptions{})
	// The next query starts at once and streams for 2 s, longer than the
	// quiet spell: the call armed by the first one's end must not fire
	// while it runs.
	start := time.Now()
	if r := query(t, s, "SLOW4", QueryOptions{}); r.IsError {
		t.Fatalf("query: %+v", r)
	}
	if d := time.Since(start); d < quietAfter+quietAfter/2 {
		t.Fatalf("the slow query took only %s: it proves nothing", d)
	}
	if got := seen(); got != "busy" {
		t.Fatalf("calls %q while the work ran, want %q", got, "busy")
	}
	waitIdle := func(want string) {
		t.Helper()
		select {
		case <-fired:
		case <-time.After(10 * time.Second):
			t.Fatal("OnIdle did not run after the last query ended")
		}
		if got := seen(); got != want {
			t.Errorf("calls %q, want %q", got, want)
		}
	}
	waitIdle("busy idle")
	query(t, s, "hi", QueryOptions{})
	waitIdle("busy idle busy idle")
}
