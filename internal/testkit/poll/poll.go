// Package poll is the tests' one polling helper: for state that another
// goroutine (a timer, a pump, a process) changes with nothing to wait on.
// It is not for synchronisation that a channel or a result can give.
package poll

import (
	"testing"
	"time"
)

// every is how often a condition is looked at.
const every = 5 * time.Millisecond

// Until polls cond until it holds, or fails tb after d naming what it
// waited for.
func Until(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Within(d, cond) {
		tb.Fatalf("timed out after %s waiting for %s", d, what)
	}
}

// Within polls cond for at most d and reports whether it came to hold.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every)
	}
	return true
}
