package httpserve

import (
	"fmt"
	"testing"
	"time"
)

// TestAuthLimiter: a line per host per second; the next says how many
// were not logged.
func TestAuthLimiter(t *testing.T) {
	var l authLimiter
	t0 := time.Unix(1000, 0)
	for _, step := range []struct {
		host   string
		at     time.Duration
		ok     bool
		missed int
	}{
		{"a", 0, true, 0},
		{"a", 100 * time.Millisecond, false, 0},
		{"b", 100 * time.Millisecond, true, 0},
		{"a", 900 * time.Millisecond, false, 0},
		{"a", time.Second, true, 2},
		{"a", 3 * time.Second, true, 0},
	} {
		if ok, missed := l.allow(step.host, t0.Add(step.at)); ok != step.ok || missed != step.missed {
			t.Errorf("%s at %v: %v, %d; want %v, %d", step.host, step.at, ok, missed, step.ok, step.missed)
		}
	}
	for i := range 10000 {
		l.allow(fmt.Sprintf("h%d", i), t0.Add(time.Minute+time.Duration(i)*time.Millisecond))
	}
	if len(l.by) > 4096+1 {
		t.Errorf("%d hosts remembered", len(l.by))
	}
}
